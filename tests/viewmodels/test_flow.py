"""``FlowViewModel``: FlowView's state, without ipywidgets."""

from __future__ import annotations

import asyncio

import pytest

from lion_nb import Branch
from lion_nb.flow import Flow
from lion_nb.session.session import Session
from lion_nb.viewmodels.flow import FlowViewModel
from tests.support.scripted import scripted
from tests.support.waiting import until


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


async def test_one_row_per_node_with_status_time_tokens_cost_and_dependencies():
    session = Session()

    async def explode(branch) -> str:
        raise RuntimeError("broken <row>")

    session.register_operation("explode", explode)
    b = session.new_branch(name="main", chat_model=scripted(
        {"text": "outline", "usage": {"input_tokens": 10, "output_tokens": 4, "total_cost_usd": 0.002}},
        {"text": "intro", "usage": {"input_tokens": 20, "output_tokens": 6, "total_cost_usd": 0.003}},
    ))  # fmt: skip
    flow = Flow(session, name="talk")
    outline = flow.add("communicate", instruction="Outline a talk\non tides", branch=b)
    flow.add("communicate", instruction="Write the introduction", depends_on=[outline])
    bad = flow.add("explode", branch=session.new_branch())
    flow.add("communicate", instruction="never", depends_on=[bad])
    model = FlowViewModel(flow)
    before = model.snapshot()
    assert [r.status for r in before.rows] == ["pending"] * 4 and before.cost_usd is None
    await flow.run()
    snap = model.snapshot()
    first, second, third, fourth = snap.rows
    assert (first.index, first.operation, first.label) == (
        1,
        "communicate",
        "Outline a talk on tides",
    )
    assert (first.input_tokens, first.output_tokens, first.cost_usd) == (10, 4, 0.002)
    assert first.branch == "main" and first.run_ms is not None and first.depends_on == ()
    assert second.depends_on == (1,) and second.status == "completed" and second.branch != "main"
    assert third.status == "failed" and third.error == "RuntimeError: broken <row>"
    assert fourth.status == "skipped" and fourth.depends_on == (3,) and "skipped" in fourth.error
    assert snap.counts == {
        "pending": 0,
        "running": 0,
        "completed": 2,
        "failed": 1,
        "stopped": 0,
        "cancelled": 0,
        "skipped": 1,
    }
    assert (snap.input_tokens, snap.output_tokens) == (30, 10)
    assert snap.cost_usd == pytest.approx(0.005) and snap.title == "talk"


async def test_running_rows_report_time_so_far_and_changes_are_announced():
    b = Branch(chat_model=scripted({"chunks": ["slow ", "reply"], "delay": 0.1}))
    flow = Flow()
    node = flow.add("communicate", instruction="x", branch=b)
    clock = Clock(0.0)
    model = FlowViewModel(flow, clock=clock)
    changes: list = []
    model.on_change = changes.append
    model.attach()
    model.select(node)
    task = asyncio.create_task(flow.run())
    await until(lambda: node.status.value == "running")
    clock.now = node.started_at + 1.5
    assert model.snapshot().rows[0].run_ms == pytest.approx(1500)
    await until(lambda: model.transcript()[1])  # the reply being written, not yet recorded
    messages, live = model.transcript()
    assert [m.text for m in messages] == [] and live[0][1].startswith("slow")
    await task
    messages, live = model.transcript()
    assert [m.text for m in messages] == ["x", "slow reply"] and live == []
    assert node.id in changes and model.snapshot().rows[0].run_ms == node.duration_ms
    model.detach()
    changes.clear()
    flow.notify(node)
    assert changes == []  # detached


def test_select_toggles_and_refuses_foreign_nodes():
    flow = Flow()
    node = flow.add("chat")
    model = FlowViewModel(flow)
    model.select(node)
    assert model.selected == node.id and model.selected_node() is node
    assert model.transcript() == ([], [])  # not run yet: no branch
    model.select(node.id)
    assert model.selected is None
    with pytest.raises(ValueError, match="not a node of this flow"):
        model.select(Flow().add("chat"))


