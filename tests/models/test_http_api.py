"""``models/http_api.py``: how a generation travels. A request is never sent twice unless the
retry policy says so: a plain-HTTP server gets each generation on a connection of its own."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from lion_nb.errors import ProviderError
from lion_nb.models.anthropic import AnthropicProvider
from lion_nb.models.base import ModelRequest
from lion_nb.models.openai import OpenAIProvider
from lion_nb.models.openai_responses import OpenAIResponsesProvider

ASK = ModelRequest(messages=[{"role": "user", "content": "hi"}])

REPLY = (
    b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"ok"}}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)


class ClosingServer:
    """Behaves as llama.cpp's ``llama-server`` does after a streamed reply: it promises to keep
    the connection (``Keep-Alive: timeout=5, max=100``), then closes it shortly after the
    reply's last chunk without answering what came meanwhile. ``requests`` counts every request
    that reached it (a request on a closing connection included); ``connections`` the
    connections it accepted."""

    def __init__(self, close_after: float = 0.2) -> None:
        self.close_after = close_after
        self.requests = 0
        self.connections = 0
        self.request_headers: list[dict[str, str]] = []
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}/v1"

    def _serve(self) -> None:
        self._sock.settimeout(0.05)
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            self.connections += 1
            threading.Thread(target=self._connection, args=(conn,), daemon=True).start()

    def _read_request(self, conn: socket.socket, buffered: bytes) -> bytes | None:
        while b"\r\n\r\n" not in buffered:
            piece = conn.recv(65536)
            if not piece:
                return None
            buffered += piece
        head, _, rest = buffered.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")[1:]
        headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines)}
        length = int(headers.get("content-length", "0"))
        while len(rest) < length:
            rest += conn.recv(65536)
        self.requests += 1
        self.request_headers.append(headers)
        return rest[length:]

    def _connection(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            leftover: bytes | None = b""
            try:
                leftover = self._read_request(conn, b"")
                if leftover is None:
                    return
                head = (
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                    b"Keep-Alive: timeout=5, max=100\r\nTransfer-Encoding: chunked\r\n\r\n"
                )
                conn.sendall(head + b"%x\r\n%s\r\n0\r\n\r\n" % (len(REPLY), REPLY))
                # The next request, if the client sends one here, is read and never answered.
                conn.settimeout(self.close_after)
                self._read_request(conn, leftover)
            except (TimeoutError, OSError):
                pass

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._sock.close()


@pytest.fixture
def closing_server() -> Iterator[ClosingServer]:
    server = ClosingServer()
    yield server
    server.close()


async def no_sleep(seconds: float) -> None:
    pass


async def test_sequential_generations_on_a_server_that_closes_are_each_sent_once(
    closing_server: ClosingServer,
) -> None:
    provider = OpenAIProvider(model="m", base_url=closing_server.base_url, sleep=no_sleep)
    try:
        for _ in range(4):
            assert (await provider.complete(ASK)).text == "ok"
    finally:
        await provider.aclose()
    # Each call reached the server once, on its own connection: none was written to a
    # connection the server was closing and then sent again by the retry loop.
    assert closing_server.requests == 4
    assert closing_server.connections == 4
    assert all(h.get("connection") == "close" for h in closing_server.request_headers)


async def test_without_retries_a_closing_server_fails_no_call(
    closing_server: ClosingServer,
) -> None:
    provider = OpenAIProvider(model="m", base_url=closing_server.base_url, max_retries=0)
    try:
        for _ in range(3):
            assert (await provider.complete(ASK)).text == "ok"
    finally:
        await provider.aclose()


async def _sent_headers(provider_cls: type[Any], base_url: str, **kw: Any) -> httpx.Headers:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(400, json={"error": {"message": "only the request matters"}})

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        provider = provider_cls(model="m", base_url=base_url, http_client=client, **kw)
        with pytest.raises(ProviderError, match="only the request matters"):
            await provider.complete(ASK)
    return seen[0].headers


@pytest.mark.parametrize(
    "provider_cls", [OpenAIProvider, OpenAIResponsesProvider, AnthropicProvider]
)
async def test_plain_http_generations_ask_for_their_own_connection(
    provider_cls: type[Any],
) -> None:
    key = {"api_key": "sk-test-key-0123456789"}
    local = "http://127.0.0.1:9/v1"
    assert (await _sent_headers(provider_cls, local, **key))["connection"] == "close"
    # HTTPS servers (the vendor clouds) keep their promise: connections stay pooled.
    remote = await _sent_headers(provider_cls, "https://api.example.com", **key)
    assert remote["connection"] == "keep-alive"
    # A Connection header the user gave wins.
    given = {"connection": "keep-alive"}
    sent = await _sent_headers(provider_cls, local, headers=given, **key)
    assert sent["connection"] == "keep-alive"


async def _refusal(provider_cls: type[Any], status: int, body: Any) -> ProviderError:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, json=body)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        provider = provider_cls(model="m", base_url="http://127.0.0.1:9/v1", http_client=client)
        with pytest.raises(ProviderError) as info:
            await provider.complete(ASK)
    return info.value


@pytest.mark.parametrize(
    ("provider_cls", "path", "fix"),
    [
        (OpenAIProvider, "/v1/chat/completions", "base_url should be its OpenAI-compatible root"),
        (OpenAIResponsesProvider, "/v1/responses", 'without api="responses"'),
        (AnthropicProvider, "/v1/messages", 'provider="openai"'),
    ],
)
async def test_a_server_without_the_api_says_so_and_names_the_fix(
    provider_cls: type[Any], path: str, fix: str
) -> None:
    # llama_cpp.server (FastAPI) answers a path it does not serve with {"detail": "Not Found"}
    error = await _refusal(provider_cls, 404, {"detail": "Not Found"})
    assert type(error) is ProviderError and error.status == 404
    assert f"request rejected: Not Found. The server has no http://127.0.0.1:9{path}" in str(error)
    assert fix in str(error)


async def test_a_bad_request_carries_the_servers_own_words() -> None:
    body = {"error": {"code": 400, "message": "n_probs must be positive", "type": "invalid"}}
    error = await _refusal(OpenAIProvider, 400, body)
    assert str(error) == "[openai] request rejected: n_probs must be positive (status 400)"
