"""A ``response_format`` lion_nb cannot use fails before anything is sent or recorded: a dict
that is no JSON schema is a ValueError saying what is wrong, a string (a model's name) a short
TypeError saying what to pass; a real JSON schema still works."""

from __future__ import annotations

import json

import pytest

from lion_nb import Branch, iModel
from tests.servers.chat_server import Reply, start_chat_server

NOT_SCHEMAS = [
    ({"type": "json_schema"}, "OpenAI's wrapper"),
    ({"type": "json_object"}, "OpenAI's wrapper"),
    (
        {"type": "json_schema", "json_schema": {"name": "P", "schema": {"type": "object"}}},
        "the schema inside it",
    ),
    ({"type": "person"}, "not a JSON-schema type"),
    ({"name": "string", "age": "integer"}, "none of a JSON schema's keywords"),
    ({"type": "object", "required": "name"}, "required must be a list"),
]


@pytest.fixture
def server():
    with start_chat_server() as running:
        running.script(Reply(json.dumps({"name": "Ada"})))
        yield running


def branch_on(server) -> Branch:
    model = iModel(provider="openai", model="m", base_url=server.base_url, api_key="sk-test")
    return Branch(chat_model=model)


@pytest.mark.parametrize("verb", ["communicate", "operate", "chat"])
@pytest.mark.parametrize(("fmt", "words"), NOT_SCHEMAS)
async def test_a_dict_that_is_no_json_schema_is_a_value_error_before_sending(
    server, verb, fmt, words
):
    branch = branch_on(server)
    call = getattr(branch, verb)
    with pytest.raises(ValueError, match="not a JSON schema") as caught:
        if verb == "operate":
            await call(instruction="Who?", response_format=fmt)
        else:
            await call("Who?", response_format=fmt)
    assert words in str(caught.value)
    assert not server.requests and not list(branch.messages)


async def test_parse_refuses_it_too_before_any_repair_turn(server):
    branch = branch_on(server)
    with pytest.raises(ValueError, match="not a JSON schema"):
        await branch.parse("not json", response_format={"type": "json_schema"})
    assert not server.requests


@pytest.mark.parametrize("verb", ["communicate", "operate", "parse"])
async def test_a_models_name_is_a_short_type_error_saying_what_to_pass(server, verb):
    branch = branch_on(server)
    with pytest.raises(TypeError) as caught:
        if verb == "operate":
            await branch.operate(instruction="Who?", response_format="Person")
        else:
            await getattr(branch, verb)("Who?", response_format="Person")
    text = str(caught.value)
    assert "response_format=Person" in text and "not its" not in text and len(text) < 160
    assert not server.requests and not list(branch.messages)


async def test_a_real_json_schema_is_still_sent_and_parsed(server):
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    branch = branch_on(server)
    assert await branch.communicate("Who?", response_format=schema) == {"name": "Ada"}
    sent = server.requests[0].body["response_format"]["json_schema"]["schema"]
    assert sent == schema
