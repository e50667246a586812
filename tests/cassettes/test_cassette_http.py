"""Cassettes over the OpenAI-compatible HTTP provider and the real loopback server: a round
trip replayed after the server is stopped, a recorded HTTP error, and secrets that never reach
the file."""

from __future__ import annotations

from pathlib import Path

import pytest

import lion_nb
from lion_nb import Branch, iModel
from lion_nb.errors import CassetteMiss, ConnectionLost, RateLimitError
from tests.servers.chat_server import ErrorReply, Reply, start_chat_server
from tests.support.cassette_traces import Trace, messages

KEY = "sk-live-Zq81TESTKEY0123456789abcdef"
HEADER_SECRET = "hdr-secret-Y7f3kq0p"
URL_PASSWORD = "urlpass-Qm4x9s"
ENV_TOKEN = "envtok-Lk29dj3hs7"


def http_model(base_url: str, **kw) -> iModel:
    return iModel(provider="openai", model="test-model", base_url=base_url, max_retries=0, **kw)


async def test_round_trip_replays_with_the_server_stopped(tmp_path: Path) -> None:
    path = tmp_path / "http.jsonl"
    server = start_chat_server()
    reasoned = Reply("The capital of France is Paris.", chunk_size=5, reasoning="France: Paris.")
    server.script(reasoned, Reply("Rome.", chunk_size=2))
    results = []
    try:
        model = http_model(server.base_url)
        branch = Branch(system="Be brief.", chat_model=model)
        trace = Trace(branch)
        with lion_nb.cassette(path, mode="record", speed=None):
            await branch.communicate("Capital of France?")
            await branch.communicate("And of Italy?")
        results.append((messages(branch), trace.deltas(), trace.signals()))
        await model.aclose()
        port = server.port
    finally:
        server.stop()
    assert len(server.requests) == 2

    # Another base URL (the port is gone, and base URLs are not part of a request's identity).
    model = http_model(f"http://127.0.0.1:{port}/v1")
    branch = Branch(system="Be brief.", chat_model=model)
    trace = Trace(branch)
    with lion_nb.cassette(path, mode="replay", speed=None):
        await branch.communicate("Capital of France?")
        await branch.communicate("And of Italy?")
    results.append((messages(branch), trace.deltas(), trace.signals()))
    assert results[0] == results[1]
    assert results[1][1][:3] == [
        ("thinking", "Franc", 5),
        ("thinking", "e: Pa", 10),
        ("thinking", "ris.", 14),
    ]
    assert model._provider is None  # replay never even built the HTTP provider

    with pytest.raises(ConnectionLost):  # and the server really is gone
        await Branch(chat_model=model).communicate("Capital of France?")


async def test_an_unreachable_server_is_not_recorded(tmp_path: Path) -> None:
    path = tmp_path / "http.jsonl"
    model = http_model("http://127.0.0.1:9/v1")  # nothing listens on port 9
    with lion_nb.cassette(path, mode="auto"), pytest.raises(CassetteMiss) as info:
        await Branch(chat_model=model).communicate("hi")
    assert "not on the cassette" in str(info.value) and "cannot be used here" in str(info.value)
    assert isinstance(info.value.__cause__, ConnectionLost)
    assert not path.exists()  # "cannot connect" is this machine's state, not the model's answer


async def test_a_recorded_429_replays_with_its_retry_after(tmp_path: Path) -> None:
    path = tmp_path / "http.jsonl"
    with start_chat_server() as server:
        server.script(ErrorReply(429, headers={"Retry-After": "7"}))
        model = http_model(server.base_url)
        with lion_nb.cassette(path, mode="record"), pytest.raises(RateLimitError) as live:
            await Branch(chat_model=model).communicate("hi")
        await model.aclose()
    model = http_model("http://127.0.0.1:9/v1")
    with lion_nb.cassette(path, mode="replay"), pytest.raises(RateLimitError) as replay:
        await Branch(chat_model=model).communicate("hi")
    assert str(replay.value) == str(live.value)
    assert (replay.value.status, replay.value.retry_after) == (429, 7.0)
    assert replay.value.body == live.value.body


async def test_no_secret_reaches_the_cassette(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", ENV_TOKEN)
    path = tmp_path / "secret.jsonl"
    with start_chat_server() as server:
        # The server echoes the prompt (which quotes the token), then fails with a body that
        # quotes the key.
        server.script(
            Reply(f"You said {ENV_TOKEN} and {KEY}"),
            ErrorReply(401, body={"error": {"message": f"bad key {KEY}", "code": "invalid"}}),
        )
        url = server.base_url.replace("http://", f"http://lion:{URL_PASSWORD}@")
        model = http_model(url, api_key=KEY, headers={"X-Api-Key": HEADER_SECRET})
        branch = Branch(chat_model=model)
        with lion_nb.cassette(path, mode="record"):
            await branch.communicate(f"Remember {ENV_TOKEN}")
            with pytest.raises(lion_nb.errors.AuthenticationError):
                await branch.communicate("again")
        await model.aclose()
        sent = server.requests[0].headers
    assert sent["x-api-key"] == HEADER_SECRET and sent["authorization"]  # credentials were sent
    basic = sent["authorization"].split()[-1]
    text = path.read_text()
    for secret in (KEY, HEADER_SECRET, URL_PASSWORD, ENV_TOKEN, basic, "Bearer", "uthorization"):
        assert secret not in text, secret
    assert text.count("[REDACTED]") >= 3

    # The redacted recording still replays the same requests (matched after redaction).
    model = http_model("http://127.0.0.1:9/v1", api_key=KEY)
    branch = Branch(chat_model=model)
    with lion_nb.cassette(path, mode="replay"):
        assert (
            await branch.communicate(f"Remember {ENV_TOKEN}")
            == "You said [REDACTED] and [REDACTED]"
        )
    with lion_nb.cassette(path, mode="replay"), pytest.raises(CassetteMiss) as miss:
        await Branch(chat_model=model).communicate("something else")
    assert ENV_TOKEN not in str(miss.value) or "[REDACTED]" in str(miss.value)


async def test_streamed_tool_call_arguments_replay_delta_for_delta(tmp_path: Path) -> None:
    from lion_nb.models.base import ModelRequest

    path = tmp_path / "http.jsonl"
    request = ModelRequest(
        messages=[{"role": "user", "content": "weather in Rome?"}],
        tools=[{"name": "weather", "parameters": {"type": "object", "properties": {}}}],
        tool_choice="required",
    )
    seen = []
    with start_chat_server() as server:
        server.script(
            Reply(tool_calls=[{"name": "weather", "arguments": {"city": "Rome"}, "id": "c9"}])
        )
        model = http_model(server.base_url)
        got: list = []
        with lion_nb.cassette(path, mode="record"):
            live = await model.complete(request, lambda *a, **k: got.append((a, k)))
        seen.append(got)
        await model.aclose()
    got = []
    with lion_nb.cassette(path, mode="replay", speed=None):
        replay = await http_model("http://127.0.0.1:9/v1").complete(
            request, lambda *a, **k: got.append((a, k))
        )
    seen.append(got)
    assert seen[0] == seen[1] and len(seen[1]) > 1  # the arguments streamed in pieces
    assert all(a[0] == "tool_args" and k["call_id"] == "c9" for a, k in seen[1])
    assert replay.tool_calls == live.tool_calls and replay.finish_reason == "tool_calls"
    assert replay.replayed is not None and live.replayed is None
