"""The local engine: dependency order, forks, skips, the concurrency bound, cancellation."""

from __future__ import annotations

import asyncio
import time

import pytest

from lion_nb import Branch, iModel
from lion_nb.flow import Flow
from lion_nb.flow.errors import DependencyFailed, FlowError
from lion_nb.flow.node import Status
from lion_nb.models.cli_process import group_alive
from lion_nb.session.session import Session
from lion_nb.signals import RunEnd, RunStart, StreamDelta
from tests.support.fake_cli import make_fake_cli, recording
from tests.support.scripted import scripted
from tests.support.waiting import until


def echo_count(request) -> str:
    """A reply naming how many messages the model saw and the last instruction."""
    return f"seen {len(request.messages)}: {request.messages[-1]['content']}"


async def test_dependent_runs_after_and_continues_the_dependencys_conversation():
    b = Branch(system="Talk about tides.", chat_model=scripted(default_reply=echo_count))
    flow = Flow()
    outline = flow.add("communicate", instruction="Outline", branch=b)
    intro = flow.add("communicate", instruction="Intro", depends_on=[outline])
    results = await flow.run()

    assert results == {outline.id: "seen 2: Outline", intro.id: "seen 4: Intro"}
    assert outline.branch is b and intro.branch is not b
    # the fork was taken after outline finished: it holds outline's exchange, then its own
    assert [m.text for m in intro.branch.messages] == [
        "Talk about tides.", "Outline", "seen 2: Outline", "Intro", "seen 4: Intro",
    ]  # fmt: skip
    assert len(b.messages) == 3  # the dependency's branch is not changed by the dependent
    assert intro.branch.metadata["forked_from"]["branch_id"] == str(b.id)
    assert intro.started_at >= outline.ended_at
    assert flow.session is b.session and intro.branch.session is flow.session


async def test_node_without_dependency_or_branch_gets_a_new_branch_of_the_session(monkeypatch):
    monkeypatch.setenv("LION_NB_MODEL", "scripted")
    session = Session()
    flow = Flow(session)
    node = flow.add("chat", instruction="hi")
    await flow.run()
    # "scripted" from the environment has no replies: the node fails, on a session branch
    assert node.status is Status.FAILED and "no reply left" in str(node.error)
    assert node.branch is not None and node.branch.id in session.branches


async def test_session_observe_sees_every_nodes_signals():
    session = Session()
    template = session.new_branch(chat_model=scripted(default_reply="ok"))
    starts: list = []
    session.observe(RunStart, handler=starts.append)
    flow = Flow(session)
    first = flow.add("communicate", instruction="a", branch=template)
    flow.add("communicate", instruction="b", depends_on=[first])
    flow.add("communicate", instruction="c", depends_on=[first])
    await flow.run()
    branches = {n.branch.id for n in flow}
    assert len(branches) == 3 and {s.branch_id for s in starts} == branches


async def test_failed_node_skips_its_dependents_and_independent_nodes_go_on():
    session = Session()
    b = session.new_branch(chat_model=scripted(default_reply="fine"))

    async def explode(branch, why: str) -> str:
        raise RuntimeError(why)

    session.register_operation("explode", explode)
    flow = Flow(session)
    bad = flow.add("explode", branch=b, why="boom")
    child = flow.add("communicate", instruction="never", depends_on=[bad])
    grandchild = flow.add("communicate", instruction="never either", depends_on=[child])
    independent = flow.add("communicate", instruction="still runs", branch=session.new_branch(
        chat_model=scripted(default_reply="fine")))  # fmt: skip
    results = await flow.run()

    assert bad.status is Status.FAILED and str(bad.error) == "boom"
    assert child.status is Status.SKIPPED and isinstance(child.error, DependencyFailed)
    assert child.error.dependency is bad and grandchild.status is Status.SKIPPED
    assert grandchild.error.dependency is child
    assert independent.status is Status.COMPLETED and results[independent.id] == "fine"
    assert results[bad.id] is None and results[child.id] is None
    assert child.branch is None  # never ran anywhere


async def test_raise_errors_raises_only_after_every_node_settled():
    session = Session()

    async def explode(branch) -> str:
        raise ValueError("bad row")

    async def slow(branch) -> str:
        await asyncio.sleep(0.05)
        return "slow done"

    session.register_operation("explode", explode)
    session.register_operation("slow", slow)
    flow = Flow(session)
    bad = flow.add("explode", branch=session.new_branch())
    other = flow.add("slow", branch=session.new_branch())
    with pytest.raises(FlowError, match="1 node\\(s\\) failed: explode \\(ValueError: bad row\\)"):
        await flow.run(raise_errors=True)
    assert other.status is Status.COMPLETED and other.response == "slow done"
    assert bad.status is Status.FAILED


