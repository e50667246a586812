"""ParseModel without widgets: the reply and parse a parse view follows, and what it shows."""

from __future__ import annotations

import json
import uuid

from pydantic import BaseModel, Field

from lion_nb.messages import AssistantResponse
from lion_nb.signals import MessageAdded, ParseAttempt, RunEnd
from lion_nb.viewmodels.parse import ParseModel, error_dicts


class Pet(BaseModel):
    name: str = Field(max_length=8)
    age: int


BID = uuid.uuid4()


def attempt(n: int, ok: bool, raw: str, *, final: bool = False, errors=()) -> ParseAttempt:
    return ParseAttempt(
        branch_id=BID, attempt=n, ok=ok, raw=raw, errors=list(errors), target="Pet", final=final
    )


def test_a_result_is_not_live() -> None:
    model = ParseModel(Pet(name="Rex", age=3))
    assert not model.live and model.status == "valid" and model.title == "Pet"
    assert [r.key for r in model.rows()] == ["name", "age"]


def test_a_model_made_mid_reply_reads_the_reply_from_its_start(part) -> None:
    text = json.dumps({"name": "Rex", "age": 3})
    mid = uuid.uuid4()
    half = len(text) // 2
    for ch in text[:half]:
        part(mid, ch)  # streamed before the model existed
    model = ParseModel(Pet)
    effects = [model.on_signal(part(mid, ch)) for ch in text[half:]]
    assert effects[-1] == "now" and set(effects[:-1]) == {"later"}
    assert model.result == Pet(name="Rex", age=3) and model.status == "valid"


def test_it_settles_at_the_final_attempt_and_then_ignores_signals(part) -> None:
    model = ParseModel(Pet)
    mid = uuid.uuid4()
    raw = json.dumps({"name": "A very long name", "age": 1})
    model.on_signal(part(mid, raw))
    errors = [{"loc": ["name"], "msg": "too long", "type": "string_too_long"}]
    assert model.on_signal(attempt(0, False, raw, final=True, errors=errors)) == "settled"
    assert model.settled and model.status == "invalid" and model.errors == errors
    assert [a["attempt"] for a in model.attempts] == [0]
    assert model.on_signal(part(uuid.uuid4(), "{}")) is None  # a later reply changes nothing


def test_a_run_that_ended_after_a_reply_settles_it(part) -> None:
    model = ParseModel(Pet)
    assert (
        model.on_signal(RunEnd(branch_id=BID, run_id=uuid.uuid4(), operation="x", duration_ms=1.0))
        is None
    )
    mid = uuid.uuid4()
    model.on_signal(part(mid, '{"name": "Rex", "age": 3}'))
    message = AssistantResponse(id=mid, response='{"name": "Rex", "age": 3}')
    assert model.on_signal(MessageAdded(branch_id=BID, message=message)) == "now"
    assert (
        model.on_signal(RunEnd(branch_id=BID, run_id=uuid.uuid4(), operation="x", duration_ms=1.0))
        == "settled"
    )


def test_an_attempt_on_text_that_never_streamed_is_read_whole() -> None:
    model = ParseModel(Pet)
    raw = '{"name": "Tom", "age": 2}'
    assert model.on_signal(attempt(0, True, raw)) == "settled"
    assert model.result == Pet(name="Tom", age=2)


def test_error_dicts() -> None:
    assert error_dicts(None) == []
    assert error_dicts([{"loc": ["a"], "msg": "m"}]) == [{"loc": ["a"], "msg": "m"}]
    assert error_dicts(ValueError("bad")) == [{"loc": [], "msg": "bad", "type": "ValueError"}]
