"""The Server-Sent-Events half of the vendor HTTP providers that stream SSE (Gemini, the
OpenAI Responses API), on ``models/http_api.py``'s ``HTTPProvider`` (client, key, retries,
classification): the body decoded sans-I/O (``models/sse.py``) and handed event by event to
the provider's ``StreamAccumulator``, which reports deltas and builds the ``ModelResponse``.

A provider subclasses ``HTTPStreamProvider`` and says only what is its own: the URL, the auth
header, the JSON body, the options it accepts (any other is refused by name), and the state
that turns its events into a reply. A call is repeated only while nothing of the reply was
read; once the body started, a failure is raised with ``partial_text`` / ``partial_thinking``.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx

from lion_nb.errors import ConfigurationError, MalformedResponse, ProviderError
from lion_nb.models.base import DeltaKind, DeltaSink, ModelRequest, ModelResponse, ToolCall
from lion_nb.models.http_api import HTTPProvider, read_sse, stream_cut
from lion_nb.models.registry import COMMON_LOCAL_OPTIONS
from lion_nb.models.sse import SSEEvent
from lion_nb.usage import Usage

__all__ = ["TRANSPORT_OPTIONS", "HTTPStreamProvider", "StreamAccumulator"]

log = logging.getLogger(__name__)

TRANSPORT_OPTIONS = frozenset({"timeout", "max_retries", "stream", "stream_options"})
"""Options lion_nb reads itself (how a call travels); never copied into a request body."""

_JSON_BODY_LIMIT = 64 * 1024 * 1024  # a non-streamed reply larger than this is hostile


class _Tool:
    __slots__ = ("args", "arguments", "id", "name")

    def __init__(self, call_id: str | None, name: str | None) -> None:
        self.id, self.name = call_id, name
        self.args: list[str] = []
        self.arguments: dict[str, Any] | None = None  # given whole (Gemini)


class StreamAccumulator:
    """What a reply adds up to while it streams: text and thinking (reported to the
    ``DeltaSink`` as they arrive), tool calls (streamed arguments or whole ones), usage, model,
    finish reason. ``done`` turns True at the stream's terminal event; ``fail(error)`` attaches
    what arrived to an error. A provider's state subclasses it and implements ``feed``."""

    def __init__(self, on_delta: DeltaSink | None, provider: str) -> None:
        self._on_delta = on_delta
        self.provider = provider
        self._text: list[str] = []
        self._thinking: list[str] = []
        self._tools: dict[str, _Tool] = {}
        self.usage = Usage()
        self.model: str | None = None
        self.finish_reason: str | None = None
        self.id: str | None = None
        self.done = False

    # -- provider hooks ------------------------------------------------------------------------

    def feed(self, event: SSEEvent) -> None:
        """Apply one event (set ``done`` at the terminal one; raise ``self.fail(...)``)."""
        raise NotImplementedError

    def ended(self) -> bool:
        """At the end of the body: was this a complete reply? (Default: the terminal event
        arrived; a format without one says so from what it saw.)"""
        return self.done

    def whole(self, obj: Any, text: str) -> None:
        """Apply a non-streamed JSON body (a server that ignored the streaming request)."""
        raise NotImplementedError

    # -- building ------------------------------------------------------------------------------

    @property
    def text(self) -> str:
        return "".join(self._text)

    @property
    def thinking_text(self) -> str:
        return "".join(self._thinking)

    @property
    def received(self) -> bool:
        """Whether any of the reply (text, thinking, a tool call) has arrived."""
        return bool(self._text or self._thinking or self._tools)

    def add_text(self, piece: str) -> None:
        if piece:
            self._text.append(piece)
            self._emit("text", piece)

    def add_thinking(self, piece: str) -> None:
        if piece:
            self._thinking.append(piece)
            self._emit("thinking", piece)

    def open_tool(self, key: str, call_id: str | None, name: str | None) -> None:
        """A tool call begins (arguments follow as ``add_tool_args``)."""
        self._tools.setdefault(key, _Tool(call_id, name))

    def add_tool_args(self, key: str, piece: str) -> None:
        tool = self._tools.setdefault(key, _Tool(None, None))
        if piece:
            tool.args.append(piece)
            self._emit("tool_args", piece, name=tool.name, call_id=tool.id)

    def set_tool_args(self, key: str, arguments: str) -> None:
        """The complete arguments (a ``.done`` event): they win over the deltas."""
        tool = self._tools.setdefault(key, _Tool(None, None))
        tool.args = [arguments]

    def add_whole_tool(self, key: str, call_id: str, name: str, arguments: dict[str, Any]) -> None:
        """A tool call that arrives complete (its arguments reported as one delta)."""
        tool = self._tools.setdefault(key, _Tool(call_id, name))
        tool.arguments = arguments
        self._emit(
            "tool_args", json.dumps(arguments, ensure_ascii=False), name=name, call_id=call_id
        )

    @property
    def has_tool_calls(self) -> bool:
        return bool(self._tools)

    def _emit(
        self, kind: DeltaKind, delta: str, *, name: str | None = None, call_id: str | None = None
    ) -> None:
        if self._on_delta is not None:
            if name is None and call_id is None:
                self._on_delta(kind, delta)
            else:
                self._on_delta(kind, delta, name=name, call_id=call_id)

    def fail(self, error: ProviderError) -> ProviderError:
        """``error`` with ``partial_text`` and ``partial_thinking`` set: nothing is lost."""
        return error.with_partial(self.text, "".join(self._thinking), self.provider)

    def malformed(self, message: str, body: str | None = None) -> ProviderError:
        return self.fail(MalformedResponse(message, provider=self.provider, body=body))

    def tool_calls(self) -> list[ToolCall]:
        calls: list[ToolCall] = []
        for n, tool in enumerate(self._tools.values()):
            if not tool.name:
                raise self.malformed(f"tool call #{n} has no function name")
            arguments = tool.arguments
            if arguments is None:
                text = "".join(tool.args)
                try:
                    arguments = json.loads(text) if text.strip() else {}
                except ValueError:
                    raise self.malformed(
                        f"arguments of tool call {tool.name!r} are not JSON: {text[:200]!r}", text
                    ) from None
            if not isinstance(arguments, dict):
                raise self.malformed(f"arguments of tool call {tool.name!r} are not a JSON object")
            calls.append(ToolCall(id=tool.id or f"call_{n}", name=tool.name, arguments=arguments))
        return calls

    def response(self, raw: Any = None) -> ModelResponse:
        return ModelResponse(
            text=self.text,
            tool_calls=self.tool_calls(),
            thinking="".join(self._thinking) or None,
            usage=self.usage,
            model=self.model,
            finish_reason=self.finish_reason,
            raw=raw if raw is not None else {"id": self.id, "model": self.model},
        )

    def json_of(self, event: SSEEvent) -> Any:
        """The event's data as JSON (a MalformedResponse if it is not)."""
        try:
            return json.loads(event.data)
        except ValueError:
            raise self.malformed("a stream event is not JSON", event.data[:2000]) from None


