"""Loopback servers speaking two vendors' own streaming formats, for tests and notebooks.

    with start_gemini_server() as server:      # Gemini API: server.base_url is the server root
        server.script(Reply("Hi", reasoning="Let me think", finish_reason="length"))
        iModel(provider="gemini", model="gemini-2.5-flash", base_url=server.base_url, ...)

    with start_responses_server() as server:   # OpenAI Responses API: base_url ends in /v1
        ...

Both reuse the chat server's transport and scripting (``Reply``, ``ErrorReply``, ``Stall``,
``RawReply``; FIFO script, echo by default, every request recorded); only the wire format
differs. ``Reply`` is read vendor-neutrally: ``reasoning`` is the thinking (Gemini thought parts,
Responses reasoning-summary deltas), ``tool_calls`` become ``functionCall`` parts /
``function_call`` items, ``finish_reason="length"`` becomes ``MAX_TOKENS`` /
``response.incomplete`` (``max_output_tokens``), ``fail_after`` sends the vendor's mid-stream
error. ``usage`` given is sent as is (the vendor's own shape); None computes it (input = words
of the request, output = deltas sent, thinking deltas counted as thought/reasoning tokens).
``ErrorReply`` with ``body=None`` sends the vendor's own error body for its status.

The formats follow the vendors' API references: Gemini ``models.streamGenerateContent`` with
``alt=sse`` (each event one ``GenerateContentResponse``, CRLF-delimited, no end marker; the
non-streamed ``generateContent`` answers with one object), and the Responses API's typed
events (``event:`` line plus a JSON ``data:`` line carrying ``type`` and ``sequence_number``;
the stream ends with ``response.completed`` / ``response.incomplete`` / ``response.failed``).
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from tests.servers.chat_server import (
    AnyReply,
    ChatServer,
    ErrorReply,
    Reply,
    _Dropped,
    _Handler,
    _split,
)

__all__ = [
    "GeminiServer",
    "ResponsesServer",
    "gemini_events",
    "responses_events",
    "start_gemini_server",
    "start_responses_server",
]

_GEMINI_PATH = re.compile(
    r"^/v1(?:beta|alpha)?/models/([^/:?]+):(streamGenerateContent|generateContent)"
)
_GEMINI_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_OPENAI_ERROR_TYPE = {
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    429: ("requests", "rate_limit_exceeded"),
}


def _words(value: Any) -> int:
    """Words in every string of a request body (the computed prompt token count)."""
    if isinstance(value, str):
        return len(value.split())
    if isinstance(value, dict):
        return sum(_words(v) for k, v in value.items() if k not in ("model", "tools"))
    if isinstance(value, list):
        return sum(_words(v) for v in value)
    return 0


def _arguments(call: dict[str, Any]) -> Any:
    return call.get("arguments", {})


# -- Gemini ------------------------------------------------------------------------------------


def _gemini_chunk(parts: list[dict[str, Any]], model: str, usage: dict[str, Any]) -> dict[str, Any]:
    return {
        "candidates": [{"content": {"parts": parts, "role": "model"}, "index": 0}],
        "usageMetadata": usage,
        "modelVersion": model,
        "responseId": "gemini-test-response",
    }


def gemini_events(reply: Reply, model: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``GenerateContentResponse`` objects a streamed reply is made of."""
    prompt = _words(body.get("contents")) + _words(body.get("systemInstruction"))
    thoughts = _split(reply.reasoning or "", reply.chunk_size)
    texts = _split(reply.text, reply.chunk_size)
    parts: list[dict[str, Any]] = [{"text": t, "thought": True} for t in thoughts]
    parts += [{"text": t} for t in texts]
    if thoughts and texts:  # the signature of the thinking rides on the first part after it
        parts[len(thoughts)]["thoughtSignature"] = "c2lnbmF0dXJlLXRleHQ="
    for n, call in enumerate(reply.tool_calls):
        args = _arguments(call)
        part: dict[str, Any] = {
            "functionCall": {
                "name": call["name"],
                "args": json.loads(args) if isinstance(args, str) else args,
            }
        }
        if n == 0:
            part["thoughtSignature"] = "c2lnbmF0dXJlLWNhbGw="
        parts.append(part)
    parts = parts or [{"text": ""}]
    chunks: list[dict[str, Any]] = []
    sent_thoughts = sent = 0
    for part in parts:
        if part.get("thought"):
            sent_thoughts += 1
        else:
            sent += 1
        running = {"promptTokenCount": prompt, "totalTokenCount": prompt + sent_thoughts + sent}
        if sent_thoughts:
            running["thoughtsTokenCount"] = sent_thoughts
        chunks.append(_gemini_chunk([part], model, running))
    last = chunks[-1]
    finish = {"length": "MAX_TOKENS", "stop": "STOP", "tool_calls": "STOP"}.get(
        reply.finish_reason or "stop", reply.finish_reason or "STOP"
    )
    if reply.finish_reason != "":
        last["candidates"][0]["finishReason"] = finish
    usage = reply.usage
    if usage is None:
        usage = {
            "promptTokenCount": prompt,
            "candidatesTokenCount": sent,
            "totalTokenCount": prompt + sent + sent_thoughts,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}],
        }
        if sent_thoughts:
            usage["thoughtsTokenCount"] = sent_thoughts
    last["usageMetadata"] = usage
    return chunks


