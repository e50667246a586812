"""The Ray engine on a real local Ray cluster (``ray.init``): the local engine's contract,
live signals and messages in the notebook process, registered operations and tools travelling, clear errors
for what cannot travel, the fake CLI agent on workers, cancellation."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time

import pytest
from ray import cloudpickle

from lion_nb import Branch, iModel
from lion_nb.flow import Flow
from lion_nb.flow.errors import DependencyFailed, EngineUnavailable, NotTransferable
from lion_nb.flow.node import Status
from lion_nb.models.cli_process import group_alive
from lion_nb.session.session import Session
from lion_nb.signals import MessageAdded, RunEnd, RunStart
from lion_nb.viewmodels.flow import FlowViewModel
from tests.support.fake_cli import make_fake_cli, recording
from tests.support.scripted import scripted
from tests.support.waiting import until

# Test functions travel by value, as a notebook's do (its cells are __main__); a test module
# is imported under a name the workers cannot import.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

pytestmark = pytest.mark.usefixtures("ray_local")


def echo_count(request) -> str:
    return f"seen {len(request.messages)}: {request.messages[-1]['content']}"


async def test_dependency_order_and_forks_on_ray():
    b = Branch(system="Talk about tides.", chat_model=scripted(default_reply=echo_count))
    added: list = []
    flow = Flow()
    flow.session.observe(MessageAdded, handler=added.append)
    outline = flow.add("communicate", instruction="Outline", branch=b)
    intro = flow.add("communicate", instruction="Intro", depends_on=[outline])
    results = await flow.run(engine="ray")

    assert results == {outline.id: "seen 2: Outline", intro.id: "seen 4: Intro"}
    assert [m.text for m in b.messages] == ["Talk about tides.", "Outline", "seen 2: Outline"]
    assert [m.text for m in intro.branch.messages][-2:] == ["Intro", "seen 4: Intro"]
    # each new message landed once, with its id, in order, on the notebook's branches
    assert [s.message.id for s in added] == [
        *[m.id for m in b.messages][1:], *[m.id for m in intro.branch.messages][3:],
    ]  # fmt: skip
    worker = outline.metadata["ray"]["attempts"]
    assert len(worker) == 1 and worker[0]["pid"] != os.getpid()
    assert outline.usage.output_tokens is not None and outline.duration_ms > 0


async def test_signals_arrive_live_in_the_notebook_process():
    chunks = [f"w{i} " for i in range(8)]
    b = Branch(chat_model=scripted({"chunks": chunks, "delay": 0.15}))
    seen: list[tuple[str, float, object]] = []
    b.observe(handler=lambda s: seen.append((type(s).__name__, time.monotonic(), s)))
    flow = Flow()
    node = flow.add("communicate", instruction="stream it", branch=b)
    view = FlowViewModel(flow)
    view.select(node)
    watched: list[tuple[str, str]] = []  # (row status, reply text shown) at each change
    view.on_change = lambda _: watched.append(
        (view.snapshot().rows[0].status, "".join(t for _, t in view.transcript()[1]))
    )
    view.attach()
    await flow.run(engine="ray")
    done = time.monotonic()
    view.detach()
    # FlowView's model saw the node running on Ray with its reply growing, then completed
    growing = [text for status, text in watched if status == "running" and text]
    assert len(growing) >= 4 and growing[0] != growing[-1]
    assert watched[-1][0] == "completed"

    names = [n for n, _, _ in seen]
    assert names[0] == "RunStart" and names[-1] == "RunEnd"
    assert names[-4:-1] == ["MessageAdded", "MessageAdded", "CallEnd"]  # then RunEnd
    deltas = [s for n, _, s in seen if n == "StreamDelta"]
    assert [d.delta for d in deltas] == chunks
    assert deltas[-1].snapshot == "".join(chunks)  # re-accumulated in the notebook
    first_delta_at = next(t for n, t, _ in seen if n == "StreamDelta")
    assert done - first_delta_at > 0.6  # the first words came while the rest was still coming
    response = b.messages[-1]
    assert deltas[0].message_id == response.id and response.text == "".join(chunks)
    assert node.status is Status.COMPLETED


async def test_failure_skips_dependents_and_the_error_travels_back_as_itself():
    session = Session()

    async def explode(branch, why: str) -> str:
        raise ValueError(why)

    session.register_operation("explode", explode)
    ok = session.new_branch(chat_model=scripted(default_reply="fine"))
    flow = Flow(session)
    bad = flow.add("explode", branch=session.new_branch(), why="bad row")
    child = flow.add("communicate", instruction="x", depends_on=[bad])
    other = flow.add("communicate", instruction="y", branch=ok)
    await flow.run(engine="ray")
    assert bad.status is Status.FAILED and type(bad.error) is ValueError
    assert str(bad.error) == "bad row"
    assert child.status is Status.SKIPPED and isinstance(child.error, DependencyFailed)
    assert other.status is Status.COMPLETED and other.response == "fine"


async def test_registered_operations_and_tools_travel():
    session = Session()

    def shout(text: str) -> str:
        """Shout the text."""
        return text.upper() + "!"

    async def shout_twice(branch, text: str) -> dict:
        result = await branch.act({"function": "shout", "arguments": {"text": text}})
        return {"pid": os.getpid(), "out": result}

    session.register_operation("shout_twice", shout_twice)
    b = session.new_branch(tools=[shout])
    flow = Flow(session)
    node = flow.add("shout_twice", branch=b, text="tide")
    await flow.run(engine="ray")
    assert node.status is Status.COMPLETED, node.error
    assert node.response["pid"] != os.getpid()
    assert "TIDE!" in repr(node.response["out"])
    # act records the request and the response: both landed on the notebook's branch
    assert [m.role for m in b.messages] == ["action_request", "action_response"]


async def test_the_worker_holds_no_key_and_reads_its_own_environment():
    session = Session()

    async def inspect_model(branch) -> dict:
        state = cloudpickle.dumps(vars(branch.chat_model))
        return {"secret_on_worker": b"sk-NOTEBOOK-SECRET" in state,
                "env_key": os.environ.get("OPENAI_API_KEY")}  # fmt: skip

    session.register_operation("inspect_model", inspect_model)
    model = iModel(provider="openai", model="gpt-4.1-mini", api_key="sk-NOTEBOOK-SECRET")
    flow = Flow(session)
    node = flow.add("inspect_model", branch=session.new_branch(chat_model=model))
    worker_env = {"OPENAI_API_KEY": "sk-worker-own"}
    await flow.run(engine="ray", ray_options={"runtime_env": {"env_vars": worker_env}})
    assert node.status is Status.COMPLETED, node.error
    assert node.response == {"secret_on_worker": False, "env_key": "sk-worker-own"}


async def test_what_cannot_travel_fails_the_node_clearly_and_loses_nothing():
    b = Branch(system="s", chat_model=scripted(default_reply="never sent"))
    flow = Flow()
    node = flow.add("communicate", instruction="x", branch=b, lock=threading.Lock())
    after = flow.add("communicate", instruction="y", depends_on=[node])
    await flow.run(engine="ray")
    assert node.status is Status.FAILED and isinstance(node.error, NotTransferable)
    assert "parameter 'lock' cannot be sent to a Ray worker" in str(node.error)
    assert after.status is Status.SKIPPED and len(b.messages) == 1


async def test_a_response_that_cannot_travel_back_says_so():
    session = Session()

    async def make_lock(branch) -> object:
        return threading.Lock()

    session.register_operation("make_lock", make_lock)
    flow = Flow(session)
    node = flow.add("make_lock", branch=session.new_branch())
    await flow.run(engine="ray")
    assert node.status is Status.FAILED and isinstance(node.error, NotTransferable)
    assert "cannot travel back" in str(node.error)


async def test_max_concurrent_bounds_the_nodes_running_on_workers():
    session = Session()

    async def hold(branch, i: int) -> tuple[float, float]:
        start = time.time()
        await asyncio.sleep(0.3)
        return start, time.time()

    session.register_operation("hold", hold)
    flow = Flow(session)
    nodes = [flow.add("hold", branch=session.new_branch(), i=i) for i in range(5)]
    # 4 task slots at 0.5 CPU each: only the flow's bound keeps it at 2
    await flow.run(engine="ray", max_concurrent=2, ray_options={"num_cpus": 0.5})
    spans = [n.response for n in nodes]
    peak = max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)
    assert all(n.status is Status.COMPLETED for n in nodes)
    assert 1 <= peak <= 2


async def test_map_on_ray_keeps_input_order():
    session = Session()
    template = session.new_branch(chat_model=scripted(default_reply=echo_count))
    rows = [{"instruction": f"row {i}"} for i in range(6)]
    outs = await session.map("communicate", rows, template=template, engine="ray")
    assert outs == [f"seen 1: row {i}" for i in range(6)]
    assert len(template.messages) == 0


async def test_fake_cli_agent_runs_on_a_worker(tmp_path):
    fake = make_fake_cli(tmp_path)
    env = fake.env(recording("claude/text_partial"))
    # env= is never shipped (it may hold secrets): the worker gets it through Ray's runtime_env
    agent = Branch(chat_model=iModel(provider="claude_code", cli_path=str(fake.path), env=env))
    flow = Flow()
    node = flow.add("run_and_collect", instruction="Say hello", branch=agent)
    await flow.run(engine="ray", ray_options={"runtime_env": {"env_vars": env}})
    assert node.status is Status.COMPLETED, node.error
    assert node.response == "Hello! How can I help you today?"
    assert [m.role for m in agent.messages] == ["user", "assistant"]
    assert fake.record()["pid"] != os.getpid()


async def test_a_message_lands_on_the_notebooks_branch_while_the_node_runs():
    session = Session()

    async def note_then_wait(branch, text: str) -> str:
        from lion_nb.messages import Instruction

        branch.add_message(Instruction(instruction=text))
        await asyncio.sleep(1.0)
        return "done"

    session.register_operation("note_then_wait", note_then_wait)
    b = session.new_branch(system="s")
    added: list = []
    b.observe(MessageAdded, handler=added.append)
    flow = Flow(session)
    node = flow.add("note_then_wait", branch=b, text="noted")
    task = asyncio.create_task(flow.run(engine="ray"))
    await until(lambda: len(b.messages) == 2 or task.done(), 60, "the live message")
    assert not task.done() and node.status is Status.RUNNING  # it landed while running
    assert b.messages[1].text == "noted"
    await task
    assert node.status is Status.COMPLETED and node.response == "done"
    assert [m.text for m in b.messages] == ["s", "noted"]  # once: the record agreed
    assert [s.message.id for s in added] == [b.messages[1].id]


async def test_a_cli_agents_tool_cards_land_before_the_node_finishes(tmp_path):
    fake = make_fake_cli(tmp_path)
    env = fake.env(recording("claude/tool_read"), delay=0.3)  # one stdout line per 0.3 s
    agent = Branch(chat_model=iModel(provider="claude_code", cli_path=str(fake.path), env=env))
    seen: list[str] = []  # signal names, and each landed message's role
    agent.observe(handler=lambda s: seen.append(
        s.message.role if isinstance(s, MessageAdded) else type(s).__name__))  # fmt: skip
    flow = Flow()
    node = flow.add("run_and_collect", instruction="Read hello.txt", branch=agent)
    await flow.run(engine="ray", ray_options={"runtime_env": {"env_vars": env}})
    assert node.status is Status.COMPLETED, node.error
    roles = [m.role for m in agent.messages]
    assert roles[:3] == ["user", "assistant", "action_request"] and "action_response" in roles
    assert [n for n in seen if n in roles] == roles  # each landed once, in order
    # live: the tool card landed while the agent was still writing its last reply
    last_delta = max(i for i, n in enumerate(seen) if n == "StreamDelta")
    assert seen.index("action_request") < last_delta
    assert seen[-1] == "RunEnd" and seen.count("RunEnd") == 1  # after every message


async def test_cancelling_a_ray_flow_ends_the_workers_cli_process_group(tmp_path):
    fake = make_fake_cli(tmp_path)
    env = fake.env(recording("claude/text_partial"), mode="hang", lines=2)
    agent = Branch(chat_model=iModel(provider="claude_code", cli_path=str(fake.path)))
    starts: list = []
    agent.observe(RunStart, RunEnd, handler=starts.append)
    flow = Flow()
    node = flow.add("run_and_collect", instruction="go", branch=agent)
    task = asyncio.create_task(
        flow.run(engine="ray", ray_options={"runtime_env": {"env_vars": env}})
    )
    deadline = time.monotonic() + 60
    while not fake.record_path.exists():
        assert time.monotonic() < deadline, "the fake CLI never started on the worker"
        await asyncio.sleep(0.05)
    pgid = fake.record()["pgid"]
    await until(lambda: len(agent.messages) == 1, 30, "the instruction, live")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not group_alive(pgid)
    assert node.status is Status.STOPPED and node.error is None  # a stop, not a failure
    # what the cancelled attempt recorded before it stopped stays, as on the local engine
    assert [(m.role, m.text) for m in agent.messages] == [("user", "go")]


async def test_engine_ray_without_ray_names_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if lion_nb[ray] were not installed
    flow = Flow()
    node = flow.add("communicate", instruction="x", branch=Branch(chat_model=scripted("x")))
    with pytest.raises(EngineUnavailable, match=r"pip install 'lion_nb\[ray\]'"):
        await flow.run(engine="ray")
    assert node.status is Status.PENDING
