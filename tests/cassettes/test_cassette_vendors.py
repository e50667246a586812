"""Cassettes over the vendor providers (Gemini, the OpenAI Responses API) and their loopback
servers: a round trip with thinking and a tool call replays identically with the server
stopped, without building the provider, and the key never reaches the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import lion_nb
from lion_nb import Branch, iModel
from lion_nb.errors import ServerError
from tests.servers.chat_server import Reply
from tests.servers.vendor_servers import start_gemini_server, start_responses_server
from tests.support.cassette_traces import Trace, messages

KEY = "vendor-key-Zq81TESTKEY0123456789"

VENDORS = {
    "gemini": (start_gemini_server, {"provider": "gemini", "model": "gemini-2.5-flash"}),
    "responses": (
        start_responses_server,
        {"provider": "openai", "model": "gpt-5-mini", "api": "responses"},
    ),
}


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def model_for(vendor: str, base_url: str, **kw: Any) -> iModel:
    return iModel(base_url=base_url, max_retries=0, **VENDORS[vendor][1], **kw)


@pytest.mark.parametrize("vendor", sorted(VENDORS))
async def test_round_trip_replays_with_the_server_stopped(tmp_path: Path, vendor: str) -> None:
    path = tmp_path / f"{vendor}.jsonl"
    server = VENDORS[vendor][0]()
    server.script(
        Reply("Paris.", reasoning="France: Paris.", chunk_size=3),
        Reply(tool_calls=[{"name": "add", "arguments": {"a": 2, "b": 3}, "id": "call_1"}]),
    )
    try:
        model = model_for(vendor, server.base_url, api_key=KEY)
        with lion_nb.cassette(path, mode="record", speed=None):
            branch = Branch(system="Be brief.", chat_model=model, tools=[add])
            trace = Trace(branch)
            await branch.communicate("Capital of France?")
            await branch.operate(instruction="2+3?", actions=True)
        recorded = (messages(branch), trace.deltas(), trace.signals())
        await model.aclose()
        port = server.port
    finally:
        server.stop()
    assert len(server.requests) == 2
    text = path.read_text()
    assert KEY not in text and "France: Paris." in text

    model = model_for(vendor, f"http://127.0.0.1:{port}")  # no key: it is not needed
    with lion_nb.cassette(path, mode="replay", speed=None):
        branch = Branch(system="Be brief.", chat_model=model, tools=[add])
        trace = Trace(branch)
        await branch.communicate("Capital of France?")
        await branch.operate(instruction="2+3?", actions=True)
    assert (messages(branch), trace.deltas(), trace.signals()) == recorded
    assert trace.deltas()[:2] == [("thinking", "Fra", 3), ("thinking", "nce", 6)]
    reply = branch.messages[2]
    assert reply.metadata["thinking"] == "France: Paris." and reply.metadata["replayed"]
    assert [m.role for m in branch.messages][-2:] == ["action_request", "action_response"]
    assert branch.messages[-1].output == 5
    assert model._provider is None  # replay never built the HTTP provider


@pytest.mark.parametrize("vendor", sorted(VENDORS))
async def test_a_mid_stream_failure_replays_as_the_same_error(tmp_path: Path, vendor: str) -> None:
    path = tmp_path / f"{vendor}.jsonl"
    with VENDORS[vendor][0]() as server:
        server.script(Reply("Half an ans", chunk_size=4, fail_after=4))
        model = model_for(vendor, server.base_url, api_key=KEY)
        with lion_nb.cassette(path, mode="record", speed=None), pytest.raises(ServerError) as live:
            await Branch(chat_model=model).communicate("hi")
        await model.aclose()
    model = model_for(vendor, server.base_url)
    with lion_nb.cassette(path, mode="replay", speed=None), pytest.raises(ServerError) as again:
        await Branch(chat_model=model).communicate("hi")
    assert str(again.value) == str(live.value)


async def test_responses_logprobs_replay_as_the_same_tokens(tmp_path: Path) -> None:
    path = tmp_path / "responses-logprobs.jsonl"
    server = start_responses_server()
    server.script(Reply("Paris is the capital.", chunk_size=5))
    try:
        model = model_for("responses", server.base_url, api_key=KEY, logprobs=2)
        with lion_nb.cassette(path, mode="record", speed=None):
            branch = Branch(chat_model=model)
            trace = Trace(branch)
            await branch.communicate("Capital of France?")
        recorded = (branch.messages[-1].tokens, trace.deltas())
        await model.aclose()
        port = server.port
    finally:
        server.stop()
    assert recorded[0] is not None and len(recorded[0]) == 5

    model = model_for("responses", f"http://127.0.0.1:{port}", logprobs=2)
    with lion_nb.cassette(path, mode="replay", speed=None):
        branch = Branch(chat_model=model)
        trace = Trace(branch)
        await branch.communicate("Capital of France?")
    assert (branch.messages[-1].tokens, trace.deltas()) == recorded
    assert branch.messages[-1].tokens[0].top == [("Paris", -0.05), (" alt1", -1.05)]