class HTTPStreamProvider(HTTPProvider):
    """Base of a vendor SSE provider. Subclasses set ``name``, ``default_base_url``,
    ``options`` (the request options they accept, their registry entry's list) and implement
    ``url``, ``auth_headers``, ``build_body`` and ``new_state``. The constructor takes
    ``HTTPProvider``'s arguments; any other keyword is a request default, checked here."""

    options: frozenset[str] = frozenset()

    def __init__(self, model: str | None = None, api_key: str | None = None, **kw: Any) -> None:
        super().__init__(model, api_key, **kw)
        self.check_options(self.defaults)

    def __repr__(self) -> str:
        model = f"model={self.model!r}, " if self.model else ""
        return f"{type(self).__name__}({model}base_url={self._shown_url!r})"

    # -- what a subclass says ----------------------------------------------------------------

    def url(self, request: ModelRequest) -> str:
        raise NotImplementedError

    def auth_headers(self, key: str) -> dict[str, str]:
        raise NotImplementedError

    def build_body(self, request: ModelRequest) -> tuple[dict[str, Any], float | None]:
        raise NotImplementedError

    def new_state(self, on_delta: DeltaSink | None) -> StreamAccumulator:
        raise NotImplementedError

    def state_for(self, body: dict[str, Any], on_delta: DeltaSink | None) -> StreamAccumulator:
        """The state that reads the reply to ``body`` (``new_state``, unless what the body
        asked for changes how the reply is read)."""
        return self.new_state(on_delta)

    def check_options(self, options: dict[str, Any]) -> None:
        """Refuse, by name, an option this API does not take (instead of sending it)."""
        unknown = sorted(k for k in options if k not in self.options | TRANSPORT_OPTIONS)
        if unknown:
            own = sorted(self.options - COMMON_LOCAL_OPTIONS)
            raise ConfigurationError(
                f"{type(self).__name__} does not understand {', '.join(map(repr, unknown))}; "
                f"its options are {', '.join(own)}"
            )

    def merged_options(self, request: ModelRequest) -> tuple[dict[str, Any], float | None]:
        """The iModel defaults overlaid by the request's options (checked), and the timeout."""
        given = {k: v for k, v in request.options.items() if v is not None}
        self.check_options(given)
        options = {**self.defaults, **given}
        timeout = options.pop("timeout", self.timeout)
        for key in TRANSPORT_OPTIONS:
            options.pop(key, None)
        return options, timeout

    def _request_headers(self) -> dict[str, str]:
        headers = dict(self._headers)
        key = self._api_key()
        if key:
            headers.update(self.auth_headers(key))
        return headers

    # -- the call ------------------------------------------------------------------------------

    async def complete(
        self, request: ModelRequest, on_delta: DeltaSink | None = None
    ) -> ModelResponse:
        body, timeout = self.build_body(request)
        url, headers = self.url(request), self._request_headers()

        async def read(response: httpx.Response) -> ModelResponse:
            return await self._read(response, self.state_for(body, on_delta))

        return await self.with_retries(lambda: self.post_stream(url, body, headers, timeout, read))

    async def _read(self, response: httpx.Response, state: StreamAccumulator) -> ModelResponse:
        if "text/event-stream" not in response.headers.get("content-type", ""):
            return await self._read_whole(response, state)
        await read_sse(
            response,
            done=lambda: state.done,
            on_event=state.feed,
            fail=state.fail,
            received=lambda: state.received,
        )
        if not state.ended():
            raise state.fail(stream_cut("it ended before its last event", received=state.received))
        return state.response()

    @staticmethod
    async def _read_whole(response: httpx.Response, state: StreamAccumulator) -> ModelResponse:
        """A server that answered the streaming request with one JSON body."""
        raw = bytearray()
        async for piece in response.aiter_bytes():
            raw += piece
            if len(raw) > _JSON_BODY_LIMIT:
                raise state.fail(MalformedResponse("the reply body is too large"))
        text = raw.decode("utf-8", "replace")
        try:
            obj = json.loads(text)
        except ValueError:
            bad = "the reply is neither JSON nor an event stream"
            raise state.malformed(bad, text[:2000]) from None
        state.whole(obj, text)
        return state.response(raw=obj)
