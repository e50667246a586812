import pytest
from pydantic import BaseModel

from lion_nb import Branch
from lion_nb.errors import ParseError
from lion_nb.signals import ParseAttempt
from tests.support.scripted import kinds, recording_branch, scripted


class City(BaseModel):
    name: str
    population: int


async def test_local_extraction_needs_no_model_and_records_nothing():
    branch, seen = recording_branch()  # no replies: any model call would fail
    text = 'Here you go:\n```json\n{"Name": "Oslo", "population": 700000,}\n```'
    assert await branch.parse(text, City) == City(name="Oslo", population=700000)
    assert len(branch.messages) == 0
    assert kinds(seen) == ["ParseAttempt"] and seen[0].ok


async def test_repair_turns_are_unrecorded_and_observable():
    model = scripted("garbage", '{"name": "Rome", "population": 2800000}')
    branch = Branch(chat_model=model)
    seen: list = []
    branch.observe(ParseAttempt, handler=seen.append)
    out = await branch.parse("Rome has about 2.8 million people", City, max_retries=3)
    assert out == City(name="Rome", population=2800000)
    assert [a.ok for a in seen] == [False, False, True]
    assert seen[0].errors and seen[0].target == "City"
    assert len(branch.messages) == 0
    assert model.provider.requests[0].response_schema == City.model_json_schema()


@pytest.mark.parametrize(("mode", "expected"), [("return_value", "nope"), ("return_none", None)])
async def test_handle_validation_values(mode, expected):
    branch, _ = recording_branch("still nope")
    assert await branch.parse("nope", City, handle_validation=mode, max_retries=1) == expected


async def test_handle_validation_raise_carries_context():
    branch, _ = recording_branch()
    with pytest.raises(ParseError) as info:
        await branch.parse(
            '{"name": "X", "population": "many"}', City, handle_validation="raise", max_retries=0
        )
    assert info.value.target is City and "many" in info.value.raw


async def test_dict_schema_checks_required_fields():
    branch, _ = recording_branch()
    schema = {"type": "object", "properties": {"a": {}, "b": {}}, "required": ["a"]}
    assert await branch.parse('{"A": 1, "b": 2}', schema) == {"a": 1, "b": 2}
    with pytest.raises(ParseError):
        await branch.parse('{"b": 2}', schema, handle_validation="raise", max_retries=0)


async def test_interpret_is_one_unrecorded_turn_without_history():
    model = scripted("a", "Write a haiku about autumn leaves, 5-7-5.")
    branch = Branch(system="s", chat_model=model)
    await branch.chat_and_record("earlier")
    out = await branch.interpret("haiku autumn", domain="poetry", style="precise")
    assert out == "Write a haiku about autumn leaves, 5-7-5."
    sent = model.provider.requests[-1].messages
    assert (
        len(sent) == 1 and "poetry" in sent[0]["content"] and "haiku autumn" in sent[0]["content"]
    )
    assert len(branch.messages) == 3