def _gemini_error(status: int, message: str) -> dict[str, Any]:
    return {
        "error": {
            "code": status,
            "message": message,
            "status": _GEMINI_STATUS.get(status, "UNKNOWN"),
        }
    }


class _GeminiHandler(_Handler):
    def do_POST(self) -> None:
        path, _, query = self.path.partition("?")
        match = _GEMINI_PATH.match(path)
        body = self._record()
        if match is None:
            return self._send_json(404, _gemini_error(404, f"no such method: {path}"))
        model, method = match.group(1), match.group(2)
        refused = _json_with_tools_refused(model, body)
        if refused:
            return self._send_json(400, _gemini_error(400, refused))
        if self.server.owner.require_signatures and _unsigned_call(body):
            message = "Function call is missing a thought_signature in functionCall parts."
            return self._send_json(400, _gemini_error(400, message))
        reply = self.server.owner._next_reply(body)
        stream = method == "streamGenerateContent"
        if stream and "alt=sse" not in query:  # the JSON-array framing is not spoken here
            return self._send_json(400, _gemini_error(400, "this test server streams alt=sse only"))
        self._serve(reply, lambda r: gemini_events(r, model, body or {}), stream)

    def _record(self) -> Any:
        return _record_request(self)

    def _vendor_error(self, reply: ErrorReply) -> Any:
        return _gemini_error(reply.status, f"scripted error {reply.status}")

    def _frame_event(self, obj: dict[str, Any]) -> bytes:
        return b"data: " + json.dumps(obj).encode() + b"\r\n\r\n"

    def _failure(self, reply: Reply, sequence: int) -> bytes:
        return self._frame_event(_gemini_error(500, reply.fail_message))

    def _whole(self, events: list[dict[str, Any]]) -> dict[str, Any]:
        """The non-streamed reply: the stream's parts merged into one candidate."""
        parts = [p for e in events for p in e["candidates"][0]["content"]["parts"]]
        merged = dict(events[-1])
        merged["candidates"] = [
            {**events[-1]["candidates"][0], "content": {"parts": parts, "role": "model"}}
        ]
        return merged

    # -- shared with the Responses handler -----------------------------------------------------

    def _serve(self, reply: AnyReply, build: Any, stream: bool) -> None:
        owner = self.server.owner
        try:
            if isinstance(reply, ErrorReply):
                payload = reply.body if reply.body is not None else self._vendor_error(reply)
                data = (
                    payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                )
                return self._send(reply.status, "application/json", data, reply.headers)
            if not isinstance(reply, Reply):
                return self._answer(reply, {})  # Stall / RawReply: as the chat server
            objects = build(reply)
            if not stream or reply.json_body:
                data = json.dumps(self._whole(objects)).encode()
                return self._send(200, "application/json", data, reply.headers)
            self._stream_vendor(reply, objects)
        except (_Dropped, ConnectionError, TimeoutError):
            self.close_connection = True
            with owner._lock:
                owner.disconnects += 1

    def _stream_vendor(self, reply: Reply, objects: list[dict[str, Any]]) -> None:
        events = [self._frame_event(o) for o in objects]
        if reply.fail_after is not None:
            events = [*events[: reply.fail_after], self._failure(reply, reply.fail_after)]
        # The chat server's transport: framing, delays, drops and stalls as it does them.
        self._frames = events
        self._stream(reply, "", {})

    def _events(self, reply: Reply, model: str, body: dict[str, Any]) -> list[bytes]:
        return self._frames


