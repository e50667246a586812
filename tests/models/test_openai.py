"""OpenAIProvider against a real chat-completions server on 127.0.0.1 (tests/servers)."""

from __future__ import annotations

import asyncio
import email.utils
import gc
import itertools
import json
import logging
import socket
import time
import traceback
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lion_nb.errors import (
    AuthenticationError,
    ConfigurationError,
    ConnectionLost,
    MalformedResponse,
    ProviderError,
    ProviderTimeout,
    RateLimitError,
    ServerError,
)
from lion_nb.models import iModel
from lion_nb.models.base import ModelRequest
from lion_nb.models.openai import OpenAIProvider
from lion_nb.usage import Usage
from tests.servers import ChatServer, ErrorReply, RawReply, Reply, Stall, start_chat_server

KEY = "sk-test-0123456789abcdefSECRET"


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with start_chat_server() as s:
        yield s


class Sink:
    """Records what the provider reports through ``on_delta``."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str | None, str | None]] = []

    def __call__(
        self, kind: str, delta: str, *, name: str | None = None, call_id: str | None = None
    ) -> None:
        self.calls.append((kind, delta, name, call_id))

    def joined(self, kind: str) -> str:
        return "".join(d for k, d, _, _ in self.calls if k == kind)


@pytest.fixture
async def make(server: ChatServer) -> AsyncIterator[Callable[..., OpenAIProvider]]:
    """Build providers aimed at the server, with a recording sleep; all closed afterwards."""
    made: list[OpenAIProvider] = []
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    def build(**kw: Any) -> OpenAIProvider:
        kw.setdefault("model", "test-model")
        kw.setdefault("base_url", server.base_url)
        kw.setdefault("sleep", sleep)
        provider = OpenAIProvider(**kw)
        made.append(provider)
        return provider

    build.sleeps = sleeps  # type: ignore[attr-defined]
    yield build
    for provider in made:
        await provider.aclose()


def ask(text: str = "hello", **kw: Any) -> ModelRequest:
    return ModelRequest(messages=[{"role": "user", "content": text}], **kw)


def sse(*chunks: dict[str, Any], done: bool = True) -> list[bytes]:
    body = [b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks]
    return [*body, b"data: [DONE]\n\n"] if done else body


def text_chunk(text: str) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {"content": text}}]}


STOP = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
"""The chunk that ends a complete reply."""


# -- request shape ---------------------------------------------------------------------------


async def test_request_body_and_headers(server: ChatServer, make) -> None:
    provider = make(temperature=0.2, headers={"X-Title": "lion_nb tests"})
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is 2+2?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 2, "b": 2}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "4"},
    ]
    add = {
        "name": "add",
        "description": "Add two numbers.",
        "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}},
    }
    formatted = {"type": "function", "function": {"name": "mul", "parameters": {"type": "object"}}}
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}}
    request = ModelRequest(
        messages=messages,
        tools=[add, formatted],
        tool_choice="add",
        response_schema=schema,
        response_name="Answer model!",
        options={"seed": 7, "max_tokens": 50, "timeout": 5, "temperature": 0.0},
    )
    await provider.complete(request)
    got = server.last_request
    assert got.path == "/v1/chat/completions"
    body = got.body
    assert body["model"] == "test-model"
    assert body["messages"] == messages  # the system role travels as a real system message
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "add",
                "description": "Add two numbers.",
                "parameters": add["parameters"],
            },
        },
        formatted,
    ]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "add"}}
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Answer_model_", "schema": schema, "strict": False},
    }
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert (body["seed"], body["max_tokens"], body["temperature"]) == (7, 50, 0.0)
    assert "timeout" not in body  # lion_nb's own option: the request timeout, not a body field
    assert got.headers["x-title"] == "lion_nb tests"
    assert "authorization" not in got.headers  # loopback works without any key


async def test_authorization_only_with_a_key(server: ChatServer, make, monkeypatch) -> None:
    await make(api_key=KEY).complete(ask())
    assert server.last_request.headers["authorization"] == f"Bearer {KEY}"
    # A key from the environment belongs to the hosted API: not sent to a loopback server.
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    await make().complete(ask())
    assert "authorization" not in server.last_request.headers
    await make(api_key_env=None).complete(ask())
    assert "authorization" not in server.last_request.headers


async def test_environment_key_is_sent_to_a_remote_base_url(monkeypatch) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        body = b"".join(
            sse(text_chunk("hi"), {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        )
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    monkeypatch.setenv("MY_KEY", KEY)
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        provider = OpenAIProvider(
            "m", base_url="https://api.example.com/v1", api_key_env="MY_KEY", http_client=client
        )
        assert (await provider.complete(ask())).text == "hi"
        await provider.aclose()  # an injected client is not closed by the provider
        assert not client.is_closed
    assert seen[0].headers["authorization"] == f"Bearer {KEY}"
    assert str(seen[0].url) == "https://api.example.com/v1/chat/completions"


async def test_a_tool_without_a_name_is_rejected_before_sending(server: ChatServer, make) -> None:
    with pytest.raises(ConfigurationError, match="needs a 'name'"):
        await make().complete(ask(tools=[{"description": "nameless", "parameters": {}}]))
    assert server.requests == []


# -- replies ---------------------------------------------------------------------------------


async def test_streamed_deltas_join_to_the_final_text(server: ChatServer, make) -> None:
    text = "Grüße aus dem Test — 世界 🌍, in many small pieces."
    server.script(
        Reply(
            text, chunk_size=3, usage={"prompt_tokens": 11, "completion_tokens": 7, "cost": 0.002}
        )
    )
    sink = Sink()
    response = await make().complete(ask(), sink)
    assert response.text == text
    assert sink.joined("text") == text
    assert len([c for c in sink.calls if c[0] == "text"]) == -(-len(text) // 3)
    assert response.usage == Usage(input_tokens=11, output_tokens=7, total_cost_usd=0.002)
    assert response.finish_reason == "stop"
    assert response.model == "test-model"
    assert response.tool_calls == []


async def test_reasoning_deltas_become_thinking(server: ChatServer, make) -> None:
    server.script(Reply("42", reasoning="Let me think.", chunk_size=4))
    sink = Sink()
    response = await make().complete(ask(), sink)
    assert response.thinking == "Let me think." == sink.joined("thinking")
    assert response.text == "42"
    assert [k for k, *_ in sink.calls][:4] == ["thinking"] * 4  # thinking streams first


async def test_tool_calls_are_assembled_from_argument_deltas(server: ChatServer, make) -> None:
    calls = [
        {"name": "search", "id": "call_s", "arguments": {"query": "lion", "limit": 3}},
        {"name": "add", "id": "call_a", "arguments": {"a": 2, "b": 40}},
    ]
    server.script(Reply("Checking.", tool_calls=calls, arg_chunk_size=5))
    sink = Sink()
    response = await make().complete(ask(), sink)
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("call_s", "search", {"query": "lion", "limit": 3}),
        ("call_a", "add", {"a": 2, "b": 40}),
    ]
    assert response.finish_reason == "tool_calls"
    assert response.text == "Checking."
    for call in calls:
        pieces = [d for k, d, name, cid in sink.calls if k == "tool_args" and cid == call["id"]]
        assert all(n == call["name"] for k, _, n, cid in sink.calls if cid == call["id"])
        assert len(pieces) > 1 and "".join(pieces) == json.dumps(call["arguments"])


async def test_malformed_tool_arguments(server: ChatServer, make) -> None:
    server.script(Reply("", tool_calls=[{"name": "f", "arguments": '{"a": 1,'}]))
    with pytest.raises(MalformedResponse) as info:
        await make().complete(ask())
    assert info.value.body == '{"a": 1,' and "'f'" in str(info.value)
    assert len(server.requests) == 1


async def test_non_streaming_json_body_is_accepted(server: ChatServer, make) -> None:
    server.script(
        Reply(
            "whole answer",
            json_body=True,
            reasoning="hm",
            tool_calls=[{"name": "f", "arguments": {"x": 1}}],
            usage={"prompt_tokens": 5, "completion_tokens": 2},
        )
    )
    sink = Sink()
    response = await make().complete(ask(), sink)
    assert (response.text, response.thinking) == ("whole answer", "hm")
    assert [(c.name, c.arguments) for c in response.tool_calls] == [("f", {"x": 1})]
    assert response.usage == Usage(5, 2)
    assert sink.joined("text") == "whole answer"  # reported once, so views still show it
    assert response.raw["object"] == "chat.completion"


async def test_event_stream_with_a_wrong_content_type(server: ChatServer, make) -> None:
    body = sse(text_chunk("plain "), text_chunk("text"), STOP)
    server.script(RawReply(body, content_type="text/plain"))
    assert (await make().complete(ask())).text == "plain text"


async def test_default_reply_echoes_and_concurrent_calls_stay_apart(make) -> None:
    provider = make()
    replies = await asyncio.gather(*(provider.complete(ask(f"message {i}")) for i in range(30)))
    assert [r.text for r in replies] == [f"message {i}" for i in range(30)]


async def test_through_imodel_registry(server: ChatServer, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-should-not-travel")
    model = iModel(
        provider="openai", model="m1", base_url=server.base_url, api_key=KEY, temperature=0
    )
    try:
        assert (await model.complete(ask("via imodel"))).text == "via imodel"
        assert server.last_request.body["temperature"] == 0
        assert server.last_request.headers["authorization"] == f"Bearer {KEY}"
        assert KEY not in repr(model) and KEY not in repr(model.provider)
    finally:
        await model.provider.aclose()
    ollama = iModel(provider="ollama", model="llama3.2", base_url=server.base_url)
    try:
        assert (await ollama.complete(ask("local"))).text == "local"
        assert "authorization" not in server.last_request.headers
    finally:
        await ollama.provider.aclose()


# -- errors and retries ----------------------------------------------------------------------


async def test_401_is_authentication_error_not_retried(server: ChatServer, make) -> None:
    server.script(ErrorReply(401, body={"error": {"message": "Invalid key", "code": "bad_key"}}))
    with pytest.raises(AuthenticationError) as info:
        await make().complete(ask())
    assert info.value.status == 401 and "Invalid key" in str(info.value)
    assert "pass api_key=" in str(info.value)  # says how to provide a key
    assert len(server.requests) == 1 and make.sleeps == []


async def test_429_waits_retry_after_then_succeeds(server: ChatServer, make) -> None:
    server.script(ErrorReply(429, headers={"Retry-After": "2"}), Reply("after the wait"))
    sink = Sink()
    response = await make().complete(ask(), sink)
    assert response.text == "after the wait" == sink.joined("text")
    assert make.sleeps == [2.0]
    assert len(server.requests) == 2


async def test_429_exhausted_raises_rate_limit_error(server: ChatServer, make) -> None:
    server.script(*[ErrorReply(429, headers={"retry-after-ms": "250"})] * 3)
    with pytest.raises(RateLimitError) as info:
        await make(max_retries=2).complete(ask())
    assert info.value.retry_after == 0.25 and info.value.status == 429
    assert make.sleeps == [0.25, 0.25]
    assert len(server.requests) == 3


async def test_retry_after_forms_and_cap(server: ChatServer, make) -> None:
    soon = email.utils.formatdate(time.time() + 3, usegmt=True)
    server.script(
        ErrorReply(429, headers={"Retry-After": soon}),
        ErrorReply(429, headers={"Retry-After": "3600"}),
        Reply("ok"),
    )
    assert (await make(max_retry_after=5).complete(ask())).text == "ok"
    assert 1.0 <= make.sleeps[0] <= 3.0 and make.sleeps[1] == 5


async def test_insufficient_quota_is_not_retried(server: ChatServer, make) -> None:
    body = {"error": {"message": "You exceeded your quota", "code": "insufficient_quota"}}
    server.script(ErrorReply(429, body=body), Reply("never"))
    with pytest.raises(RateLimitError) as info:
        await make().complete(ask())
    assert not info.value.retryable and len(server.requests) == 1


async def test_5xx_retried_with_backoff_then_succeeds(server: ChatServer, make) -> None:
    server.script(ErrorReply(500), ErrorReply(503), Reply("recovered"))
    response = await make(max_retries=2, backoff=0.5).complete(ask())
    assert response.text == "recovered"
    assert len(make.sleeps) == 2
    assert 0.375 <= make.sleeps[0] <= 0.5 and 0.75 <= make.sleeps[1] <= 1.0  # jittered doubling


async def test_5xx_exhausted_raises_server_error(server: ChatServer, make) -> None:
    server.script(*[ErrorReply(502, body="<html>bad gateway</html>")] * 2)
    with pytest.raises(ServerError) as info:
        await make(max_retries=1).complete(ask())
    assert info.value.status == 502 and "bad gateway" in str(info.value)
    assert len(server.requests) == 2 and server.pending == 0


async def test_400_is_a_plain_provider_error(server: ChatServer, make) -> None:
    server.script(ErrorReply(400, body={"error": {"message": "model 'x' not found"}}))
    with pytest.raises(ProviderError) as info:
        await make().complete(ask())
    assert type(info.value) is ProviderError and "model 'x' not found" in str(info.value)
    assert len(server.requests) == 1


async def test_timeout_before_any_byte_is_retried_then_raised(server: ChatServer, make) -> None:
    server.script(Stall(), Stall())
    started = time.monotonic()
    with pytest.raises(ProviderTimeout):
        await make(timeout=0.2, max_retries=1).complete(ask())
    assert time.monotonic() - started < 3
    assert len(server.requests) == 2 and len(make.sleeps) == 1


async def test_timeout_option_per_request(server: ChatServer, make) -> None:
    server.script(Stall())
    with pytest.raises(ProviderTimeout):
        await make(max_retries=0).complete(ask(options={"timeout": 0.2}))


async def test_stall_mid_stream_keeps_partial_text_and_is_not_retried(server, make) -> None:
    server.script(Reply("abcdefgh", chunk_size=2, stall_after=2))
    sink = Sink()
    with pytest.raises(ProviderTimeout) as info:
        await make(timeout=0.5).complete(ask(), sink)
    assert info.value.partial_text == "abcd" == sink.joined("text")
    assert len(server.requests) == 1


async def test_connection_dropped_mid_stream(server: ChatServer, make) -> None:
    server.script(Reply("Hello world, this reply is cut.", chunk_size=3, drop_after=4))
    sink = Sink()
    with pytest.raises(ConnectionLost) as info:
        await make().complete(ask(), sink)
    assert info.value.partial_text == "Hello world," == sink.joined("text")
    assert len(server.requests) == 1  # text was shown: repeating would be wrong


async def test_stream_cut_mid_event(server: ChatServer, make) -> None:
    # Close-delimited body: the client sees a clean EOF, only the SSE framing reveals the cut.
    server.script(Reply("abcdef", chunk_size=2, drop_after=2, cut="mid_event", framing="close"))
    with pytest.raises(ConnectionLost, match="middle of an event") as info:
        await make().complete(ask())
    assert info.value.partial_text == "abcd"


async def test_stream_ending_without_done(server: ChatServer, make) -> None:
    server.script(Reply("half", framing="close", done=False, finish_reason=""))
    with pytest.raises(ConnectionLost, match=r"before \[DONE\]") as info:
        await make().complete(ask())
    assert info.value.partial_text == "half"
    # A finish_reason without [DONE] is a complete answer.
    server.script(Reply("whole", framing="close", done=False))
    assert (await make().complete(ask())).text == "whole"


async def test_connection_refused(make) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(ConnectionLost, match="cannot reach"):
        await make(base_url=f"http://127.0.0.1:{port}/v1", max_retries=2).complete(ask())
    assert len(make.sleeps) == 2


@pytest.mark.parametrize(
    ("reply", "partial"),
    [
        (RawReply(b"<html>not an API</html>", content_type="text/html"), ""),
        (RawReply(b"[1, 2, 3]"), ""),
        (RawReply(b'{"id": "x", "choices": {"a": 1}}'), ""),
        (
            RawReply(
                [*sse(text_chunk("ok so far"), done=False), b"data: {oops\n\n"],
                content_type="text/event-stream",
            ),
            "ok so far",
        ),
        (
            RawReply(
                sse({"choices": [{"index": 0, "delta": "text"}]}), content_type="text/event-stream"
            ),
            "",
        ),
    ],
    ids=["html", "json-list", "choices-object", "bad-event-json", "delta-not-object"],
)
async def test_malformed_bodies(server: ChatServer, make, reply: RawReply, partial: str) -> None:
    server.script(reply)
    with pytest.raises(MalformedResponse) as info:
        await make().complete(ask())
    assert info.value.partial_text == partial
    assert len(server.requests) == 1


async def test_error_event_mid_stream(server: ChatServer, make) -> None:
    error = {"error": {"message": "overloaded", "code": "server_error"}}
    server.script(RawReply(sse(text_chunk("Hi"), error), content_type="text/event-stream"))
    with pytest.raises(ServerError, match="overloaded") as info:
        await make().complete(ask())
    assert info.value.partial_text == "Hi" and len(server.requests) == 1


async def test_unknown_event_types_and_comments_are_skipped(server: ChatServer, make) -> None:
    body = [b": keep-alive\n\n", b"event: ping\ndata: {}\n\n", *sse(text_chunk("fine"), STOP)]
    server.script(RawReply(body, content_type="text/event-stream"))
    assert (await make().complete(ask())).text == "fine"


# -- closing ---------------------------------------------------------------------------------


async def test_cancelling_a_call_closes_the_stream(server: ChatServer, make) -> None:
    server.script(Reply("x" * 400, chunk_size=1, delay=0.01))
    first = asyncio.Event()
    task = asyncio.create_task(make().complete(ask(), lambda *a, **k: first.set()))
    await asyncio.wait_for(first.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(server.wait_for_disconnects, 1)


async def test_a_failing_sink_ends_the_call_and_closes_the_stream(server, make) -> None:
    server.script(Reply("y" * 400, chunk_size=1, delay=0.01))

    def sink(kind: str, delta: str, **kw: Any) -> None:
        raise RuntimeError("observer broke")

    with pytest.raises(RuntimeError, match="observer broke"):
        await make().complete(ask(), sink)
    assert await asyncio.to_thread(server.wait_for_disconnects, 1)


# -- secrets ---------------------------------------------------------------------------------


async def test_key_never_appears(server: ChatServer, make, caplog, monkeypatch) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    provider = make(api_key=KEY, headers={"X-Api-Key": KEY + "-header"}, max_retries=1)
    echo_key = {"error": {"message": f"Incorrect API key provided: {KEY}"}}
    server.script(
        ErrorReply(401, body=echo_key),
        ErrorReply(500, body=f"upstream rejected {KEY}-header"),
        ErrorReply(500, body=echo_key),
        RawReply(f"<p>{KEY}</p>".encode(), content_type="text/html"),
        RawReply(
            sse(text_chunk("partial"), {"error": {"message": KEY}}),
            content_type="text/event-stream",
        ),
    )
    errors: list[BaseException] = []
    for _ in range(4):
        with pytest.raises(ProviderError) as info:
            await provider.complete(ask())
        errors.append(info.value)
    assert [type(e) for e in errors] == [
        AuthenticationError,
        ServerError,
        MalformedResponse,
        ProviderError,
    ]
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"  # it was really sent
    shown = [repr(provider), caplog.text]
    for error in errors:
        shown += [
            str(error),
            repr(error),
            str(error.body),
            *map(str, error.args),
            "".join(traceback.format_exception(error)),
        ]
    for text in shown:
        assert KEY not in text
    assert "[REDACTED]" in str(errors[0])


def test_one_provider_across_event_loops_leaks_nothing(server: ChatServer) -> None:
    # Scripts and sync helpers call asyncio.run repeatedly: each loop gets its own client, and
    # the client is closed when its loop shuts down even without aclose() (an unclosed socket
    # would surface here as an unraisable ResourceWarning, an error under this suite's filters).
    provider = OpenAIProvider("m", base_url=server.base_url)
    assert asyncio.run(provider.complete(ask("one"))).text == "one"
    assert asyncio.run(provider.complete(ask("two"))).text == "two"
    asyncio.run(provider.aclose())
    del provider
    gc.collect()


FOX = "The quick brown fox — jumps over 🦊 the lazy dog."
FOX_BODY = b"".join(
    sse(
        *(text_chunk(FOX[i : i + 5]) for i in range(0, len(FOX), 5)),
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    )
)


@pytest.fixture
def fox_runner(server: ChatServer) -> Iterator[Callable[[], str]]:
    """One loop and one provider for all hypothesis examples (a client per example would spend
    most of the time building TLS contexts)."""
    with asyncio.Runner() as runner:
        provider = OpenAIProvider("m", base_url=server.base_url)
        yield lambda: runner.run(provider.complete(ask())).text
        runner.run(provider.aclose())


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cuts=st.lists(st.integers(0, len(FOX_BODY)), max_size=6), end=st.integers(0, len(FOX_BODY)))
def test_random_splits_and_truncations_over_http(server: ChatServer, fox_runner, cuts, end) -> None:
    # The body arrives in arbitrary pieces and may be cut anywhere (a clean EOF): the reply is
    # either complete and exact, or ConnectionLost keeping exactly a prefix of the text.
    bounds = [0, *sorted(min(c, end) for c in cuts), end]
    parts = [FOX_BODY[a:b] for a, b in itertools.pairwise(bounds) if a < b]
    server.script(RawReply(parts, content_type="text/event-stream", drop=True))
    requests = len(server.requests)
    try:
        text = fox_runner()
    except ConnectionLost as exc:
        assert FOX.startswith(exc.partial_text)
        assert end < len(FOX_BODY)
    else:
        assert text == FOX
        assert end >= FOX_BODY.index(b"data: [DONE]")  # only a cut after the finish event
    assert len(server.requests) == requests + 1 and server.pending == 0  # never retried


def test_json_object_mode_sends_the_llama_cpp_server_form():
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    request = ModelRequest(messages=[{"role": "user", "content": "x"}], response_schema=schema)
    body, _ = OpenAIProvider(model="m", json_mode="json_object").build_body(request)
    assert body["response_format"] == {"type": "json_object", "schema": schema}
    body, _ = OpenAIProvider(model="m").build_body(request)
    assert body["response_format"]["type"] == "json_schema"


# -- log-probabilities and prefixes -------------------------------------------------


def _lp(token: str, logprob: float, raw: bytes | None = None, top=()) -> dict[str, Any]:
    entry: dict[str, Any] = {"token": token, "logprob": logprob}
    if raw is not None:
        entry["bytes"] = list(raw)
    entry["top_logprobs"] = [{"token": t, "logprob": lp} for t, lp in top]
    return entry


def _mock(chunks: list[dict[str, Any]], seen: list[dict[str, Any]]) -> httpx.AsyncClient:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        body = b"".join(sse(*chunks))
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


async def test_logprobs_are_asked_for_and_read_from_the_stream() -> None:
    e = "é".encode()
    chunks = [
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"content": "Caf"},
                    "logprobs": {
                        "content": [_lp("Caf", -0.2, b"Caf", [("Caf", -0.2), ("Tea", -2)])]
                    },
                }
            ]
        },
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"content": "é"},
                    "logprobs": {"content": [_lp("\\xc3", -0.1, e[:1]), _lp("\\xa9", -0.3, e[1:])]},
                    "finish_reason": "stop",
                }
            ]
        },
    ]
    seen: list[dict[str, Any]] = []
    sink = Sink()
    async with _mock(chunks, seen) as client:
        provider = OpenAIProvider("m", base_url="http://127.0.0.1:9/v1", http_client=client)
        response = await provider.complete(ask(options={"logprobs": 2}), sink)
    assert seen[0]["logprobs"] is True and seen[0]["top_logprobs"] == 2
    assert response.text == "Café"
    assert response.tokens is not None
    assert [(t.text, round(t.logprob, 6)) for t in response.tokens] == [("Caf", -0.2), ("é", -0.4)]
    assert response.tokens[0].top == [("Caf", -0.2), ("Tea", -2.0)]
    assert [k for k, *_ in sink.calls] == ["text", "tokens", "text", "tokens"]


async def test_a_server_that_sends_no_logprobs_when_asked_is_an_error() -> None:
    chunks = [{"choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": "stop"}]}]
    async with _mock(chunks, []) as client:
        provider = OpenAIProvider("m", base_url="http://127.0.0.1:9/v1", http_client=client)
        with pytest.raises(ConfigurationError, match="sent none"):
            await provider.complete(ask(options={"logprobs": 3}))
        plain = await provider.complete(ask())
    assert plain.tokens is None and "logprobs" not in json.dumps(plain.raw or {})


async def test_a_prefix_is_continued_only_where_the_server_is_known_to() -> None:
    chunks = [{"choices": [{"index": 0, "delta": {"content": " on"}, "finish_reason": "stop"}]}]
    seen: list[dict[str, Any]] = []
    async with _mock(chunks, seen) as client:
        hosted = OpenAIProvider("m", base_url="http://127.0.0.1:9/v1", http_client=client)
        with pytest.raises(ConfigurationError, match="prefill="):
            await hosted.complete(ask(prefix="Once upon"))
        assert seen == []
        server = OpenAIProvider(
            "m", base_url="http://127.0.0.1:9/v1", http_client=client, prefill="message"
        )
        assert (await server.complete(ask(prefix="Once upon"))).text == " on"
        vllm = OpenAIProvider(
            "m", base_url="http://127.0.0.1:9/v1", http_client=client, prefill="vllm"
        )
        await vllm.complete(ask(prefix="Once upon"))
    assert seen[0]["messages"][-1] == {"role": "assistant", "content": "Once upon"}
    assert "continue_final_message" not in seen[0]
    assert seen[1]["continue_final_message"] is True and seen[1]["add_generation_prompt"] is False
