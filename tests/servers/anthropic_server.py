"""A real Anthropic Messages API server on 127.0.0.1, scriptable, for tests and notebooks.

    with start_anthropic_server() as server:
        server.script(Message("Hello", thinking="Let me see"), ErrorReply(529, "overloaded_error"))
        model = iModel(provider="anthropic", model="claude-sonnet-4-5", base_url=server.base_url,
                       api_key="sk-ant-test")

``POST /v1/messages`` with ``"stream": true`` answers with the documented streaming events,
field for field (``message_start``, ``ping``, ``content_block_start`` / ``content_block_delta``
(``text_delta``, ``thinking_delta``, ``signature_delta``, ``input_json_delta``) /
``content_block_stop``, ``message_delta``, ``message_stop``, and ``error``), over chunked
transfer encoding. It checks what the real API checks and a client gets wrong easily: the
key (``x-api-key``, or ``Authorization: Bearer`` as newer SDKs send it; when ``key`` is set) and ``anthropic-version`` headers, ``max_tokens``, roles
alternating from ``user``, and — with thinking enabled — that an assistant turn with
``tool_use`` starts with its signed thinking block, sent back unchanged.
"""

from __future__ import annotations

import itertools
import json
import socket
import sys
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["AnthropicServer", "ErrorReply", "Message", "WholeMessage", "start_anthropic_server"]


@dataclass
class Message:
    """A streamed message. ``text``/``thinking`` as one string are cut into ``chunk_size``
    deltas (a list is sent as given); ``tool_uses``: ``{"name", "input" (dict, or a str sent
    verbatim), "id"?}``. ``stop_reason`` None: ``"tool_use"`` with tool uses, else
    ``"end_turn"``. ``error_after=n``: n events, then an ``error`` event (``error_type``);
    ``drop_after=n``: n events, then the connection is dropped."""

    text: str | list[str] = ""
    thinking: str | list[str] | None = None
    signature: str = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
    redacted_thinking: str | None = None
    tool_uses: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str | None = None
    usage: dict[str, Any] = field(
        default_factory=lambda: {
            "input_tokens": 25,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 1,
        }
    )
    output_tokens: int = 15
    chunk_size: int = 4
    delay: float = 0.0
    error_after: int | None = None
    error_type: str = "overloaded_error"
    error_message: str = "Overloaded"
    drop_after: int | None = None
    model: str | None = None


@dataclass
class ErrorReply:
    """An HTTP error in the API's shape: ``{"type": "error", "error": {"type", "message"}}``."""

    status: int = 529
    type: str = "overloaded_error"
    message: str = "Overloaded"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class WholeMessage:
    """A non-streamed reply: the message as one JSON body (a server that ignores ``stream``)."""

    message: dict[str, Any]


def _split(text: str | list[str], size: int) -> list[str]:
    if isinstance(text, list):
        return text
    return [text[i : i + size] for i in range(0, len(text), max(1, size))]


def _sse(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode()


def events(reply: Message, model: str) -> list[bytes]:
    """The documented event sequence for ``reply``."""
    out = [
        _sse(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
                    "type": "message",
                    "role": "assistant",
                    "content": [],
                    "model": reply.model or model,
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": reply.usage,
                },
            },
        ),
        _sse("ping", {"type": "ping"}),
    ]
    index = 0

    def block(start: dict[str, Any], deltas: list[dict[str, Any]]) -> None:
        nonlocal index
        out.append(
            _sse(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": start},
            )
        )
        for delta in deltas:
            out.append(
                _sse(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
            )
        out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1

    if reply.thinking is not None:
        deltas = [
            {"type": "thinking_delta", "thinking": p}
            for p in _split(reply.thinking, reply.chunk_size)
        ]
        deltas.append({"type": "signature_delta", "signature": reply.signature})
        block({"type": "thinking", "thinking": "", "signature": ""}, deltas)
    if reply.redacted_thinking is not None:
        block({"type": "redacted_thinking", "data": reply.redacted_thinking}, [])
    if reply.text:
        block(
            {"type": "text", "text": ""},
            [{"type": "text_delta", "text": p} for p in _split(reply.text, reply.chunk_size)],
        )
    for n, use in enumerate(reply.tool_uses):
        args = use.get("input", {})
        raw = args if isinstance(args, str) else json.dumps(args)
        block(
            {
                "type": "tool_use",
                "id": use.get("id", f"toolu_01A09q90qw90lq917835lq{n}"),
                "name": use["name"],
                "input": {},
            },
            [{"type": "input_json_delta", "partial_json": ""}]
            + [{"type": "input_json_delta", "partial_json": p} for p in _split(raw, 7)],
        )
    stop = reply.stop_reason or ("tool_use" if reply.tool_uses else "end_turn")
    out.append(
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": reply.output_tokens},
            },
        )
    )
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return out