@pytest.mark.parametrize("bound", [1, 3])
async def test_max_concurrent_is_a_hard_bound(bound):
    session = Session()
    running = 0
    peak = 0

    async def work(branch, i: int) -> int:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01)
        running -= 1
        return i

    session.register_operation("work", work)
    flow = Flow(session)
    nodes = [flow.add("work", branch=session.new_branch(), i=i) for i in range(12)]
    results = await flow.run(max_concurrent=bound)
    assert peak == bound  # reached, never exceeded
    assert [results[n.id] for n in nodes] == list(range(12))


async def test_nodes_on_one_branch_run_one_at_a_time_in_order():
    b = Branch(chat_model=scripted(default_reply=echo_count, delay=0.005))
    flow = Flow()
    for i in range(4):
        flow.add("communicate", instruction=f"q{i}", branch=b)
    await flow.run(max_concurrent=4)
    assert [m.text for m in b.messages] == [
        "q0", "seen 1: q0", "q1", "seen 3: q1", "q2", "seen 5: q2", "q3", "seen 7: q3",
    ]  # fmt: skip


async def test_second_run_continues_with_new_nodes_only():
    b = Branch(chat_model=scripted(default_reply=echo_count))
    flow = Flow()
    first = flow.add("communicate", instruction="one", branch=b)
    await flow.run()
    second = flow.add("communicate", instruction="two", depends_on=[first])
    await flow.run()
    assert first.response == "seen 1: one" and second.response == "seen 3: two"
    assert len(b.messages) == 2  # first did not run again


async def test_node_timings_and_usage_come_from_its_own_run():
    b = Branch(chat_model=scripted(
        {"text": "a", "usage": {"input_tokens": 7, "output_tokens": 3, "total_cost_usd": 0.01}},
        {"text": "b", "usage": {"input_tokens": 100, "output_tokens": 100}},
    ))  # fmt: skip
    flow = Flow()
    node = flow.add("communicate", instruction="x", branch=b)
    await flow.run()
    await b.communicate("not part of the flow")  # a later run must not count for the node
    assert (node.usage.input_tokens, node.usage.output_tokens) == (7, 3)
    assert node.usage.total_cost_usd == pytest.approx(0.01)
    assert node.duration_ms is not None and node.duration_ms >= 0
    assert node.started_at <= node.ended_at


async def test_chat_node_usage_is_counted_without_a_run_lifecycle():
    b = Branch(chat_model=scripted({"text": "a", "usage": {"input_tokens": 5, "output_tokens": 2}}))
    ends: list = []
    b.observe(RunEnd, handler=ends.append)
    flow = Flow()
    node = flow.add("chat", instruction="x", branch=b)
    await flow.run()
    assert not ends and (node.usage.input_tokens, node.usage.output_tokens) == (5, 2)


async def test_react_stream_is_drained():
    def lookup(city: str) -> str:
        """Look up a city."""
        return f"{city}: sunny"

    replies = [
        {"json": {"analysis": "look it up", "planned_actions": [], "extension_needed": False}},
        {"json": {"answer": "It is sunny."}},
    ]
    b = Branch(chat_model=scripted(*replies), tools=[lookup])
    flow = Flow()
    node = flow.add("ReActStream", instruction="Weather?", branch=b)
    await flow.run()
    assert node.status is Status.COMPLETED, node.error
    assert isinstance(node.response, list) and node.response


async def test_cancelling_run_cancels_nodes_and_ends_cli_process_groups(tmp_path):
    fake = make_fake_cli(tmp_path)
    env = fake.env(recording("claude/text_partial"), mode="hang", lines=2)
    agent = Branch(chat_model=iModel(provider="claude_code", cli_path=str(fake.path), env=env))
    flow = Flow()
    running = flow.add("run_and_collect", instruction="go", branch=agent)
    after = flow.add("communicate", instruction="later", depends_on=[running])
    task = asyncio.create_task(flow.run())
    deadline = time.monotonic() + 20
    while not fake.record_path.exists():  # the agent process has started and is hanging
        assert time.monotonic() < deadline, "the fake CLI never started"
        await asyncio.sleep(0.02)
    pgid = fake.record()["pgid"]
    assert group_alive(pgid)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not group_alive(pgid)  # gone by the time run() has returned
    assert running.status is Status.STOPPED and running.error is None
    assert after.status is Status.CANCELLED  # never started: a later run() may still run it