def _record_request(handler: _Handler) -> Any:
    owner = handler.server.owner
    raw = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
    try:
        body = json.loads(raw) if raw else None
    except ValueError:
        body = None
    if owner.record:
        from tests.servers.chat_server import RecordedRequest

        headers = {k.lower(): v for k, v in handler.headers.items()}
        with owner._lock:
            owner.requests.append(RecordedRequest("POST", handler.path, headers, body, raw))
    return body


def _gemini_echo(body: Any) -> Reply:
    for content in reversed((body or {}).get("contents") or []):
        if content.get("role", "user") == "user":
            texts = [p.get("text", "") for p in content.get("parts") or [] if "text" in p]
            if texts:
                return Reply("".join(texts))
    return Reply("")


def _json_with_tools_refused(model: str, body: Any) -> str | None:
    """The API's refusal of a JSON response type next to function declarations, before
    Gemini 3."""
    config = (body or {}).get("generationConfig") or {}
    json_reply = config.get("responseMimeType") == "application/json"
    if json_reply and (body or {}).get("tools") and model.startswith(("gemini-1", "gemini-2")):
        return "Function calling with a response mime type: 'application/json' is unsupported"
    return None


def _unsigned_call(body: Any) -> bool:
    """A model turn's first function call sent back without its thought signature."""
    for content in (body or {}).get("contents") or []:
        calls = [p for p in content.get("parts") or [] if "functionCall" in p]
        if content.get("role") == "model" and calls and "thoughtSignature" not in calls[0]:
            return True
    return False


class GeminiServer(ChatServer):
    """The Gemini API's ``generateContent`` / ``streamGenerateContent?alt=sse`` on 127.0.0.1;
    ``base_url`` is the server root (the path carries the API version and the model).
    ``require_signatures = True``: refuse, as Gemini 3 does, a request whose model turn sends a
    function call back without the thought signature it came with."""

    handler = _GeminiHandler
    require_signatures = False

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _next_reply(self, body: Any) -> AnyReply:
        if self.default is None:
            with self._lock:
                if not self._queue:
                    return _gemini_echo(body)
        return super()._next_reply(body)


# -- OpenAI Responses --------------------------------------------------------------------------


