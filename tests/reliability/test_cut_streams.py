"""A stream the server ended before its reply was complete is a ``ProviderError`` saying so,
never a reply: for chat completions, the Responses API and Anthropic's Messages API, from the
bodies real servers sent (``tests/fixtures/streams``), split at every byte offset."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from lion_nb import Branch, iModel
from lion_nb.errors import ConnectionLost, ProviderError
from lion_nb.models.anthropic import AnthropicProvider
from lion_nb.models.base import ModelRequest
from lion_nb.models.openai import OpenAIProvider
from lion_nb.models.openai_responses import OpenAIResponsesProvider

STREAMS = Path(__file__).resolve().parents[1] / "fixtures" / "streams"
ASK = ModelRequest(messages=[{"role": "user", "content": "hi"}])
BEGAN = "the server closed the stream before the reply began"
ENDED = "the server closed the stream before the reply ended"


def recorded(name: str) -> bytes:
    return (STREAMS / name).read_bytes()


def sse(*events: Any, done: bool = False) -> bytes:
    out = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
    return out + (b"data: [DONE]\n\n" if done else b"")


def anthropic_sse(*events: dict[str, Any]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


PROVIDERS: dict[str, Any] = {
    "chat": OpenAIProvider,
    "responses": OpenAIResponsesProvider,
    "anthropic": AnthropicProvider,
}


class Replay:
    """One provider of ``api`` whose every call is answered (HTTP 200, an event stream) by the
    next list of body pieces given to ``pieces``."""

    def __init__(self, api: str) -> None:
        self.api = api
        self.bodies: list[list[bytes]] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        pieces = self.bodies.pop(0)

        async def body() -> AsyncIterator[bytes]:
            for piece in pieces:
                yield piece

        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    async def each(self, splits: list[list[bytes]]) -> AsyncIterator[Any]:
        """Yields, for each split, the reply or the error it gave."""
        self.bodies = list(splits)
        async with httpx.AsyncClient(transport=httpx.MockTransport(self.handler)) as client:
            cls = PROVIDERS[self.api]
            provider = cls(model="m", base_url="http://127.0.0.1:9", http_client=client)
            for _ in splits:
                try:
                    yield await provider.complete(ASK)
                except ProviderError as exc:
                    yield exc


def splits(body: bytes) -> list[list[bytes]]:
    """The body whole, byte by byte, and cut in two at every offset."""
    return [[body], [body[i : i + 1] for i in range(len(body))]] + [
        [body[:i], body[i:]] for i in range(1, len(body))
    ]


async def replies(api: str, body: bytes) -> list[Any]:
    return [outcome async for outcome in Replay(api).each(splits(body))]


async def expect_cut(api: str, body: bytes, began: bool, partial: str = "") -> ConnectionLost:
    """Every split of ``body`` raises the same ConnectionLost, carrying ``partial``."""
    outcomes = await replies(api, body)
    assert all(isinstance(e, ConnectionLost) for e in outcomes), outcomes[0]
    assert len({str(e) for e in outcomes}) == 1
    error = outcomes[0]
    assert (BEGAN if began else ENDED) in str(error)
    assert error.partial_text == partial
    return error  # type: ignore[no-any-return]


# -- chat completions ----------------------------------------------------------------------------


async def test_a_reply_llama_cpp_server_cut_before_it_began_is_an_error() -> None:
    """llama_cpp.server, interrupted by the next request: HTTP 200, a role-only chunk, then
    ``data: [DONE]`` — no content, no finish reason."""
    error = await expect_cut("chat", recorded("llama_cpp_server_cut.sse"), began=True)
    assert "[DONE] without a finish reason" in str(error)
    assert "max_concurrent=1" in str(error)  # the fix is named


async def test_a_reply_cut_after_some_text_keeps_the_text_and_says_it_ended_early() -> None:
    body = recorded("llama_cpp_server_cut_midway.sse")
    chunks = [json.loads(line[6:]) for line in body.decode().split("\n") if line[6:7] == "{"]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert text  # the recording has some text before the cut
    await expect_cut("chat", body, began=False, partial=text)


async def test_a_whole_chat_completions_stream_is_a_reply() -> None:
    outcomes = await replies("chat", recorded("llama_server_chat.sse"))
    assert len({(r.text, r.finish_reason) for r in outcomes}) == 1 and outcomes[0].text


async def test_a_chat_completions_stream_cut_by_the_network() -> None:
    body = sse({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hel"}}]})
    await expect_cut("chat", body, began=False, partial="Hel")
    role_only = sse({"choices": [{"index": 0, "delta": {"role": "assistant"}}]})
    await expect_cut("chat", role_only, began=True)


async def test_an_event_stream_without_a_single_event_says_the_server_failed() -> None:
    """llama_cpp.server's answer to a streamed request over its context window: HTTP 200,
    an event stream, an empty body."""
    error = await expect_cut("chat", b"", began=True)
    assert "sent no event at all" in str(error) and "context_window=N" in str(error)


# -- the Responses API ---------------------------------------------------------------------------


async def test_a_responses_stream_that_stops_before_its_terminal_event() -> None:
    created = {"type": "response.created", "response": {"id": "r1", "model": "m"}}
    delta = {"type": "response.output_text.delta", "delta": "Hel", "output_index": 0}
    await expect_cut("responses", sse(created), began=True)
    await expect_cut("responses", sse(created, delta), began=False, partial="Hel")


# -- Anthropic's Messages API --------------------------------------------------------------------

_START = {"type": "message_start", "message": {"id": "msg_1", "model": "m", "usage": {}}}
_BLOCK = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
_DELTA = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}}


async def test_a_messages_stream_that_stops_before_message_stop() -> None:
    await expect_cut("anthropic", anthropic_sse(_START), began=True)
    await expect_cut("anthropic", anthropic_sse(_START, _BLOCK, _DELTA), began=False, partial="Hel")


async def test_a_message_stop_without_a_stop_reason_is_not_a_reply() -> None:
    stop = {"type": "message_stop"}
    error = await expect_cut("anthropic", anthropic_sse(_START, stop), began=True)
    assert "without a stop_reason" in str(error)


async def test_a_whole_messages_stream_is_a_reply() -> None:
    outcomes = await replies("anthropic", recorded("llama_server_messages.sse"))
    assert len({(r.text, r.finish_reason) for r in outcomes}) == 1 and outcomes[0].text


# -- what a verb records ------------------------------------------------------------------------


async def test_communicate_records_nothing_for_a_cut_stream() -> None:
    body = recorded("llama_cpp_server_cut.sse")

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        model = iModel(
            provider="openai", model="m", base_url="http://127.0.0.1:9/v1", http_client=client
        )
        branch = Branch(chat_model=model)
        with pytest.raises(ProviderError, match=BEGAN):
            await branch.communicate("hi")
    assert len(branch.messages) == 0  # never an empty reply recorded as an answer
