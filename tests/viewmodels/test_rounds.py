"""RoundsModel without widgets: signals (or recorded messages) -> runs -> rounds -> steps."""

from __future__ import annotations

import asyncio
import uuid

from lion_nb.messages import ActionRequest, ActionResponse, AssistantResponse, Instruction
from lion_nb.signals import MessageAdded, RoundEnd, RoundStart, RunEnd, RunFailed, RunStart
from lion_nb.viewmodels.rounds import RoundsModel, shown

BID = uuid.uuid4()


def added(message) -> MessageAdded:
    return MessageAdded(branch_id=BID, message=message)


def test_signals_fold_into_rounds_with_their_tool_calls() -> None:
    model = RoundsModel()
    rid = uuid.uuid4()
    (group,) = model.on_signal(RunStart(branch_id=BID, run_id=rid, operation="ReAct"))
    assert shown(group) and group.status == "running"
    group_, rnd = model.on_signal(RoundStart(branch_id=BID, run_id=rid, round=1))
    assert group_ is group and rnd.status == "running"
    model.on_signal(added(Instruction(instruction="add 2 and 3")))
    model.on_signal(added(AssistantResponse(response='{"analysis": "adding"}')))
    request = ActionRequest(function="add", arguments={"a": 2, "b": 3}, call_id="c1")
    model.on_signal(added(request))
    model.on_signal(added(ActionResponse(function="add", output=5, call_id="c1")))
    assert model.on_signal(RoundEnd(branch_id=BID, run_id=rid, round=1, duration_ms=5)) == [rnd]
    assert rnd.status == "done" and rnd.action_count == 1
    assert rnd.steps[0].actions[0].response is not None
    changed = model.on_signal(
        RunEnd(branch_id=BID, run_id=rid, operation="ReAct", duration_ms=9, output_tokens=4)
    )
    assert changed == [group] and group.status == "done" and group.usage == {"output_tokens": 4}
    assert model.all_rounds() == [rnd]


def test_a_streamed_analysis_is_read_from_its_snapshot(part) -> None:
    """A model that starts following mid-reply shows the analysis from its start."""
    model = RoundsModel()
    rid = uuid.uuid4()
    model.on_signal(RunStart(branch_id=BID, run_id=rid, operation="ReAct"))
    model.on_signal(RoundStart(branch_id=BID, run_id=rid, round=1))
    mid = uuid.uuid4()
    text = '{"analysis": "first half, second half"'
    for ch in text[:20]:
        part(mid, ch)  # before the model saw the reply
    for ch in text[20:]:
        (rnd,) = model.on_signal(part(mid, ch))
    assert rnd.live[mid].display_text() == "first half, second half"
    (rnd,) = model.on_signal(part(mid, "thinking it over", kind="thinking"))
    assert rnd.live_thinking[mid].text() == "thinking it over"
    assert model.on_signal(part(mid, "{}", kind="tool_args", call_id="c")) == []


def test_a_stopped_round_and_a_failed_run() -> None:
    model = RoundsModel()
    rid = uuid.uuid4()
    model.on_signal(RunStart(branch_id=BID, run_id=rid, operation="ReAct"))
    model.on_signal(RoundStart(branch_id=BID, run_id=rid, round=1))
    stop = RoundEnd(branch_id=BID, run_id=rid, round=1, error=asyncio.CancelledError())
    (rnd,) = model.on_signal(stop)
    assert rnd.status == "stopped"
    model.on_signal(RoundStart(branch_id=BID, run_id=rid, round=2))
    failed = RunFailed(
        branch_id=BID, run_id=rid, operation="ReAct", duration_ms=1, error=KeyError("k")
    )
    group, open_round = model.on_signal(failed)
    assert group.status == "failed" and "KeyError" in (group.error or "")
    assert open_round.number == 2 and open_round.status == "failed"


def test_rounds_are_inferred_from_recorded_messages() -> None:
    messages = [
        Instruction(instruction="q"),
        AssistantResponse(response="thinking"),
        ActionRequest(function="f", call_id="1"),
        ActionResponse(function="f", output="o", call_id="1"),
        AssistantResponse(response="answer"),
    ]
    model = RoundsModel.from_messages(messages)
    (group,) = model.runs
    assert group.operation == "history" and [r.number for r in group.rounds] == [1, 2]
    assert group.rounds[1].final and not group.rounds[0].final
    assert RoundsModel.from_messages([]).runs == []
