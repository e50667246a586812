"""Interrupting a run in a real ipykernel: a kernel interrupt
(``KernelManager.interrupt_kernel()``, the ■ button) during ``run()``, and a ``%%lion --run``
cell re-executed while its run streams.

The agent is the fake CLI (a real process group with a grandchild) streaming half a reply and
then hanging. Each case ends with no live member of the agent's process group (read from /proc
by this process), exactly one terminal lifecycle signal per ``RunStart`` (recorded inside the
kernel, read back as JSON) and the partial text on ``branch.messages``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from lion_nb.models.cli_process import group_alive
from tests.support.fake_cli import process_alive

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(120)]

PARTIAL = "Hello! How can I help you "

SETUP = """
import asyncio, gc, json
from pathlib import Path
from tests.support.fake_cli import make_fake_cli, recording
from lion_nb import Branch, BranchView, iModel
from lion_nb.signals import RunEnd, RunFailed, RunStart, StreamDelta

work = Path({work!r})
fake = make_fake_cli(work)
texts = work / "deltas.txt"

def agent(mode="hang,spawn_child", lines=6, delay=0.0):
    env = fake.env(recording("claude/text_partial"), delay=delay, mode=mode, lines=lines)
    return iModel(provider="claude_code", cli_path=str(fake.path), env=env, terminate_grace=3.0)

def watched(branch):
    life = []
    branch.observe(RunStart, RunEnd, RunFailed, handler=life.append)
    def on_delta(s):
        with open(texts, "a", encoding="utf-8") as fh:
            fh.write(s.delta)
    branch.observe(StreamDelta, handler=on_delta)
    return life

def lifecycle(life):
    return [[type(s).__name__, str(s.run_id), getattr(s, "stopped", None)] for s in life]

def state(branch, life):
    return {{
        "roles": [m.role for m in branch.messages],
        "last": branch.messages[-1].text if len(branch.messages) else None,
        "last_meta": {{k: v for k, v in branch.messages[-1].metadata.items()
                      if k in ("stopped", "error")}} if len(branch.messages) else None,
        "life": lifecycle(life),
    }}
"""


def wait_for_file_text(path: Path, text: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text(encoding="utf-8"):
            return
        time.sleep(0.02)
    got = path.read_text(encoding="utf-8") if path.exists() else None
    pytest.fail(f"{text!r} never streamed (got {got!r})")


def shell_reply(kernel, msg_id: str, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        reply = kernel.kc.get_shell_msg(timeout=max(0.1, deadline - time.monotonic()))
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply["content"]


# Cells run through the shell channel only, and values come back through a file written in
# the kernel: no IOPub bookkeeping, so each call costs what the cell costs.
def run(kernel, code: str, timeout: float = 60) -> None:
    reply = shell_reply(kernel, kernel.kc.execute(code), timeout)
    if reply["status"] == "aborted":
        # after an interrupted cell the kernel drops requests that reach it while it still
        # clears its queue (stop_on_error); on a busy machine the next cell can land there:
        # it never ran, so it is sent again, as a user would run it again
        reply = shell_reply(kernel, kernel.kc.execute(code), timeout)
    if reply["status"] != "ok":
        trace = "\n".join(reply.get("traceback", []))
        raise AssertionError(f"cell {reply['status']}:\n{code}\n{reply.get('ename')}: {trace}")


def value(kernel, expr: str) -> Any:
    out = Path(kernel_out[0])
    run(kernel, f"Path({str(out)!r}).write_text(json.dumps({expr}), encoding='utf-8')")
    return json.loads(out.read_text(encoding="utf-8"))


kernel_out: list[str] = []  # the result file of the current test


def assert_paired(life: list, runs: int = 1) -> None:
    starts = [run for kind, run, _ in life if kind == "RunStart"]
    ends = [run for kind, run, _ in life if kind in ("RunEnd", "RunFailed")]
    assert len(starts) == runs and sorted(ends) == sorted(starts), life


def assert_no_orphans(record: dict) -> None:
    assert not group_alive(record["pgid"]), f"agent group {record['pgid']} left running"
    for pid in record.get("children", []):
        assert not process_alive(pid), f"grandchild {pid} left running"


@pytest.fixture
def work(kernel, tmp_path: Path) -> Path:
    run(kernel, SETUP.format(work=str(tmp_path)))
    kernel_out[:] = [str(tmp_path / "value.json")]
    return tmp_path


def record_of(work: Path) -> dict:
    return json.loads((work / "fake-cli-record.json").read_text(encoding="utf-8"))


def test_kernel_interrupt_during_async_for_over_run(kernel, work):
    run(kernel, "branch = Branch(chat_model=agent()); life = watched(branch); seen = []")
    msg_id = kernel.kc.execute("async for m in branch.run('say hello'):\n    seen.append(m.role)\n")
    wait_for_file_text(work / "deltas.txt", PARTIAL)
    record = record_of(work)
    assert group_alive(record["pgid"])  # the agent streams, then hangs: the cell is stuck
    assert record["pgid"] != kernel.km.provisioner.pgid  # its own group: SIGINT is not sent to it
    started = time.monotonic()
    kernel.km.interrupt_kernel()
    reply = shell_reply(kernel, msg_id)
    elapsed = time.monotonic() - started
    assert reply["status"] == "error"
    assert reply["ename"] in ("KeyboardInterrupt", "CancelledError"), reply["ename"]
    # the cell ended only after run()'s cleanup: the group is already gone, SIGTERM did it
    assert_no_orphans(record)
    assert elapsed < 2.5, f"interrupt took {elapsed:.2f}s (the SIGKILL grace is 3 s)"
    got = value(kernel, "state(branch, life)")
    assert got["roles"] == ["user", "assistant"]
    assert got["last"] == PARTIAL and got["last_meta"] == {"stopped": True}
    assert_paired(got["life"])
    assert got["life"][-1][0] == "RunEnd" and got["life"][-1][2] is True
    assert value(kernel, "seen") == ["user"]
    # the kernel is fine and the branch runs again
    run(
        kernel,
        "branch.chat_model = agent(mode='', lines=0)\n"
        "async for m in branch.run('again'):\n    pass",
    )
    got = value(kernel, "state(branch, life)")
    assert got["last"] == "Hello! How can I help you today?"
    assert_paired(got["life"], runs=2)
    assert_no_orphans(record_of(work))


def test_kernel_interrupt_during_await_view_asend(kernel, work):
    """The cell awaits the view's own run (``await view.asend(...)``): the interrupt cancels
    the wait, which cancels the view's task: stopped like the Stop button."""
    run(
        kernel,
        "vb = Branch(chat_model=agent()); vlife = watched(vb)\n"
        "from tests.support.chat_view_doubles import install; install()\n"
        "vview = BranchView(vb, verb='run'); display(vview)",
    )
    msg_id = kernel.kc.execute("await vview.asend('say hello')")
    wait_for_file_text(work / "deltas.txt", PARTIAL)
    record = record_of(work)
    kernel.km.interrupt_kernel()
    reply = shell_reply(kernel, msg_id)
    assert reply["status"] == "error"
    assert_no_orphans(record)
    got = value(kernel, "state(vb, vlife)")
    assert got["roles"] == ["user", "assistant"] and got["last"] == PARTIAL
    assert got["last_meta"] == {"stopped": True}
    assert_paired(got["life"])
    view = value(
        kernel,
        "{'running': vview.running, 'send': vview.send_button.disabled,"
        " 'stop': vview.stop_button.disabled, 'status': vview.status.value}",
    )
    assert view["running"] is False and view["send"] is False and view["stop"] is True
    assert "stopped" in view["status"]


