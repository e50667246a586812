"""Interrupting a CLI agent's run, in every way a notebook user can, loses nothing and
leaves nothing behind.

Each scenario drives ``Branch.run`` against the fake CLI (a real process whose group also holds
a grandchild, ``spawn_child``) that streams part of a reply and then hangs, interrupts it, and
checks the same three things:

- no orphan: no live (non-zombie) member of the agent's process group, grandchild included
  (PID 1 here does not reap zombies, so /proc is read; see ``group_alive``);
- exactly one terminal lifecycle signal (``RunEnd``/``RunFailed``) per ``RunStart``, with the
  same run id, and nothing for a run that never started;
- the text the agent streamed before the interruption is on ``branch.messages``, marked
  ``stopped``. (A ``break`` can only happen at a yielded message, where no text is pending;
  there the check is that every message the agent's stream completed is recorded.)

A cell re-executed while its run is active: a second ``BranchView`` refuses to start another
run on the branch; the ``%%lion`` magic stops the earlier run cleanly, then starts the new one.

The kernel-level scenarios (a real ``KeyboardInterrupt`` via ``interrupt_kernel``, a ``%%lion``
cell re-executed while its run streams) are in ``tests/kernel/test_interrupt_kernel.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from pathlib import Path

import pytest

from lion_nb import Branch, BranchView, iModel
from lion_nb.messages import ActionRequest, AssistantResponse, Instruction
from lion_nb.models.cli_process import group_alive
from lion_nb.signals import RunEnd, RunFailed, RunStart, StreamDelta
from tests.support.fake_cli import FakeCLI, make_fake_cli, process_alive, recording

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
    """Every lifecycle signal of one branch, with the checks the interruption tests need."""

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
            async with asyncio.timeout(None) as scope:
                # the deadline is set to "now" once the half reply has streamed
                waiter = asyncio.create_task(wait_for_text(branch))
                waiter.add_done_callback(lambda _: scope.reschedule(scope.when() or 0.0))
                await consume()
        await waiter
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


async def _stop_all(*views: BranchView) -> None:
    for v in views:
        v.stop()
    for v in views:
        if v.task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await v.task


def _assert_sequential(branch: Branch, life: Lifecycle) -> None:
    """Runs on the branch never overlapped and each prompt's reply follows it."""
    life.assert_no_overlap()
    roles = [m.role for m in branch.messages]
    assert all(a != b for a, b in itertools.pairwise(roles)), roles


async def test_a_view_re_created_over_a_running_branch_refuses_to_start_a_second_run(fake):
    """A cell ``view = BranchView(branch, verb="run"); view.send(...)`` re-executed while the
    first view's run streams: the new view refuses (and says why) rather than start a second
    agent on the same session with its messages interleaved; the first run goes on and is
    stopped cleanly from its own view."""
    branch = Branch(chat_model=agent(fake, TEXT, TEXT_HANG))
    life = Lifecycle(branch)
    first = BranchView(branch, verb="run")
    first_task = start(first, "first prompt")
    await wait_for_text(branch)
    record = fake.record()
    second = BranchView(branch, verb="run")  # the re-executed cell
    assert start(second, "second prompt") is None
    assert "another view is running" in str(second.last_error)
    assert not first_task.done() and group_alive(record["pgid"])  # the first run goes on
    await _stop_all(first, second)
    assert_no_orphans(record)
    life.assert_paired()
    assert_partial_recorded(branch)
    _assert_sequential(branch, life)
    assert [m.role for m in branch.messages] == ["user", "assistant"]
    for v in (first, second):
        v.close()


async def test_lion_magic_re_executed_stops_the_earlier_run_then_starts_the_new_one(
    fake, monkeypatch
):
    """The registered ``%%lion --run`` magic run twice in one namespace, the first reply still
    streaming when the cell runs again: the first run is stopped cleanly (its agent gone, its
    partial reply recorded, one stopped RunEnd) before the second run starts its own agent."""
    import IPython.display

    from lion_nb.magics import register

    shown: list[BranchView] = []
    monkeypatch.setattr(IPython.display, "display", shown.append)

    class Shell:
        def __init__(self) -> None:
            self.user_ns = {"lion_branch": Branch(chat_model=agent(fake, TEXT, TEXT_HANG))}
            self.magics: dict = {}

        def register_magic_function(self, func, magic_kind: str, magic_name: str) -> None:
            self.magics[magic_name] = func

    shell = Shell()
    register(shell)
    branch = shell.user_ns["lion_branch"]
    life = Lifecycle(branch)
    shell.magics["lion"]("--run", "first prompt")
    await wait_for_text(branch)
    first = fake.record()
    shell.magics["lion"]("--run", "second prompt")  # the same cell again
    await wait_for_text(branch)  # deltas from now on: the second agent streams its half reply
    second = fake.record()
    assert first["pgid"] != second["pgid"]
    assert_no_orphans(first)  # stopped before the second started
    assert group_alive(second["pgid"])
    await _stop_all(*shown)
    assert_no_orphans(second)
    life.assert_paired(runs=2)
    _assert_sequential(branch, life)
    assert [m.role for m in branch.messages] == ["user", "assistant", "user", "assistant"]
    for reply in (branch.messages[1], branch.messages[3]):
        assert reply.response == PARTIAL and reply.metadata["stopped"] is True
    assert all(t.stopped for t in life.terminals)
    for v in shown:
        v.close()