class _ResponseBuilder:
    """The typed events of one streamed response, numbered as they are made."""

    def __init__(self, reply: Reply, model: str, body: dict[str, Any]) -> None:
        self.reply, self.model, self.body = reply, model, body
        self.events: list[dict[str, Any]] = []
        self.output: list[dict[str, Any]] = []
        self.created = int(time.time())

    def emit(self, kind: str, **fields: Any) -> None:
        self.events.append({"type": kind, "sequence_number": len(self.events), **fields})

    def response(self, status: str, **extra: Any) -> dict[str, Any]:
        tools = self.body.get("tools") or []
        return {
            "id": "resp_test",
            "object": "response",
            "created_at": self.created,
            "status": status,
            "background": False,
            "error": None,
            "incomplete_details": None,
            "instructions": self.body.get("instructions"),
            "max_output_tokens": self.body.get("max_output_tokens"),
            "model": self.model,
            "output": list(self.output) if status != "in_progress" else [],
            "parallel_tool_calls": True,
            "previous_response_id": None,
            "reasoning": {"effort": None, "summary": None},
            "store": False,
            "temperature": self.body.get("temperature", 1.0),
            "text": {"format": {"type": "text"}},
            "tool_choice": self.body.get("tool_choice", "auto"),
            "tools": tools,
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": None,
            "user": None,
            "metadata": {},
            **extra,
        }

    def build(self) -> list[dict[str, Any]]:
        reply = self.reply
        self.emit("response.created", response=self.response("in_progress"))
        self.emit("response.in_progress", response=self.response("in_progress"))
        thoughts = _split(reply.reasoning or "", reply.chunk_size)
        texts = _split(reply.text, reply.chunk_size)
        if thoughts:
            self._reasoning(thoughts)
        if texts or not (thoughts or reply.tool_calls):
            self._message(texts)
        for n, call in enumerate(reply.tool_calls):
            self._function_call(n, call)
        usage = reply.usage or self._usage(len(thoughts), len(texts) + len(reply.tool_calls))
        if reply.finish_reason == "length":
            done = self.response(
                "incomplete", incomplete_details={"reason": "max_output_tokens"}, usage=usage
            )
            self.emit("response.incomplete", response=done)
        elif reply.finish_reason != "":
            self.emit("response.completed", response=self.response("completed", usage=usage))
        return self.events

    def _usage(self, thinking: int, output: int) -> dict[str, Any]:
        prompt = _words(self.body.get("input")) + _words(self.body.get("instructions"))
        return {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": thinking + output,
            "output_tokens_details": {"reasoning_tokens": thinking},
            "total_tokens": prompt + thinking + output,
        }

    def _item(self, item: dict[str, Any], done: dict[str, Any], body: Any) -> None:
        index = len(self.output)
        self.emit("response.output_item.added", output_index=index, item=item)
        body(index)
        self.output.append(done)
        self.emit("response.output_item.done", output_index=index, item=done)

    def _reasoning(self, pieces: list[str]) -> None:
        rid, text = f"rs_{len(self.output)}", "".join(pieces)
        summary = {"type": "summary_text", "text": text}

        def body(index: int) -> None:
            at = {"item_id": rid, "output_index": index, "summary_index": 0}
            self.emit(
                "response.reasoning_summary_part.added",
                **at,
                part={"type": "summary_text", "text": ""},
            )
            for piece in pieces:
                self.emit("response.reasoning_summary_text.delta", **at, delta=piece)
            self.emit("response.reasoning_summary_text.done", **at, text=text)
            self.emit("response.reasoning_summary_part.done", **at, part=summary)

        self._item(
            {"id": rid, "type": "reasoning", "summary": []},
            {"id": rid, "type": "reasoning", "summary": [summary]},
            body,
        )

    def _message(self, pieces: list[str]) -> None:
        mid, text = f"msg_{len(self.output)}", "".join(pieces)
        part = {"type": "output_text", "annotations": [], "logprobs": [], "text": text}

        def body(index: int) -> None:
            at = {"item_id": mid, "output_index": index, "content_index": 0}
            self.emit("response.content_part.added", **at, part={**part, "text": ""})
            for piece in pieces:
                self.emit("response.output_text.delta", **at, delta=piece, logprobs=[])
            self.emit("response.output_text.done", **at, text=text, logprobs=[])
            self.emit("response.content_part.done", **at, part=part)

        message = {"id": mid, "type": "message", "role": "assistant"}
        self._item(
            {**message, "status": "in_progress", "content": []},
            {**message, "status": "completed", "content": [part]},
            body,
        )

    def _function_call(self, n: int, call: dict[str, Any]) -> None:
        fid = f"fc_{len(self.output)}"
        args = _arguments(call)
        args = args if isinstance(args, str) else json.dumps(args)
        item = {
            "id": fid,
            "type": "function_call",
            "call_id": call.get("id", f"call_{n}"),
            "name": call["name"],
        }

        def body(index: int) -> None:
            at = {"item_id": fid, "output_index": index}
            for piece in _split(args, self.reply.arg_chunk_size):
                self.emit("response.function_call_arguments.delta", **at, delta=piece)
            self.emit("response.function_call_arguments.done", **at, arguments=args)

        self._item(
            {**item, "arguments": "", "status": "in_progress"},
            {**item, "arguments": args, "status": "completed"},
            body,
        )