async def test_a_retracted_message_leaves_the_selected_transcript_and_redraws():
    b = Branch(system="s", chat_model=scripted("a"))
    flow = Flow()
    node = flow.add("communicate", instruction="q", branch=b)
    await flow.run()
    model = FlowViewModel(flow)
    model.attach()
    model.select(node)
    changed: list = []
    model.on_change = changed.append
    gone = b.messages[1]
    b.retract_message(gone.id, reason="its attempt died")
    assert changed == [node.id]
    assert [m.text for m in model.transcript()[0]] == ["s", "a"]
    model.detach()


async def test_a_stopped_flow_reads_stopped_and_cancelled_never_failed_and_stop_applies_only_while_running():
    b = Branch(name="main", chat_model=scripted({"chunks": ["tok "] * 300, "delay": 0.01}))
    flow = Flow(name="talk")
    first = flow.add("communicate", instruction="Outline", branch=b)
    flow.add("communicate", instruction="Intro", depends_on=[first])
    flow.add("communicate", instruction="Outro", depends_on=[first])
    model = FlowViewModel(flow)
    assert model.stoppable is False  # not running
    task = asyncio.create_task(flow.run())
    await until(lambda: first.status.value == "running")
    assert model.stoppable is True
    flow.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    snap = model.snapshot()
    assert [r.status for r in snap.rows] == ["stopped", "cancelled", "cancelled"]
    assert [r.error for r in snap.rows] == [None, None, None]  # no "CancelledError:"
    assert {k: v for k, v in snap.counts.items() if v} == {"stopped": 1, "cancelled": 2}
    assert snap.stoppable is False and model.stoppable is False


def test_an_error_with_an_empty_message_reads_as_its_type_alone():
    from lion_nb.viewmodels.flow import error_text

    assert error_text(None) is None
    assert error_text(TimeoutError()) == "TimeoutError"
    assert error_text(RuntimeError("broken")) == "RuntimeError: broken"


async def test_rows_say_when_and_where_each_node_ran_and_what_it_is_called():
    b = Branch(name="main", chat_model=scripted(default_reply={"text": "ok", "delay": 0.05}))
    flow = Flow()
    first = flow.add("communicate", instruction="Outline", branch=b)
    second = flow.add("communicate", instruction="Write section 2", depends_on=[first], node_name="section 2")  # fmt: skip
    never = flow.add("communicate", instruction="never", depends_on=[first])
    model = FlowViewModel(flow)
    assert [r.start_ms for r in model.snapshot().rows] == [None, None, None]
    assert model.snapshot().span_ms == 0.0
    flow.add_edge(second, never)
    await flow.run()
    one, two, three = model.snapshot().rows
    assert one.start_ms == 0.0 and one.worker == "kernel" and one.title == "Outline"
    assert two.start_ms >= one.run_ms - 1 and two.name == "section 2" and two.title == "section 2"
    assert two.branch == "section 2"  # the fork named after its node
    assert three.start_ms >= two.start_ms + two.run_ms - 1
    snap = model.snapshot()
    assert snap.span_ms == pytest.approx(three.start_ms + three.run_ms)


async def test_only_the_open_nodes_stream_is_followed():
    """Rows show no text: the model follows the stream of the selected node's branch only, so
    on Ray the other nodes relay no per-token deltas (``Branch.streams_watched``)."""
    session = Session()
    a, b = (
        session.new_branch(chat_model=scripted({"chunks": ["x "] * 30, "delay": 0.02}))
        for _ in "ab"
    )
    flow = Flow(session)
    first = flow.add("communicate", instruction="one", branch=a)
    second = flow.add("communicate", instruction="two", branch=b)
    model = FlowViewModel(flow)
    model.attach()
    task = asyncio.create_task(flow.run())
    await until(lambda: first.status.value == second.status.value == "running")
    assert not a.streams_watched() and not b.streams_watched()  # rows only
    model.select(first)
    assert a.streams_watched() and not b.streams_watched()
    model.select(second)  # another node opened: its stream instead
    assert b.streams_watched() and not a.streams_watched()
    await until(lambda: model.transcript()[1])  # its reply so far, then live
    await task
    model.detach()
    assert not a.streams_watched() and not b.streams_watched()