def test_kernel_interrupt_while_idle_leaves_a_background_run_alone(kernel, work):
    """The ■ button while no cell runs but a view's run streams: ipykernel ignores SIGINT
    between cells, so the run goes on to its normal end (the view's Stop is the way to stop
    it). What matters here: the kernel survives and nothing is left half done."""
    run(
        kernel,
        "ib = Branch(chat_model=agent(mode='', lines=0, delay=0.15)); ilife = watched(ib)\n"
        "iview = BranchView(ib, verb='run'); display(iview); iview.send('say hello')",
    )
    wait_for_file_text(work / "deltas.txt", "Hello! How can ")
    record = record_of(work)
    kernel.km.interrupt_kernel()
    time.sleep(0.3)
    assert kernel.km.is_alive()
    run(kernel, "await iview.wait()")
    got = value(kernel, "state(ib, ilife)")
    assert got["roles"] == ["user", "assistant"]
    assert got["last"] == "Hello! How can I help you today?" and got["last_meta"] == {}
    assert_paired(got["life"])
    assert got["life"][-1][2] is False
    assert_no_orphans(record)


def test_lion_cell_re_executed_while_its_run_streams(kernel, work):
    """Re-running a ``%%lion --run`` cell while the reply it started still streams (the run is
    the view's background task, so the cell returned at once and can be run again): the
    earlier run is stopped cleanly — its agent gone, its partial reply recorded, one stopped
    RunEnd — before the new run starts its own agent. Runs on the branch never overlap."""
    run(
        kernel,
        "%load_ext lion_nb\nlion_branch = Branch(chat_model=agent()); rlife = watched(lion_branch)",
    )
    cell = "%%lion --run\nsay hello"
    run(kernel, cell)  # returns at once; the reply streams in the background
    wait_for_file_text(work / "deltas.txt", PARTIAL)
    first = record_of(work)
    run(kernel, cell)  # the same cell again
    wait_for_file_text(work / "deltas.txt", PARTIAL * 2)
    second = record_of(work)
    assert second["pgid"] != first["pgid"]
    assert_no_orphans(first)
    assert group_alive(second["pgid"])
    # stop the second run from its view (the newest BranchView over the branch)
    run(
        kernel,
        "views = [o for o in gc.get_objects() if isinstance(o, BranchView)"
        " and o.branch is lion_branch]\n"
        "for v in views: v.stop()\n"
        "for v in views:\n"
        "    try:\n        await v.wait()\n"
        "    except asyncio.CancelledError:\n        pass",
    )
    assert_no_orphans(second)
    got = value(kernel, "state(lion_branch, rlife)")
    assert_paired(got["life"], runs=2)
    kinds = [kind for kind, _, _ in got["life"]]
    assert kinds == ["RunStart", "RunEnd", "RunStart", "RunEnd"], got["life"]  # no overlap
    assert all(stopped for kind, _, stopped in got["life"] if kind == "RunEnd")
    assert got["roles"] == ["user", "assistant", "user", "assistant"]
    replies = value(
        kernel, "[(m.response, m.metadata.get('stopped')) for m in lion_branch.messages[1::2]]"
    )
    assert replies == [[PARTIAL, True], [PARTIAL, True]]