def responses_events(reply: Reply, model: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The typed events of a streamed response, in order, numbered."""
    return _ResponseBuilder(reply, model, body).build()


class _ResponsesHandler(_GeminiHandler):
    def do_POST(self) -> None:
        body = self._record()
        if self.path.partition("?")[0].rstrip("/") != "/v1/responses":
            return self._send_json(404, self._openai_error(404, "not found"))
        body = body if isinstance(body, dict) else {}
        reply = self.server.owner._next_reply(body)
        model = body.get("model") or self.server.owner.model
        if isinstance(reply, Reply) and reply.model:
            model = reply.model
        self._serve(reply, lambda r: responses_events(r, model, body), bool(body.get("stream")))

    @staticmethod
    def _openai_error(status: int, message: str) -> dict[str, Any]:
        kind, code = _OPENAI_ERROR_TYPE.get(
            status, ("server_error" if status >= 500 else "invalid_request_error", None)
        )
        return {"error": {"message": message, "type": kind, "param": None, "code": code}}

    def _vendor_error(self, reply: ErrorReply) -> Any:
        return self._openai_error(reply.status, f"scripted error {reply.status}")

    def _frame_event(self, obj: dict[str, Any]) -> bytes:
        return f"event: {obj['type']}\n".encode() + b"data: " + json.dumps(obj).encode() + b"\n\n"

    def _failure(self, reply: Reply, sequence: int) -> bytes:
        error = {"code": "server_error", "message": reply.fail_message}
        if reply.fail_event == "error":
            event = {"type": "error", "sequence_number": sequence, **error, "param": None}
        else:
            builder = _ResponseBuilder(reply, reply.model or self.server.owner.model, {})
            event = {
                "type": "response.failed",
                "sequence_number": sequence,
                "response": builder.response("failed", error=error),
            }
        return self._frame_event(event)

    def _whole(self, events: list[dict[str, Any]]) -> dict[str, Any]:
        return dict(events[-1]["response"])


def _responses_echo(body: Any) -> Reply:
    items = (body or {}).get("input")
    if isinstance(items, str):
        return Reply(items)
    for item in reversed(items or []):
        if isinstance(item, dict) and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, list):
                content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
            return Reply(str(content or ""))
    return Reply("")


class ResponsesServer(ChatServer):
    """The OpenAI Responses API (``POST /v1/responses``) on 127.0.0.1; ``base_url`` ends in
    ``/v1`` as OpenAI's does."""

    handler = _ResponsesHandler

    def _next_reply(self, body: Any) -> AnyReply:
        if self.default is None:
            with self._lock:
                if not self._queue:
                    return _responses_echo(body)
        return super()._next_reply(body)


def start_gemini_server(**kw: Any) -> GeminiServer:
    """A started ``GeminiServer`` (use it as a context manager, or call ``stop()``)."""
    return GeminiServer(**kw).start()  # type: ignore[return-value]


def start_responses_server(**kw: Any) -> ResponsesServer:
    """A started ``ResponsesServer`` (use it as a context manager, or call ``stop()``)."""
    return ResponsesServer(**kw).start()  # type: ignore[return-value]
