"""``FlowViewModel``: FlowView's state, without ipywidgets."""

from __future__ import annotations

import asyncio

import pytest
from flow.waiting import until
from helpers_core import scripted

from lion_nb import Branch
from lion_nb.flow import Flow
from lion_nb.flow.view_model import FlowViewModel
from lion_nb.session.session import Session


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
    assert snap.counts == {"pending": 0, "running": 0, "completed": 2, "failed": 1, "skipped": 1}
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
