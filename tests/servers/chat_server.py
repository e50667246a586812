"""A real chat-completions server on 127.0.0.1, scriptable, for tests and benchmarks.

    with start_chat_server() as server:
        server.script(Reply("Hello there", chunk_size=3), ErrorReply(429, headers={"Retry-After": "1"}))
        provider = OpenAIProvider(model="m", base_url=server.base_url)
        ...
        server.requests[-1].body["messages"]

Each POST to ``/v1/chat/completions`` takes the next scripted reply (FIFO); when the script is
empty the default reply answers (by default: echo the last user message). Streaming requests
(``"stream": true``) get Server-Sent Events in OpenAI's chunk format, over chunked transfer
encoding (``framing="chunked"``, the connection is kept alive) or delimited by closing the
connection (``framing="close"``); other requests get one JSON body. Every request is recorded.

Replies: ``Reply`` (text / reasoning / tool calls / usage, chunking, per-chunk delay, and the
faults drop_after / stall_after / json_body / no [DONE]), ``ErrorReply`` (an HTTP error),
``Stall`` (never answer), ``RawReply`` (exact bytes, e.g. a malformed body).
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

__all__ = [
    "ChatServer",
    "ErrorReply",
    "RawReply",
    "RecordedRequest",
    "Reply",
    "Stall",
    "start_chat_server",
]


@dataclass
class Reply:
    """A successful completion. ``text`` as one string is cut into ``chunk_size``-character
    deltas; a list is sent as given. ``tool_calls``: ``{"name", "arguments" (dict, or a str sent
    verbatim, malformed if you like), "id"?}``; arguments stream in ``arg_chunk_size`` pieces.
    ``usage`` None: computed (prompt = words in the request, completion = number of deltas).

    Faults: ``drop_after=n`` sends n events then drops the connection (``cut="mid_event"``:
    plus half of the next event); ``stall_after=n`` sends n events then goes silent until the
    server stops; ``json_body`` answers with one JSON body even when asked to stream;
    ``done=False`` omits ``data: [DONE]``; ``finish_reason=""`` omits the finish chunk.
    An "event" is one ``data:`` line; the first carries the role and the first delta."""

    text: str | list[str] = ""
    chunk_size: int = 4
    delay: float = 0.0  # seconds before each event
    reasoning: str | list[str] | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    arg_chunk_size: int = 8
    usage: dict[str, Any] | None = None
    finish_reason: str | None = None  # None: "tool_calls" with tool calls, else "stop"
    model: str | None = None  # None: the model the request named
    drop_after: int | None = None
    cut: Literal["abort", "mid_event"] = "abort"
    stall_after: int | None = None
    framing: Literal["chunked", "close"] = "chunked"
    json_body: bool = False
    done: bool = True
    headers: dict[str, str] = field(default_factory=dict)
    # The vendor servers (``vendor_servers``) only: after ``fail_after`` events, the vendor's
    # mid-stream error (``fail_event``: ``"error"``, or the Responses API's ``"response.failed"``).
    fail_after: int | None = None
    fail_event: Literal["error", "response.failed"] = "error"
    fail_message: str = "The server had an error while processing your request."


@dataclass
class ErrorReply:
    """An HTTP error. ``body``: dict (JSON), str (sent as is) or None (an OpenAI-style error)."""

    status: int = 500
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Stall:
    """Read the request, then send nothing (``after_headers``: send the SSE headers first) for
    ``seconds``, or until the server stops; then close the connection."""

    seconds: float | None = None
    after_headers: bool = False


@dataclass
class RawReply:
    """Exact bytes: ``body`` parts are written with ``delay`` before each, Content-Length set
    (or, with ``drop=True``, no length and the connection dropped after the last part)."""

    body: bytes | list[bytes] = b""
    status: int = 200
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drop: bool = False


AnyReply = Reply | ErrorReply | Stall | RawReply


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: Any  # the parsed JSON body (None when absent or not JSON)
    raw: bytes


def echo_reply(body: Any) -> Reply:
    """The default: reply with the text of the last user message."""
    for message in reversed((body or {}).get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
            return Reply(str(content or ""))
    return Reply("")


def _split(text: str | list[str], size: int) -> list[str]:
    if isinstance(text, list):
        return text
    return [text[i : i + size] for i in range(0, len(text), max(1, size))]


class _Dropped(Exception):
    """The client went away while we were writing."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real API servers do
    timeout = 60  # an idle keep-alive connection is closed after a minute
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        # Small SSE writes must leave at once: with Nagle's algorithm each waits for the
        # client's delayed ACK (~40 ms a call).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # tests stay quiet

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            model = {"id": self.server.owner.model, "object": "model"}
            return self._send_json(200, {"object": "list", "data": [model]})
        return self._send_json(404, {"error": {"message": "not found", "type": "not_found"}})

    def do_POST(self) -> None:
        owner = self.server.owner
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        if owner.record:
            headers = {k.lower(): v for k, v in self.headers.items()}
            with owner._lock:
                owner.requests.append(RecordedRequest("POST", self.path, headers, body, raw))
        if not self.path.rstrip("/").endswith("/chat/completions"):
            return self._send_json(404, {"error": {"message": "not found", "type": "not_found"}})
        reply = owner._next_reply(body)
        try:
            self._answer(reply, body if isinstance(body, dict) else {})
        except (_Dropped, ConnectionError, TimeoutError):
            self.close_connection = True
            with owner._lock:
                owner.disconnects += 1

    # -- replies ---------------------------------------------------------------------------

    def _answer(self, reply: AnyReply, body: dict[str, Any]) -> None:
        owner = self.server.owner
        if isinstance(reply, ErrorReply):
            payload = reply.body
            if payload is None:
                payload = {
                    "error": {
                        "message": f"scripted error {reply.status}",
                        "type": "server_error" if reply.status >= 500 else "error",
                    }
                }
            data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
            return self._send(reply.status, "application/json", data, reply.headers)
        if isinstance(reply, Stall):
            if reply.after_headers:
                self._head(200, "text/event-stream", {"Connection": "close"})
                self._write(b"")
            owner._stopping.wait(reply.seconds)
            self._drop()
            return None
        if isinstance(reply, RawReply):
            parts = [reply.body] if isinstance(reply.body, bytes) else reply.body
            extra = dict(reply.headers)
            if reply.drop:
                extra["Connection"] = "close"
            else:
                extra["Content-Length"] = str(sum(map(len, parts)))
            self._head(reply.status, reply.content_type, extra)
            for part in parts or [b""]:  # an empty body still sends the headers
                self._pause(reply.delay)
                self._write(part)
            if reply.drop:
                self._drop()
            return None
        model = reply.model or body.get("model") or owner.model
        if reply.json_body or not body.get("stream"):
            data = json.dumps(self._completion(reply, model, body)).encode()
            return self._send(200, "application/json", data, reply.headers)
        return self._stream(reply, model, body)

    def _stream(self, reply: Reply, model: str, body: dict[str, Any]) -> None:
        events = self._events(reply, model, body)
        chunked = reply.framing == "chunked"
        extra = {"Cache-Control": "no-cache", **reply.headers}
        extra["Transfer-Encoding" if chunked else "Connection"] = "chunked" if chunked else "close"
        self._head(200, "text/event-stream", extra)
        write = self._write_chunk if chunked else self._write
        if reply.delay == 0 and reply.drop_after is None and reply.stall_after is None:
            # One write for the whole reply: fewer thread hand-offs, fast benchmarks.
            frames = [self._frame(e) if chunked else e for e in events]
            self._write(b"".join(frames) + (b"0\r\n\r\n" if chunked else b""))
            return None if chunked else self._drop()
        self._write(b"")  # the headers leave now
        for n, event in enumerate(events):
            if n == reply.drop_after:
                if reply.cut == "mid_event":
                    write(event[: max(1, len(event) // 2)])
                return self._drop()
            if n == reply.stall_after:
                self.server.owner._stopping.wait()
                return self._drop()
            self._pause(reply.delay)
            write(event)
        if chunked:
            self._write(b"0\r\n\r\n")
        else:
            self._drop()  # close-delimited: the end of the body is the end of the connection
        return None

    def _events(self, reply: Reply, model: str, body: dict[str, Any]) -> list[bytes]:
        base = {
            "id": "chatcmpl-test",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
        }
        deltas: list[dict[str, Any]] = [
            {"reasoning_content": r} for r in _split(reply.reasoning or "", reply.chunk_size)
        ]
        deltas += [{"content": t} for t in _split(reply.text, reply.chunk_size)]
        for index, call in enumerate(reply.tool_calls):
            args = call.get("arguments", {})
            args = args if isinstance(args, str) else json.dumps(args)
            deltas.append(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call.get("id", f"call_{index}"),
                            "type": "function",
                            "function": {"name": call["name"], "arguments": ""},
                        }
                    ]
                }
            )
            deltas += [
                {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
                for piece in _split(args, reply.arg_chunk_size)
            ]
        deltas = deltas or [{"content": ""}]
        deltas[0] = {"role": "assistant", **deltas[0]}
        chunks = [
            {**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas
        ]
        finish = self._finish_reason(reply)
        if finish:
            chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        if (body.get("stream_options") or {}).get("include_usage"):
            chunks.append({**base, "choices": [], "usage": self._usage(reply, body, len(deltas))})
        events = [b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks]
        return [*events, b"data: [DONE]\n\n"] if reply.done else events

    def _completion(self, reply: Reply, model: str, body: dict[str, Any]) -> dict[str, Any]:
        text = "".join(_split(reply.text, reply.chunk_size))
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if reply.reasoning:
            message["reasoning_content"] = "".join(_split(reply.reasoning, reply.chunk_size))
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": c.get("id", f"call_{i}"),
                    "type": "function",
                    "function": {
                        "name": c["name"],
                        "arguments": c.get("arguments", {})
                        if isinstance(c.get("arguments"), str)
                        else json.dumps(c.get("arguments", {})),
                    },
                }
                for i, c in enumerate(reply.tool_calls)
            ]
        return {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "usage": self._usage(reply, body, 1),
            "choices": [
                {"index": 0, "message": message, "finish_reason": self._finish_reason(reply)}
            ],
        }

    @staticmethod
    def _finish_reason(reply: Reply) -> str | None:
        if reply.finish_reason is not None:
            return reply.finish_reason or None
        return "tool_calls" if reply.tool_calls else "stop"

    @staticmethod
    def _usage(reply: Reply, body: dict[str, Any], deltas: int) -> dict[str, Any]:
        if reply.usage is not None:
            return reply.usage
        words = sum(len(str(m.get("content") or "").split()) for m in body.get("messages") or [])
        return {"prompt_tokens": words, "completion_tokens": deltas, "total_tokens": words + deltas}

    # -- wire ------------------------------------------------------------------------------

    def _head(self, status: int, content_type: str, extra: dict[str, str]) -> None:
        """Queue the status line and headers; they leave with the next ``_write``."""
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        for name, value in extra.items():
            self.send_header(name, value)
        if extra.get("Connection") == "close":
            self.close_connection = True
        self._headers_buffer.append(b"\r\n")

    def _send(self, status: int, ctype: str, data: bytes, extra: dict[str, str]) -> None:
        self._head(status, ctype, {**extra, "Content-Length": str(len(data))})
        self._write(data)

    def _send_json(self, status: int, obj: Any) -> None:
        self._send(status, "application/json", json.dumps(obj).encode(), {})

    def _write(self, data: bytes) -> None:
        pending = getattr(self, "_headers_buffer", None)
        if pending:
            data, self._headers_buffer = b"".join(pending) + data, []
        try:
            self.wfile.write(data)
        except OSError as exc:
            raise _Dropped from exc

    def _write_chunk(self, data: bytes) -> None:
        self._write(self._frame(data))

    @staticmethod
    def _frame(data: bytes) -> bytes:
        return f"{len(data):x}\r\n".encode() + data + b"\r\n"

    def _pause(self, seconds: float) -> None:
        if seconds > 0:
            self.server.owner._stopping.wait(seconds)

    def _drop(self) -> None:
        """End the connection now (a FIN; for a chunked body, without its terminator)."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # a stalled handler must not block stop()
    request_queue_size = 256  # benchmarks open 100 connections at once
    owner: ChatServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client resetting an idle keep-alive connection is normal; anything else is a bug.
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class ChatServer:
    """The running server. ``base_url`` ends in ``/v1``; ``requests`` records every POST;
    ``disconnects`` counts replies the client abandoned (a write failed)."""

    handler: type[BaseHTTPRequestHandler] = _Handler  # a vendor server speaks its own format

    def __init__(
        self,
        *,
        default: Reply | Callable[[Any], AnyReply] | None = None,
        record: bool = True,
        model: str = "test-model",
    ) -> None:
        self.default = default
        self.record = record
        self.model = model
        self.requests: list[RecordedRequest] = []
        self.disconnects = 0
        self._queue: deque[AnyReply] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = _HTTPServer(("127.0.0.1", 0), self.handler)
        self._httpd.owner = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            daemon=True,
            name=f"chat-server-{self.port}",
        )

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def last_request(self) -> RecordedRequest:
        return self.requests[-1]

    def script(self, *replies: AnyReply) -> ChatServer:
        """Queue replies; each request takes the next one."""
        with self._lock:
            self._queue.extend(replies)
        return self

    @property
    def pending(self) -> int:
        """Scripted replies not yet used."""
        return len(self._queue)

    def _next_reply(self, body: Any) -> AnyReply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if self.default is None:
            return echo_reply(body)
        return self.default(body) if callable(self.default) else self.default

    def wait_for_disconnects(self, count: int = 1, timeout: float = 5.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.disconnects >= count:
                return True
            time.sleep(0.01)
        return self.disconnects >= count

    def start(self) -> ChatServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # releases stalled and delayed handlers
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> ChatServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_chat_server(
    *,
    default: Reply | Callable[[Any], AnyReply] | None = None,
    record: bool = True,
    model: str = "test-model",
    benchmark: bool = False,
) -> ChatServer:
    """Start a server in a background thread; use it as a context manager (or call ``stop()``).
    ``benchmark=True``: nothing recorded, every reply is "ok" in one delta."""
    if benchmark:
        default, record = Reply("ok", chunk_size=1 << 20), False
    return ChatServer(default=default, record=record, model=model).start()