def problem(body: Any, headers: dict[str, str], key: str | None) -> tuple[int, str, str] | None:
    """What the real API would refuse: (status, error type, message), or None."""
    sent = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
    if key is not None and sent != key:
        return 401, "authentication_error", "invalid x-api-key"
    if not headers.get("anthropic-version"):
        return 400, "invalid_request_error", "anthropic-version: header is required"
    if not isinstance(body, dict) or not isinstance(body.get("max_tokens"), int):
        return 400, "invalid_request_error", "max_tokens: Field required"
    messages = body.get("messages") or []
    if not messages or messages[0].get("role") != "user":
        return 400, "invalid_request_error", "messages: the first message must use the user role"
    for prev, msg in itertools.pairwise(messages):
        if prev.get("role") == msg.get("role"):
            return 400, "invalid_request_error", "messages: roles must alternate"
    thinking = (body.get("thinking") or {}).get("type") == "enabled"
    for n, msg in enumerate(messages):
        content = msg.get("content")
        if msg.get("role") != "assistant" or not isinstance(content, list):
            continue
        uses_tools = any(b.get("type") == "tool_use" for b in content)
        if (
            thinking
            and uses_tools
            and content[0].get("type") not in ("thinking", "redacted_thinking")
        ):
            return (
                400,
                "invalid_request_error",
                f"messages.{n}.content.0.type: Expected `thinking` or `redacted_thinking`, "
                f"but found `{content[0].get('type')}`. When `thinking` is enabled, a final "
                "`assistant` message must start with a thinking block",
            )
    return None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 60
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        owner = self.server.owner
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        with owner._lock:
            owner.requests.append({"path": self.path, "headers": headers, "body": body})
        if self.path.rstrip("/") != "/v1/messages":
            return self._error(ErrorReply(404, "not_found_error", f"{self.path} not found"))
        if found := problem(body, headers, owner.key):
            return self._error(ErrorReply(*found))
        reply = owner._next()
        if isinstance(reply, ErrorReply):
            return self._error(reply)
        if isinstance(reply, WholeMessage):
            return self._send_json(200, reply.message)
        try:
            self._stream(reply, str(body.get("model")))
        except OSError:
            self.close_connection = True

    def _send_json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, reply: ErrorReply) -> None:
        body = {
            "type": "error",
            "error": {"type": reply.type, "message": reply.message},
            "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy",
        }
        self._send_json(reply.status, body, reply.headers)

    def _stream(self, reply: Message, model: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for n, event in enumerate(events(reply, model)):
            if n == reply.error_after:
                error = {
                    "type": "error",
                    "error": {"type": reply.error_type, "message": reply.error_message},
                }
                self._chunk(_sse("error", error))
                break
            if n == reply.drop_after:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if reply.delay:
                self.server.owner._stopping.wait(reply.delay)
            self._chunk(event)
        self.wfile.write(b"0\r\n\r\n")

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    owner: AnthropicServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class AnthropicServer:
    """The running server. ``base_url`` is the server root (as ``iModel(base_url=...)`` takes
    it); ``requests`` records every POST (``{"path", "headers", "body"}``); ``key``: the
    ``x-api-key`` it accepts (None: any)."""

    def __init__(self, *, key: str | None = None, default: Message | None = None) -> None:
        self.key = key
        self.default = default or Message("Hello from the loopback Messages API.")
        self.requests: list[dict[str, Any]] = []
        self._queue: deque[Message | ErrorReply | WholeMessage] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def script(self, *replies: Message | ErrorReply | WholeMessage) -> AnthropicServer:
        with self._lock:
            self._queue.extend(replies)
        return self

    def _next(self) -> Message | ErrorReply | WholeMessage:
        with self._lock:
            return self._queue.popleft() if self._queue else self.default

    def start(self) -> AnthropicServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> AnthropicServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_anthropic_server(
    *, key: str | None = None, default: Message | None = None
) -> AnthropicServer:
    """Start a server in a background thread; use it as a context manager."""
    return AnthropicServer(key=key, default=default).start()