@pytest.mark.parametrize(
    ("kw", "error", "match"),
    [
        ({"max_concurrent": 0}, ValueError, "at least 1"),
        ({"max_concurrent": 2.5}, TypeError, "must be an int"),
        ({"engine": "spark"}, ValueError, "unknown engine 'spark'"),
    ],
)
async def test_bad_run_arguments_are_refused_before_anything_runs(kw, error, match):
    b = Branch(chat_model=scripted("x"))
    flow = Flow()
    node = flow.add("communicate", instruction="x", branch=b)
    with pytest.raises(error, match=match):
        await flow.run(**kw)
    assert node.status is Status.PENDING and len(b.messages) == 0


class Replies:
    """A scripted model's reply: slow (many chunks) until ``fast`` is set."""

    def __init__(self) -> None:
        self.fast = False

    def __call__(self, request) -> dict:
        if self.fast:
            return {"text": f"done: {request.messages[-1]['content']}"}
        return {"chunks": ["tok "] * 400, "delay": 0.01}


async def test_stopping_a_flow_keeps_what_running_nodes_streamed_and_cancels_the_rest():
    replies = Replies()
    session = Session()
    model = scripted(default_reply=replies)
    a = session.new_branch(chat_model=model, name="a")
    b = session.new_branch(chat_model=model, name="b")
    flow = Flow(session)
    first = flow.add("communicate", instruction="one", branch=a)
    quiet = flow.add("communicate", instruction="two", branch=b, on_stop="discard")
    waits = flow.add("communicate", instruction="three", depends_on=[first])
    queued = flow.add("communicate", instruction="four", branch=a)  # a's lock: after first
    deltas: list = []
    a.observe(StreamDelta, handler=deltas.append)
    task = asyncio.create_task(flow.run(max_concurrent=2))
    await until(lambda: len(deltas) >= 3 and quiet.status is Status.RUNNING, what="streaming")
    assert flow.cancel() is True
    with pytest.raises(asyncio.CancelledError):
        await task

    # running nodes: "stopped", not failed; no CancelledError kept as an error
    assert (first.status, quiet.status) == (Status.STOPPED, Status.STOPPED)
    assert first.error is None and quiet.error is None and first.duration_ms is not None
    # the flow gave communicate on_stop="record": the stopped turn stays; "discard" opts out
    assert [(m.role, m.metadata.get("stopped", False)) for m in a.messages] == [
        ("user", False),
        ("assistant", True),
    ]
    assert a.messages[1].text.startswith("tok tok tok")
    assert list(b.messages) == []
    # never started (waiting for a dependency, or for its branch): "cancelled"
    assert (waits.status, queued.status) == (Status.CANCELLED, Status.CANCELLED)
    assert waits.error is None and waits.started_at is None and queued.branch is None
    assert not any(n.status is Status.FAILED for n in flow)

    # a later run runs what was cancelled; a node after a stopped one is skipped
    replies.fast = True
    await flow.run()
    assert queued.status is Status.COMPLETED and queued.response == "done: four"
    assert waits.status is Status.SKIPPED and "which stopped" in str(waits.error)
    assert (first.status, quiet.status) == (Status.STOPPED, Status.STOPPED)


async def test_nodes_waiting_for_a_slot_when_the_flow_stops_are_cancelled():
    model = scripted(default_reply=Replies())
    flow = Flow()
    nodes = [flow.add("communicate", instruction=str(n), branch=Branch(chat_model=model)) for n in range(3)]  # fmt: skip
    task = asyncio.create_task(flow.run(max_concurrent=1))
    await until(lambda: nodes[0].status is Status.RUNNING, what="the first node running")
    assert flow.cancel() is True
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [n.status for n in nodes] == [Status.STOPPED, Status.CANCELLED, Status.CANCELLED]
    assert all(n.branch is None and n.error is None for n in nodes[1:])


async def test_forks_are_named_after_their_node():
    session = Session()
    template = session.new_branch(name="template", chat_model=scripted(default_reply=echo_count))
    flow = Flow(session)
    outline = flow.add("communicate", instruction="Outline a talk", branch=template.fork())
    named = flow.add(
        "communicate", instruction="Write section 2", depends_on=[outline], node_name="section 2"
    )
    unnamed = flow.add("communicate", instruction="Write section 3", depends_on=[outline])
    long = flow.add("communicate", instruction="Write " + "very " * 20, depends_on=[outline])
    await flow.run()
    assert outline.branch.name == "template (fork)"  # the branch it was given
    assert named.branch.name == "section 2"
    assert unnamed.branch.name == "Write section 3"  # its instruction, when it has no name
    assert long.branch.name.startswith("Write very") and len(long.branch.name) == 40
    assert not any("(fork) (fork)" in (n.branch.name or "") for n in flow)
    with pytest.raises(TypeError, match="node_name= takes a string"):
        flow.add("communicate", instruction="x", node_name=3)
