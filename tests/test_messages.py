import json
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import ValidationError

from lion_nb.messages import (
    MESSAGE_LIST,
    ActionRequest,
    ActionResponse,
    AssistantResponse,
    Instruction,
    Messages,
    Progression,
    System,
)

GOLDEN = Path(__file__).parent / "fixtures" / "history_golden.json"


def _history():
    t = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)

    def mid(n: int) -> uuid.UUID:
        return uuid.UUID(int=n)

    req_id, res_id = mid(4), mid(5)
    return [
        System(id=mid(1), created_at=t, system="You are terse."),
        Instruction(
            id=mid(2),
            created_at=t,
            instruction="Add 2 and 3",
            guidance="Use the tool",
            context=[{"a": 2}, "b is 3"],
            sender="user",
        ),
        AssistantResponse(
            id=mid(3),
            created_at=t,
            response="Calling add.",
            metadata={"usage": {"input_tokens": 10, "output_tokens": 3}},
        ),
        ActionRequest(
            id=req_id,
            created_at=t,
            function="add",
            arguments={"a": 2, "b": 3},
            call_id="call_1",
            action_response_id=res_id,
        ),
        ActionResponse(
            id=res_id,
            created_at=t,
            function="add",
            arguments={"a": 2, "b": 3},
            output=5,
            call_id="call_1",
            action_request_id=req_id,
        ),
        AssistantResponse(id=mid(6), created_at=t, response="5"),
    ]


def test_history_round_trips_through_json_and_matches_golden():
    history = _history()
    dumped = MESSAGE_LIST.dump_json(history)
    assert MESSAGE_LIST.validate_json(dumped) == history
    data = json.loads(dumped)
    assert [m["role"] for m in data] == [
        "system",
        "user",
        "assistant",
        "action_request",
        "action_response",
        "assistant",
    ]
    assert data == json.loads(GOLDEN.read_text())


def test_role_discriminates_and_unknown_fields_are_rejected():
    msg = MESSAGE_LIST.validate_python([{"role": "assistant", "response": "hi"}])[0]
    assert isinstance(msg, AssistantResponse)
    with pytest.raises(ValidationError):
        MESSAGE_LIST.validate_python([{"role": "wizard", "text": "x"}])
    with pytest.raises(ValidationError):
        AssistantResponse(response="x", surprise=1)


def test_messages_are_frozen_values():
    msg = AssistantResponse(response="x")
    with pytest.raises(ValidationError):
        msg.response = "y"


def test_instruction_text_is_what_the_model_receives():
    ins = Instruction(
        instruction="Summarise",
        guidance="One line",
        context=["doc A", {"k": 1}],
        request_fields={"summary": "str"},
    )
    assert ins.text == (
        'Summarise\n\nGuidance: One line\n\nContext:\n- doc A\n- {"k": 1}\n\n'
        'Respond with only a JSON object with these fields:\n{"summary":"str"}'
    )
    assert Instruction(instruction="x", plain_content="exactly this").text == "exactly this"


def test_messages_collection_orders_indexes_and_rejects_duplicates():
    store = Messages()
    a, b = System(system="s"), Instruction(instruction="i")
    store._append(a)
    store._append(b)
    assert list(store) == [a, b] and len(store) == 2
    assert store[0] is a and store[-1] is b and store[b.id] is b and store[0:1] == [a]
    assert b in store and b.id in store
    with pytest.raises(ValueError, match="already recorded"):
        store._append(a)
    store._clear(keep_system=True)
    assert list(store) == [a]


def test_progression_behaves_like_an_ordered_id_list():
    ids = [uuid.uuid4() for _ in range(3)]
    p = Progression(ids)
    assert list(p) == ids and len(p) == 3 and p[1] == ids[1] and ids[2] in p
    assert p[0:2] == Progression(ids[:2])
    p.remove(ids[0])
    assert p.index(ids[1]) == 0
