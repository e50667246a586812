"""Each feature through each wire API on each real server, as ``matrix.py`` says: streaming
text, usage, structured output, native tools, ``logprobs=K``."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, Field

from lion_nb import Branch
from lion_nb.models.base import ModelRequest
from lion_nb.signals import StreamDelta
from tests.conformance.matrix import Cell
from tests.conformance.suite import MARKS, cells, model, outcome

pytestmark = MARKS


class City(BaseModel):
    name: str = Field(max_length=40)
    country: str = Field(max_length=40)


WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string", "maxLength": 40}},
        "required": ["city"],
    },
}

_streamed: dict[tuple[str, str], tuple[list[str], Branch]] = {}


async def streamed(
    request: pytest.FixtureRequest, server: str, api: str
) -> tuple[list[str], Branch]:
    """One streamed reply per server and API (the streaming and usage cells read it)."""
    if (server, api) not in _streamed:
        chat_model = model(request.getfixturevalue(server), api, max_tokens=12)
        branch = Branch(chat_model=chat_model)
        deltas: list[str] = []
        branch.subscribe(
            (StreamDelta,),
            lambda s: deltas.append(s.delta) if s.kind == "text" else None,  # type: ignore[attr-defined]
        )
        try:
            await branch.communicate("Say hello to Ada in one short sentence.")
        finally:
            await chat_model.aclose()
        _streamed[server, api] = (deltas, branch)
    return _streamed[server, api]


@pytest.mark.parametrize(("server", "api", "cell"), cells("stream"))
async def test_streaming_text(
    request: pytest.FixtureRequest, server: str, api: str, cell: Cell
) -> None:
    got = await outcome(cell, lambda: streamed(request, server, api))
    if got is None:
        return
    deltas, branch = got
    reply = branch.messages[-1]
    assert len(deltas) >= 2  # it streamed: the text arrived in pieces
    assert "".join(deltas) == reply.text and reply.text.strip()
    assert reply.metadata.get("finish_reason") in ("stop", "length")


@pytest.mark.parametrize(("server", "api", "cell"), cells("usage"))
async def test_usage(request: pytest.FixtureRequest, server: str, api: str, cell: Cell) -> None:
    got = await outcome(cell, lambda: streamed(request, server, api))
    if got is None:
        return
    usage = got[1].messages[-1].metadata.get("usage") or {}
    if cell.outcome == "none":
        assert not usage.get("input_tokens") and not usage.get("output_tokens")
    else:
        assert usage["input_tokens"] > 5 and 0 < usage["output_tokens"] <= 12


@pytest.mark.parametrize(("server", "api", "cell"), cells("structured"))
async def test_structured_output(
    request: pytest.FixtureRequest, server: str, api: str, cell: Cell
) -> None:
    chat_model = model(request.getfixturevalue(server), api, max_tokens=40)
    branch = Branch(chat_model=chat_model)
    try:
        city = await outcome(
            cell,
            lambda: branch.communicate(
                "Which city is the capital of France? Answer as JSON.", response_format=City
            ),
        )
    finally:
        await chat_model.aclose()
    if cell.outcome == "refused" and not cell.pending:
        assert len(branch.messages) == 0  # nothing recorded for a refusal
        return
    assert isinstance(city, City) and city.name.strip()


async def test_structured_output_with_json_object_on_llama_cpp_server(
    llama_cpp_server: Any,
) -> None:
    """What the README told people to do, and what works today on that server."""
    chat_model = model(llama_cpp_server, "chat", max_tokens=40, json_mode="json_object")
    try:
        city = await Branch(chat_model=chat_model).communicate(
            "Which city is the capital of France? Answer as JSON.", response_format=City
        )
    finally:
        await chat_model.aclose()
    assert isinstance(city, City) and city.name.strip()


@pytest.mark.parametrize(("server", "api", "cell"), cells("tools"))
async def test_native_tools_forced(
    request: pytest.FixtureRequest, server: str, api: str, cell: Cell
) -> None:
    """What the server does with one tool and ``tool_choice`` naming it (ReAct's own
    handling of a server that ignores tools is not checked here)."""
    chat_model = model(request.getfixturevalue(server), api, max_tokens=24)
    asked = ModelRequest(
        messages=[{"role": "user", "content": "What is the weather in Paris?"}],
        tools=[WEATHER],
        tool_choice="get_weather",
    )
    try:
        reply = await outcome(cell, lambda: chat_model.complete(asked))
    finally:
        await chat_model.aclose()
    if reply is None:
        return
    if cell.outcome == "called":
        assert [c.name for c in reply.tool_calls] == ["get_weather"]
        assert isinstance(reply.tool_calls[0].arguments.get("city"), str)
    else:
        assert cell.outcome == "ignored"
        assert reply.tool_calls == [] and reply.text.strip()


@pytest.mark.parametrize(("server", "api", "cell"), cells("logprobs"))
async def test_logprobs(request: pytest.FixtureRequest, server: str, api: str, cell: Cell) -> None:
    chat_model = model(request.getfixturevalue(server), api, max_tokens=8)
    branch = Branch(chat_model=chat_model)
    try:
        await outcome(cell, lambda: branch.communicate("Say hi.", logprobs=2))
    finally:
        await chat_model.aclose()
    if cell.outcome == "refused":
        assert len(branch.messages) == 0
        return
    reply = branch.messages[-1]
    assert reply.tokens and "".join(t.text for t in reply.tokens) == reply.text
    assert all(t.logprob <= 0 and 1 <= len(t.top) <= 2 for t in reply.tokens)
