"""ChatRuns and RunSlots without widgets: the runs a chat view sees, the one it drives, one
driving view per branch, and its status line."""

from __future__ import annotations

import asyncio
import uuid

from lion_nb.signals import ParseAttempt, RoundEnd, RoundStart, RunEnd, RunFailed, RunStart
from lion_nb.viewmodels.chat import ChatRuns, RunSlots, status_of

BID = uuid.uuid4()


def start(run_id: uuid.UUID) -> RunStart:
    return RunStart(branch_id=BID, run_id=run_id, operation="communicate")


def end(run_id: uuid.UUID, **kw) -> RunEnd:
    return RunEnd(branch_id=BID, run_id=run_id, operation="communicate", duration_ms=1500, **kw)


def test_runs_started_anywhere_make_the_view_busy() -> None:
    runs = ChatRuns(BID, slots=RunSlots())
    assert not runs.running and runs.claim().verdict == "go"
    rid = uuid.uuid4()
    runs.on_signal(start(rid))  # awaited in a cell, not by this view
    assert runs.running and runs.run_began and runs.claim().verdict == "busy"
    assert runs.claim(stop_others=True).verdict == "busy"  # a cell's run is never interrupted
    runs.on_signal(end(rid))
    assert not runs.running and runs.claim().verdict == "go"


async def test_one_view_drives_a_run_on_a_branch_at_a_time() -> None:
    slots = RunSlots()
    stopping: list[str] = []
    first = ChatRuns(BID, slots=slots, on_stopping=lambda: stopping.append("first"))
    second = ChatRuns(BID, slots=slots)
    other_branch = ChatRuns(uuid.uuid4(), slots=slots)
    task = asyncio.get_running_loop().create_task(asyncio.sleep(10))
    first.started(task)
    assert first.driving and slots.driver(BID) is first
    assert first.claim().verdict == "busy"
    assert second.claim().verdict == "taken"
    claim = second.claim(stop_others=True)
    assert claim.verdict == "go" and claim.after is first
    assert other_branch.claim().verdict == "go"
    assert claim.after.stop() and stopping == ["first"] and first.stop_requested
    try:
        await first.wait()
    except asyncio.CancelledError:
        pass
    first.ended()
    assert not first.driving and slots.driver(BID) is None
    assert not first.stop()  # nothing left to stop
    assert second.claim().verdict == "go"


def test_status_lines() -> None:
    rid = uuid.uuid4()
    assert status_of(start(rid)) == ("running", "communicate…")
    assert status_of(end(rid, input_tokens=3, output_tokens=5)) == (
        "done",
        "communicate done in 1.5 s · 3 in / 5 out tokens",
    )
    priced = end(rid, input_tokens=3000, output_tokens=50, total_cost_usd=0.00976)
    assert status_of(priced)[1] == "communicate done in 1.5 s · 3,000 in / 50 out tokens · $0.0098"
    assert status_of(end(rid, stopped=True)) == ("stopped", "communicate stopped")
    failed = RunFailed(
        branch_id=BID, run_id=rid, operation="run", duration_ms=2000, error=ValueError("x")
    )
    assert status_of(failed) == ("failed", "run failed after 2.0 s")
    assert status_of(RoundStart(branch_id=BID, run_id=rid, round=2)) == (
        "running",
        "ReAct round 2…",
    )
    assert status_of(RoundStart(branch_id=BID, run_id=rid, round=3, final=True))[1] == (
        "ReAct final answer…"
    )
    assert status_of(RoundEnd(branch_id=BID, run_id=rid, round=1)) is None
    bad = RoundEnd(branch_id=BID, run_id=rid, round=1, error=KeyError("k"))
    assert status_of(bad) == ("running", "round 1 failed: KeyError")
    retry = ParseAttempt(branch_id=BID, attempt=0, ok=False, raw="", errors=[], target="T")
    assert status_of(retry) == ("running", "parse attempt 1 did not validate; retrying…")
