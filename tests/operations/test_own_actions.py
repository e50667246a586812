"""A server that ignores native tools (``capabilities().native_tools is False``) gets lion_nb's
own JSON action requests: no ``tools``/``tool_choice`` on the wire, ``action_requests``
constrained to the offered tools by the response schema, round 1 of ReAct required to call one,
the answer required to be a non-empty string; and lion_nb's own schemas never warn."""

from __future__ import annotations

import json
import re
import warnings

import pytest

from lion_nb import Branch, iModel
from lion_nb.errors import ConfigurationError
from lion_nb.models import capabilities
from lion_nb.models.base import ModelRequest
from lion_nb.models.local import LocalProvider
from lion_nb.models.schema_bounds import UnboundedSchemaWarning
from lion_nb.operations.fields import compose
from lion_nb.operations.own_actions import action_requests_schema, own_request_schema
from lion_nb.operations.react_models import ReActAnalysis
from lion_nb.port.tools import Tool
from tests.servers.chat_server import Reply, start_chat_server


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def shout(text: str) -> str:
    """Say it louder."""
    return text.upper()


@pytest.fixture
def server():
    with start_chat_server() as running:
        yield running
        capabilities.forget(running.base_url)


def model_on(server, *, native_tools: bool | None) -> iModel:
    if native_tools is not None:
        capabilities.remember(server.base_url, native_tools=native_tools)
    return iModel(provider="openai", model="smol", base_url=server.base_url, api_key="sk-test")


def sent_schema(body: dict) -> dict:
    return body["response_format"]["json_schema"]["schema"]


async def test_react_on_a_server_that_ignores_tools_calls_them_through_its_json(server):
    server.script(
        Reply(
            json.dumps(
                {
                    "analysis": "I add them.",
                    "extension_needed": False,
                    "action_requests": [{"function": "add", "arguments": {"a": 2, "b": 3}}],
                }
            )
        ),
        Reply(json.dumps({"answer": "2+3 is 5."})),
    )
    branch = Branch(chat_model=model_on(server, native_tools=False))
    out = await branch.ReAct(
        instruct={"instruction": "What is 2+3? Use the add tool."}, tools=[add]
    )
    assert out == "2+3 is 5."
    results = [m for m in branch.messages if m.role == "action_response"]
    assert [(r.function, r.output) for r in results] == [("add", 5)]

    first, final = (r.body for r in server.requests)
    for body in (first, final):
        assert "tools" not in body and "tool_choice" not in body
    schema = sent_schema(first)
    calls = schema["properties"]["action_requests"]
    assert calls["minItems"] == 1 and calls["maxItems"] == 1  # round 1 must call a tool
    assert "action_requests" in schema["required"]
    assert calls["items"]["properties"]["function"] == {"type": "string", "enum": ["add"]}
    assert calls["items"]["properties"]["arguments"]["required"] == ["a", "b"]
    assert "ActionRequestModel" not in json.dumps(schema)  # the free-form item is gone
    assert schema["properties"]["analysis"]["maxLength"] == 400  # bounded for a grammar
    answer = sent_schema(final)
    assert answer["required"] == ["answer"]
    assert answer["properties"]["answer"]["type"] == "string"
    pattern = re.compile(answer["properties"]["answer"]["pattern"])
    assert pattern.match("2+3 is 5.") and pattern.match("5")
    assert not any(pattern.match(junk) for junk in ("", "{", '{"a": 1}', "[5]", 'say "5"'))


async def test_a_server_with_native_tools_or_unknown_keeps_them(server):
    server.script(
        Reply(tool_calls=[{"name": "add", "arguments": {"a": 1, "b": 1}, "id": "c1"}]),
        Reply(json.dumps({"analysis": "2", "extension_needed": False})),
        Reply(json.dumps({"answer": "2"})),
    )
    branch = Branch(chat_model=model_on(server, native_tools=None))
    assert await branch.ReAct("1+1?", tools=[add]) == "2"
    first = server.requests[0].body
    assert [t["function"]["name"] for t in first["tools"]] == ["add"]
    assert "minItems" not in json.dumps(sent_schema(first)["properties"]["action_requests"])


@pytest.mark.parametrize(
    ("choice", "expect"),
    [("none", {"maxItems": 0}), ("auto", {"maxItems": 2}), ("shout", {"minItems": 1})],
)
async def test_operate_keeps_tool_choice_meaning_in_the_schema(server, choice, expect):
    server.script(Reply(json.dumps({"action_requests": []})))
    branch = Branch(chat_model=model_on(server, native_tools=False))
    await branch.operate(instruction="hi", tools=[add, shout], tool_choice=choice)
    body = server.requests[0].body
    assert "tools" not in body and "tool_choice" not in body
    calls = sent_schema(body)["properties"]["action_requests"]
    assert {k: calls[k] for k in expect} == expect
    if choice == "shout":
        assert calls["items"]["properties"]["function"]["enum"] == ["shout"]


def test_several_tools_are_a_union_and_an_unknown_forced_name_is_refused():
    tools = [Tool(add), Tool(shout)]
    schema = action_requests_schema(tools, "required")
    names = [v["properties"]["function"]["enum"][0] for v in schema["items"]["anyOf"]]
    assert names == ["add", "shout"] and schema["minItems"] == 1 and schema["maxItems"] == 2
    with pytest.raises(ConfigurationError, match=r"'mul'.*add, shout"):
        action_requests_schema(tools, "mul")


def test_lionnb_own_react_schema_does_not_warn_on_the_embedded_model():
    request_fmt, _ = compose(ReActAnalysis, reason=False, actions=True)
    provider = LocalProvider()
    with pytest.warns(UnboundedSchemaWarning):  # the free-form arguments of the generic form
        provider.plan(ModelRequest(messages=[], response_schema=request_fmt.model_json_schema()))
    own = own_request_schema(request_fmt, [Tool(add)], "required")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plan = provider.plan(ModelRequest(messages=[], response_schema=own))
    grammar_schema = plan.kwargs["response_format"]["schema"]
    assert grammar_schema["properties"]["action_requests"]["minItems"] == 1


def test_a_users_free_form_tool_may_still_warn():
    def tag(labels: dict) -> str:
        """Tag with free-form labels."""
        return "ok"

    request_fmt, _ = compose(ReActAnalysis, reason=False, actions=True)
    own = own_request_schema(request_fmt, [Tool(tag)], None)
    with pytest.warns(UnboundedSchemaWarning, match="labels"):
        LocalProvider().plan(ModelRequest(messages=[], response_schema=own))


async def test_only_round_one_must_call_a_tool_and_auto_leaves_it_to_the_model(server):
    def reply(more: bool, *calls: dict) -> Reply:
        body = {"analysis": "a", "extension_needed": more, "action_requests": list(calls)}
        return Reply(json.dumps(body))

    server.script(
        reply(True, {"function": "add", "arguments": {"a": 2, "b": 3}}),
        reply(False),
        Reply(json.dumps({"answer": "5"})),
        reply(False),
        Reply(json.dumps({"answer": "no tool needed"})),
    )
    branch = Branch(chat_model=model_on(server, native_tools=False))
    assert await branch.ReAct("2+3?", tools=[add], max_extensions=2) == "5"
    rounds = [sent_schema(r.body)["properties"].get("action_requests") for r in server.requests]
    assert rounds[0]["minItems"] == 1 and "minItems" not in rounds[1] and rounds[2] is None
    assert await branch.ReAct("hi", tools=[add], tool_choice="auto") == "no tool needed"
    assert "minItems" not in sent_schema(server.requests[3].body)["properties"]["action_requests"]
