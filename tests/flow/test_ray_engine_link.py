"""``_NodeLink``, the notebook side of a Ray node, driven with synthetic events (no Ray): live
messages land once, a retried attempt's landed messages are taken back, and ``settle``
reconciles what landed with the attempt's record."""

from __future__ import annotations

import uuid

from lion_nb import Branch
from lion_nb.flow import Flow
from lion_nb.flow.errors import WorkerLost
from lion_nb.flow.ray_engine import _NodeLink
from lion_nb.messages import MESSAGE, MESSAGE_LIST, AssistantResponse, Instruction
from lion_nb.signals import MessageRetracted, RunEnd, RunFailed, RunStart
from tests.support.waiting import net_message_ids

WHERE = {"node_id": None, "pid": 1}


def _link() -> tuple[_NodeLink, Branch, list]:
    branch = Branch(system="s")
    seen: list = []
    branch.observe(handler=seen.append)
    flow = Flow()
    node = flow.add("communicate", instruction="q", branch=branch)
    return _NodeLink(flow, node, branch), branch, seen


def _message(m) -> tuple:
    return ("message", MESSAGE.dump_python(m, mode="json"))


def _run(branch: Branch) -> tuple[RunStart, RunEnd]:
    run_id = uuid.uuid4()
    start = RunStart(branch_id=branch.id, run_id=run_id, operation="communicate")
    end = RunEnd(branch_id=branch.id, run_id=run_id, operation="communicate", duration_ms=1.0)
    return start, end


def _record(attempt: str, messages: list, response: str = "a") -> dict:
    return {
        "attempt": attempt,
        "ok": True,
        "response": response,
        "messages": MESSAGE_LIST.dump_python(messages, mode="json"),
        "usage": {},
    }


def _names(seen: list) -> list[str]:
    return [type(s).__name__ for s in seen]


async def test_messages_landed_live_stay_and_the_run_ends_after_them():
    link, branch, seen = _link()
    ins, res = Instruction(instruction="q"), AssistantResponse(response="a")
    start, end = _run(branch)
    link.apply("a1", [("attempt", WHERE), ("signal", start), _message(ins)])
    assert [m.id for m in branch.messages][1:] == [ins.id]  # live, before the attempt ended
    assert branch.messages[ins.id] == ins
    link.apply("a1", [_message(res), ("signal", end), ("end", None)])
    assert "RunEnd" not in _names(seen)  # held until the record is settled
    assert await link.settle(_record("a1", [ins, res])) == "a"
    assert [m.id for m in branch.messages][1:] == [ins.id, res.id]
    assert _names(seen) == ["RunStart", "MessageAdded", "MessageAdded", "RunEnd"]


async def test_messages_whose_live_events_were_lost_are_recorded_from_the_record():
    link, branch, seen = _link()
    ins, res = Instruction(instruction="q"), AssistantResponse(response="a")
    start, end = _run(branch)
    link.apply("a1", [("attempt", WHERE), ("signal", start), _message(ins)])
    link.apply("a1", [("signal", end), ("end", None)])  # the reply's event was lost
    await link.settle(_record("a1", [ins, res]))
    assert list(branch.messages)[1:] == [ins, res]
    assert _names(seen) == ["RunStart", "MessageAdded", "MessageAdded", "RunEnd"]
    assert net_message_ids(seen) == [ins.id, res.id]


async def test_a_landed_message_the_record_does_not_hold_is_retracted():
    link, branch, seen = _link()
    ins, stray, res = (Instruction(instruction="q"), AssistantResponse(response="x"),
                       AssistantResponse(response="a"))  # fmt: skip
    link.apply("a1", [("attempt", WHERE), _message(ins), _message(stray), _message(res)])
    link.apply("a1", [("end", None)])
    await link.settle(_record("a1", [ins, res]))
    assert list(branch.messages)[1:] == [ins, res]  # as the record says, each once
    retracted = [s.message_id for s in seen if isinstance(s, MessageRetracted)]
    assert retracted[-1] == stray.id  # after the prefix, taken back newest first
    assert net_message_ids(seen) == [ins.id, res.id]


async def test_a_retried_attempt_takes_back_the_dead_attempts_messages_and_closes_its_run():
    link, branch, seen = _link()
    dead_ins = Instruction(instruction="q")
    dead_start, _ = _run(branch)
    link.apply("a1", [("attempt", WHERE), ("signal", dead_start), _message(dead_ins)])
    assert dead_ins.id in branch.messages
    ins, res = Instruction(instruction="q"), AssistantResponse(response="a")
    start, end = _run(branch)
    link.apply("a2", [("attempt", {"node_id": None, "pid": 2}), ("signal", start)])
    link.apply("a1", [_message(AssistantResponse(response="late"))])  # the dead one: ignored
    assert dead_ins.id not in branch.messages and len(branch.messages) == 1
    retracted = next(s for s in seen if isinstance(s, MessageRetracted))
    assert retracted.message_id == dead_ins.id and "Ray retried it" in retracted.reason
    link.apply("a2", [_message(ins), _message(res), ("signal", end), ("end", None)])
    await link.settle(_record("a2", [ins, res]))
    assert list(branch.messages)[1:] == [ins, res]
    assert _names(seen) == ["RunStart", "MessageAdded", "MessageRetracted", "RunFailed",
                            "RunStart", "MessageAdded", "MessageAdded", "RunEnd"]  # fmt: skip
    failed = next(s for s in seen if isinstance(s, RunFailed))
    assert isinstance(failed.error, WorkerLost) and failed.run_id == dead_start.run_id
    assert [a["pid"] for a in link.node.metadata["ray"]["attempts"]] == [1, 2]


async def test_a_message_the_worker_takes_back_leaves_the_notebook_too():
    link, branch, seen = _link()
    ins, res = Instruction(instruction="q"), AssistantResponse(response="a")
    link.apply("a1", [("attempt", WHERE), _message(ins), _message(res)])
    link.apply("a1", [("retract", res.id, "redone"), ("end", None)])
    assert res.id not in branch.messages
    await link.settle(_record("a1", [ins]))
    assert list(branch.messages)[1:] == [ins] and net_message_ids(seen) == [ins.id]
    assert next(s for s in seen if isinstance(s, MessageRetracted)).reason == "redone"


async def test_history_the_node_started_from_is_never_landed_nor_taken_back():
    link, branch, seen = _link()
    before = branch.add_message(Instruction(instruction="from earlier"))
    link.apply("a1", [("attempt", WHERE), _message(before), ("end", None)])  # delivered again
    await link.settle(_record("a1", []))
    assert list(branch.messages)[1:] == [before]
    assert _names(seen) == ["MessageAdded"]  # only the notebook's own add_message above


def test_a_node_that_clears_the_conversation_clears_the_notebooks_copy_once():
    branch = Branch(system="s")
    branch.add_message(Instruction(instruction="old"))
    flow = Flow()
    node = flow.add("communicate", instruction="q", branch=branch, clear_messages=True)
    link = _NodeLink(flow, node, branch)
    link.apply("a1", [("attempt", WHERE)])  # the worker clears its copy as the node starts
    assert [m.role for m in branch.messages] == ["system"]
    fresh = Instruction(instruction="q")
    link.apply("a1", [_message(fresh)])
    link.apply("a2", [("attempt", WHERE)])  # a retry: only what the dead attempt landed goes
    assert [m.role for m in branch.messages] == ["system"]
    again = Instruction(instruction="q")
    link.apply("a2", [_message(again)])
    assert [m.id for m in branch.messages][1:] == [again.id]
