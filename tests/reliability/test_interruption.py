"""R3: interrupting a CLI agent's run, in every way a notebook user can, loses nothing and
leaves nothing behind.

Each scenario drives ``Branch.run`` against the fake CLI (a real process whose group also holds
a grandchild, ``spawn_child``) that streams part of a reply and then hangs, interrupts it, and
checks the same three things:

- no orphan: no live (non-zombie) member of the agent's process group, grandchild included
  (PID 1 here does not reap zombies, so /proc is read; see ``group_alive``);
- exactly one terminal lifecycle signal (``RunEnd``/``RunFailed``) per ``RunStart``, with the
  same run id, and nothing for a run that never started;
- the text the agent streamed before the interruption is on ``branch.messages``, marked
  ``stopped``.

The kernel-level scenarios (a real ``KeyboardInterrupt`` via ``interrupt_kernel``, a ``%%lion``
cell re-executed while its run streams) are in ``tests/kernel/test_interrupt_kernel.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

import pytest
from models.cli_helpers import FakeCLI, make_fake_cli, process_alive, recording

from lion_nb import Branch, BranchView, iModel
from lion_nb.magics import lion
from lion_nb.messages import ActionRequest, AssistantResponse, Instruction
from lion_nb.models.cli_process import group_alive
from lion_nb.signals import RunEnd, RunFailed, RunStart, StreamDelta

pytestmark = pytest.mark.timeout(60)

# claude/text_partial streams "Hello! How can " (line 4), "I help you " (5), "today?" (6):
# hanging after 6 lines leaves the reply half said.
TEXT = "claude/text_partial"
TEXT_HANG = 6
PARTIAL = "Hello! How can I help you "
# claude/tool_two_partial: text, then two tool calls (lines 13 and 19), results from line 23.
TOOLS = "claude/tool_two_partial"
TOOLS_HANG = 21


class Lifecycle:
    """Every lifecycle signal of one branch, with the checks R3 needs."""

    def __init__(self, branch: Branch) -> None:
        self.signals: list = []
        branch.observe(RunStart, RunEnd, RunFailed, handler=self.signals.append)

    @property
    def terminals(self) -> list:
        return [s for s in self.signals if isinstance(s, RunEnd | RunFailed)]

    def assert_no_overlap(self) -> None:
        """No run started while another was active on the branch."""
        active: set = set()
        for s in self.signals:
            if isinstance(s, RunStart):
                assert not active, (
                    f"{s.operation} run started while {len(active)} other run(s) were active "
                    "on the same branch"
                )
                active.add(s.run_id)
            else:
                active.discard(s.run_id)

    def assert_paired(self, runs: int = 1) -> None:
        starts = [s.run_id for s in self.signals if isinstance(s, RunStart)]
        ends = [s.run_id for s in self.terminals]
        assert len(starts) == runs, self.signals
        assert sorted(map(str, ends)) == sorted(map(str, starts)), self.signals


def agent(fake: FakeCLI, name: str, lines: int, *, delay: float = 0.0) -> iModel:
    env = fake.env(recording(name), delay=delay, mode="hang,spawn_child", lines=lines)
    return iModel(provider="claude_code", cli_path=str(fake.path), env=env, terminate_grace=3.0)


async def wait_for_text(branch: Branch, chars: int = len(PARTIAL)) -> None:
    """Until ``chars`` characters of reply text have streamed (the agent then hangs)."""
    got = asyncio.Event()
    seen = [0]

    def on_delta(s: StreamDelta) -> None:
        if s.kind == "text":
            seen[0] += len(s.delta)
            if seen[0] >= chars:
                got.set()

    branch.observe(StreamDelta, handler=on_delta)
    await asyncio.wait_for(got.wait(), 15)


def start(view: BranchView, text: str) -> asyncio.Task | None:
    """``view.send(text)`` (what Send does); the task it started, or None if it started none."""
    before = view.task
    view.send(text)
    return view.task if view.task is not before else None


def assert_no_orphans(record: dict) -> None:
    assert not group_alive(record["pgid"]), f"process group {record['pgid']} still has members"
    for pid in record["children"]:
        assert not process_alive(pid), f"grandchild {pid} survived"


async def settled(record: dict | None, life: Lifecycle, within: float = 3.0) -> float:
    """Let the event loop finalise an abandoned generator: wait until the agent's group is
    gone and the run has its terminal signal. Returns the seconds it took."""
    started = time.monotonic()
    while (record is not None and group_alive(record["pgid"])) or not life.terminals:
        assert time.monotonic() - started < within, "the abandoned run was never finalised"
        await asyncio.sleep(0.01)
    return time.monotonic() - started


def assert_partial_recorded(branch: Branch, text: str = PARTIAL) -> AssistantResponse:
    last = branch.messages[-1]
    assert isinstance(last, AssistantResponse), [m.role for m in branch.messages]
    assert last.response == text
    assert last.metadata.get("stopped") is True
    return last


@pytest.fixture
def fake(tmp_path: Path) -> FakeCLI:
    return make_fake_cli(tmp_path)


async def test_stop_in_the_view_ends_the_agent_and_keeps_the_partial_reply(fake):
    branch = Branch(chat_model=agent(fake, TEXT, TEXT_HANG))
    life = Lifecycle(branch)
    view = BranchView(branch, verb="run")
    task = start(view, "say hello")
    await wait_for_text(branch)
    assert group_alive(fake.record()["pgid"])  # streaming, then hung: still running
    assert not view.stop_button.disabled
    started = time.monotonic()
    view.stop_button.click()  # what the browser's click does
    await task
    assert time.monotonic() - started < 2.5  # SIGTERM ended it, not the 3 s SIGKILL grace
    assert_no_orphans(fake.record())
    life.assert_paired()
    assert life.terminals[0].stopped is True
    last = assert_partial_recorded(branch)
    assert [m.role for m in branch.messages] == ["user", "assistant"]
    # the view shows the recorded, stopped reply and is ready for the next prompt
    assert "stopped" in view.status.value and PARTIAL.strip() in view.rendered_html()
    assert str(last.id) in view.rendered_html()
    assert not view.running and not view.send_button.disabled and view.stop_button.disabled
    view.close()


async def test_break_out_of_async_for_ends_the_agent(fake):
    """A plain ``break`` does not close an async generator: Python leaves it to the event
    loop's finaliser, which calls ``aclose()`` on the next loop iteration (in a notebook, as
    soon as the cell ends). The agent must be gone shortly after, with one stopped RunEnd."""
    branch = Branch(chat_model=agent(fake, TOOLS, TOOLS_HANG))
    life = Lifecycle(branch)
    seen = []
    async for message in branch.run("read hello.txt"):
        seen.append(message)
        if isinstance(message, ActionRequest):
            break
    await settled(fake.record(), life)
    assert_no_orphans(fake.record())
    life.assert_paired()
    assert life.terminals[0].stopped is True
    assert [m.role for m in seen] == ["user", "assistant", "action_request"]
    assert branch.messages[1].response == "I'll read the file and also print it with cat."
    assert list(branch.messages)[: len(seen)] == seen


async def test_break_inside_aclosing_ends_the_agent_before_the_loop_exits(fake):
    branch = Branch(chat_model=agent(fake, TOOLS, TOOLS_HANG))
    life = Lifecycle(branch)
    async with contextlib.aclosing(branch.run("read hello.txt")) as stream:
        async for message in stream:
            if isinstance(message, ActionRequest):
                break
    assert_no_orphans(fake.record())  # at once: aclose() returned only once the group was gone
    life.assert_paired()
    assert life.terminals[0].stopped is True


async def test_break_keeps_messages_already_received_with_the_one_yielded(fake):
    """The text before a tool call and the call arrive in one chunk: the assembler completes
    both at once. Breaking when the text is yielded must not drop the tool call the agent had
    already made (and, by then, was running): received means recorded."""
    branch = Branch(chat_model=agent(fake, TOOLS, TOOLS_HANG))
    life = Lifecycle(branch)
    async with contextlib.aclosing(branch.run("read hello.txt")) as stream:
        async for message in stream:
            if isinstance(message, AssistantResponse):
                break
    assert_no_orphans(fake.record())
    life.assert_paired()
    roles = [m.role for m in branch.messages]
    assert roles[:3] == ["user", "assistant", "action_request"], (
        f"the Read call that arrived with the text was lost on break: {roles}"
    )


async def test_aclose_before_iteration_starts_nothing(fake):
    branch = Branch(chat_model=agent(fake, TEXT, TEXT_HANG))
    life = Lifecycle(branch)
    stream = branch.run("never")
    await stream.aclose()
    assert life.signals == [] and len(branch.messages) == 0
    assert not fake.record_path.exists()  # no agent was started


async def test_break_on_the_instruction_never_starts_the_agent(fake):
    branch = Branch(chat_model=agent(fake, TEXT, TEXT_HANG))
    life = Lifecycle(branch)
    async for message in branch.run("one"):
        assert isinstance(message, Instruction)
        break
    await settled(None, life)  # the loop's finaliser closes the abandoned generator
    life.assert_paired()
    assert life.terminals[0].stopped is True
    assert [m.role for m in branch.messages] == ["user"]
    assert not fake.record_path.exists()


@pytest.mark.parametrize("how", ["cancel", "timeout"])
async def test_cancelling_the_consuming_task_ends_the_agent_and_keeps_the_text(fake, how):
    branch = Branch(chat_model=agent(fake, TEXT, TEXT_HANG))
    life = Lifecycle(branch)
    items = []

    async def consume():
        async for message in branch.run("say hello"):
            items.append(message)

    if how == "cancel":
        task = asyncio.create_task(consume())
        await wait_for_text(branch)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    else:  # asyncio.timeout() around the loop cancels it the same way
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(1.5):
                await consume()
    assert_no_orphans(fake.record())
    life.assert_paired()
    assert isinstance(life.terminals[0], RunEnd) and life.terminals[0].stopped
    assert_partial_recorded(branch)
    assert [type(m) for m in items] == [Instruction]  # the partial reply was never yielded


async def test_cancelling_while_the_consumer_is_in_its_loop_body(fake):
    """Cancelled in the consumer's own ``await`` between items (not inside the stream): the
    generator is suspended at a yield and is closed by ``aclose()`` in ``finally``."""
    branch = Branch(chat_model=agent(fake, TOOLS, TOOLS_HANG))
    life = Lifecycle(branch)
    in_body = asyncio.Event()

    async def consume():
        stream = branch.run("read")
        try:
            async for message in stream:
                if isinstance(message, ActionRequest):
                    in_body.set()
                    await asyncio.sleep(30)  # e.g. the user's code awaiting something
        finally:
            await stream.aclose()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(in_body.wait(), 15)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert_no_orphans(fake.record())
    life.assert_paired()
    assert life.terminals[0].stopped is True


async def _second_send_while_the_first_streams(fake, make_view) -> tuple[Branch, Lifecycle]:
    """``make_view(prompt)`` -> (view, text): the cell's body. Runs it, waits until the first
    reply is half streamed, runs it again, then stops whatever is still running."""
    branch_holder: dict = {}
    first, text1 = make_view("first prompt", branch_holder)
    branch = first.branch
    life = Lifecycle(branch)
    first_task = start(first, text1)
    await wait_for_text(branch)
    first_pgid = fake.record()["pgid"]
    second, text2 = make_view("second prompt", branch_holder)  # the re-executed cell
    second_task = start(second, text2)
    await asyncio.sleep(0.5)  # a second agent (if any) streams its half reply meanwhile
    for v in (first, second):
        v.stop()
    for t in (first_task, second_task):
        if t is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await t
    assert_no_orphans({"pgid": first_pgid, "children": []})
    assert_no_orphans(fake.record())
    life.assert_paired(runs=len([s for s in life.signals if isinstance(s, RunStart)]))
    for v in (first, second):
        v.close()
    return branch, life


def _assert_sequential(branch: Branch, life: Lifecycle) -> None:
    roles = [m.role for m in branch.messages]
    assert "user" not in [a for a, b in zip(roles, roles[1:], strict=False) if a == b], (
        f"the re-run's prompt was recorded while the first reply streamed: {roles}"
    )
    life.assert_no_overlap()
    # The first reply is kept as far as it streamed, whichever way the re-run is handled.
    assert isinstance(branch.messages[1], AssistantResponse), roles
    assert branch.messages[1].response == PARTIAL


async def test_a_view_re_created_over_a_running_branch_does_not_run_two_agents(fake):
    """A cell ``view = BranchView(branch, verb="run"); view.send(...)`` re-executed while the
    first view's run streams. Sensible: the earlier run is stopped cleanly (partial text kept)
    or the new send waits / refuses. Not sensible: two agents resuming one session at once,
    their messages interleaved on the branch."""
    model = agent(fake, TEXT, TEXT_HANG)
    branch = Branch(chat_model=model)

    def cell(prompt: str, _holder: dict) -> tuple[BranchView, str]:
        return BranchView(branch, verb="run"), prompt

    branch, life = await _second_send_while_the_first_streams(fake, cell)
    _assert_sequential(branch, life)


async def test_lion_magic_re_executed_while_its_run_is_active(fake):
    """The ``%%lion --run`` cell body run twice in one notebook namespace."""
    ns = {"lion_branch": Branch(chat_model=agent(fake, TEXT, TEXT_HANG))}

    def cell(prompt: str, _holder: dict) -> tuple[BranchView, str]:
        view, text, _wait = lion("--run", prompt, ns)
        return view, text

    branch, life = await _second_send_while_the_first_streams(fake, cell)
    _assert_sequential(branch, life)
