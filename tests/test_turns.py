"""``lion_nb.turns``: what the recorded messages say about their turns, read from the messages
alone (code, the live view and a saved notebook agree)."""

from __future__ import annotations

import uuid

from lion_nb.messages import AssistantResponse, Instruction, System
from lion_nb.turns import continuations, is_truncated, last_cut, open_truncated


def test_a_truncated_reply_is_offered_for_continuing_until_it_is_continued() -> None:
    ask = Instruction(instruction="story")
    cut = AssistantResponse(response="Once", metadata={"finish_reason": "length"})
    fine = AssistantResponse(response="Done.", metadata={"finish_reason": "stop"})
    assert is_truncated(cut) and not is_truncated(fine) and not is_truncated(ask)
    assert open_truncated([ask, cut]) == [cut.id]
    more = Instruction(instruction="go on", metadata={"continues": str(cut.id)})
    history = [ask, cut, more, AssistantResponse(response="upon a time.")]
    assert continuations(history) == {str(cut.id): more.id}
    assert open_truncated(history) == []


def test_the_cut_is_the_last_instructions_own() -> None:
    system, q1, a1, q2 = (
        System(system="s"),
        Instruction(instruction="q1"),
        AssistantResponse(response="a1"),
        Instruction(instruction="q2"),
    )
    q2.metadata["context_fit"] = {"omitted": [str(q1.id), str(a1.id)], "first_sent": None}
    cut = last_cut([system, q1, a1, q2])
    assert cut is not None and cut.omitted == 2 and cut.before is None
    assert cut.instruction == q2.id  # only the new instruction was sent: the notice goes there
    q3 = Instruction(instruction="q3")  # a later request that sent everything: no cut shown
    assert last_cut([system, q1, a1, q2, AssistantResponse(response="a2"), q3]) is None
    q3.metadata["context_fit"] = {"omitted": [str(q1.id)], "first_sent": str(a1.id)}
    assert last_cut([system, q1, a1, q3]).before == a1.id  # type: ignore[union-attr]
    q3.metadata["context_fit"] = {"omitted": [], "first_sent": str(uuid.uuid4())}
    assert last_cut([system, q1, a1, q3]) is None
