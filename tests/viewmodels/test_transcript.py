"""TranscriptModel without widgets: which messages a chat view shows, in reading order."""

from __future__ import annotations

import uuid

from lion_nb import Branch
from lion_nb.messages import AssistantResponse, Instruction
from lion_nb.viewmodels.transcript import TranscriptModel, is_live


def branch_with(*texts: str) -> Branch:
    branch = Branch()
    for text in texts:
        branch.add_message(Instruction(instruction=text))
    return branch


def test_hidden_messages_are_never_shown() -> None:
    branch = branch_with("before")
    model = TranscriptModel(branch, hidden=frozenset(branch.progression))
    assert model.rebuild() == [] and model.keys == []
    later = Instruction(instruction="after")
    branch.add_message(later)
    assert model.shown_ids() == [later.id] and [m.id for m in model.messages()] == [later.id]
    assert not model.wants(branch.messages[0]) and model.wants(later)


def test_a_recorded_message_goes_before_the_replies_still_streaming() -> None:
    model = TranscriptModel(branch_with())
    reply = uuid.uuid4()
    model.place(("live", reply))
    model.place(("live", reply))  # placing again keeps its place
    instruction = uuid.uuid4()
    assert model.insert_message(instruction) == 0
    assert model.keys == [instruction, ("live", reply)]
    assert is_live(model.keys[1]) and not is_live(instruction)
    model.replace(("live", reply), reply)  # recorded: the live key becomes the message id
    assert model.keys == [instruction, reply] and model.index(reply) == 1


def test_a_pending_prompt_is_replaced_by_its_instruction_and_survives_rebuilds() -> None:
    branch = branch_with("one")
    model = TranscriptModel(branch)
    model.rebuild()
    pending = model.add_pending()
    assert model.keys[-1] == pending and model.pending == pending
    branch.add_message(AssistantResponse(response="r"))
    assert model.stale()  # recorded without this transcript hearing of it
    model.rebuild()
    assert model.keys[-1] == pending and not model.stale()
    mid = uuid.uuid4()
    model.replace(pending, mid)
    assert model.pending is None and model.keys[-1] == mid
    model.drop(mid)
    assert mid not in model.keys
