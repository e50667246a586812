"""The transport shared by the vendor HTTP providers that stream Server-Sent Events (Gemini,
the OpenAI Responses API): one ``httpx`` client per event loop, retries before the first byte,
the status of a refused request classified, the body decoded sans-I/O (``models/sse.py``) and
handed event by event to the provider's ``StreamState``, credentials scrubbed from every error.

A provider subclasses ``HTTPStreamProvider`` and says only what is its own: the URL, the auth
header, the JSON body, the options it accepts, and the state that turns its events into a
``ModelResponse`` (a ``StreamAccumulator`` subclass). Retry rule, as ``models/openai.py``: a
call is repeated (backoff with jitter, or the server's ``Retry-After``) only while nothing of
the reply was read; once the body started, a failure is raised with ``partial_text`` /
``partial_thinking`` and nothing is repeated.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import httpx

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
from lion_nb.models.base import DeltaKind, DeltaSink, ModelRequest, ModelResponse, ToolCall
from lion_nb.models.registry import COMMON_LOCAL_OPTIONS, env_key, key_env_names
from lion_nb.models.sse import SSEDecoder, SSEError, SSEEvent
from lion_nb.secrets import public_url, redact, secret_values
from lion_nb.usage import Usage

__all__ = ["TRANSPORT_OPTIONS", "HTTPStreamProvider", "StreamAccumulator"]

log = logging.getLogger(__name__)

TRANSPORT_OPTIONS = frozenset({"timeout", "max_retries", "stream", "stream_options"})
"""Options lion_nb reads itself (how a call travels); never copied into a request body."""

_ERROR_BODY_LIMIT = 64 * 1024
_JSON_BODY_LIMIT = 64 * 1024 * 1024
_DRAIN_LIMIT = 64 * 1024

Sleep = Callable[[float], Awaitable[Any]]


class _RetrySafe(Exception):  # internal: a classified error raised before any reply byte
    def __init__(self, error: ProviderError) -> None:
        super().__init__(error)
        self.error = error


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
        error.partial_text = self.text  # type: ignore[attr-defined]
        error.partial_thinking = "".join(self._thinking)  # type: ignore[attr-defined]
        if error.provider is None:
            error.provider = self.provider
        return error

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


class HTTPStreamProvider:
    """Base of a vendor HTTP provider. Subclasses set ``name``, ``default_base_url``,
    ``options`` (the request options they accept; any other is refused by name) and implement
    ``url``, ``auth_headers``, ``build_body`` and ``new_state``.

    ``http_client``: an ``httpx.AsyncClient`` to use (its owner closes it), else one per event
    loop, closed by ``aclose()``. ``sleep``: the coroutine awaited between retries (tests inject
    one). ``api_key_env``: the environment variables the key is read from, in order (a key from
    the environment is never sent to a loopback server: it belongs to the hosted API)."""

    name = "http"
    is_cli = False
    default_base_url = ""
    options: frozenset[str] = frozenset()

    def __init__(
        self,
        model: str | None = None,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        api_key_env: str | tuple[str, ...] | list[str] | None = None,
        timeout: float | None = 60.0,
        max_retries: int = 2,
        http_client: httpx.AsyncClient | None = None,
        headers: dict[str, str] | None = None,
        sleep: Sleep | None = None,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        max_retry_after: float = 60.0,
        **defaults: Any,
    ) -> None:
        self.check_options(defaults)
        self.model = model
        self.base_url = (base_url or self.default_base_url).rstrip("/")
        self.key_env = key_env_names(api_key_env)
        self.timeout = timeout
        self.max_retries = max(0, int(max_retries))
        self.defaults = {k: v for k, v in defaults.items() if v is not None}
        self.backoff, self.max_backoff, self.max_retry_after = backoff, max_backoff, max_retry_after
        self.__api_key = api_key or None
        self._headers = dict(headers or {})
        self._sleep: Sleep = sleep or asyncio.sleep
        self._client = http_client
        self._owns_client = http_client is None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._closer: AsyncGenerator[None, None] | None = None
        self._loopback = _is_loopback(urlsplit(self.base_url).hostname)
        self._shown_url = public_url(self.base_url) or self.base_url

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

    # -- lifecycle -----------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the HTTP client this provider created (an injected client is left open)."""
        closer, self._closer, self._client_loop = self._closer, None, None
        if self._owns_client:
            self._client = None
        if closer is not None:
            await closer.aclose()

    async def _http(self) -> httpx.AsyncClient:
        if not self._owns_client:
            assert self._client is not None
            return self._client
        loop = asyncio.get_running_loop()
        if self._client is None or self._client.is_closed or self._client_loop is not loop:
            client = httpx.AsyncClient(timeout=self.timeout)
            closer = _close_on_loop_shutdown(client)
            await anext(closer)
            self._client, self._client_loop, self._closer = client, loop, closer
        return self._client

    # -- credentials ---------------------------------------------------------------------------

    def _api_key(self) -> str | None:
        if self.__api_key:
            return self.__api_key
        return None if self._loopback else env_key(self.key_env)

    def secret_values(self) -> list[str | None]:
        """The credentials this provider may send (for redaction by cassettes and errors)."""
        import os

        env = [os.environ.get(n) for n in self.key_env]
        return [self.__api_key, *env, *secret_values(self._headers), *secret_values(self.defaults)]

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
        url, headers, secrets = self.url(request), self._request_headers(), self.secret_values()
        attempt = 0
        while True:
            try:
                return await self._attempt(url, body, headers, timeout, on_delta)
            except _RetrySafe as wrapped:
                retry = _scrub(wrapped.error, secrets)
                if not retry.retryable or attempt >= self.max_retries:
                    raise retry from wrapped.__cause__
                delay = self._retry_delay(attempt, getattr(retry, "retry_after", None))
            except ProviderError as error:
                raise _scrub(error, secrets) from error.__cause__
            attempt += 1
            log.info("%s; retry %d of %d in %.2f s", retry, attempt, self.max_retries, delay)
            await self._sleep(delay)

    def _retry_delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.max_retry_after)
        return min(self.backoff * 2**attempt, self.max_backoff) * (1 - 0.25 * random.random())

    async def _attempt(
        self,
        url: str,
        body: dict[str, Any],
        headers: dict[str, str],
        request_timeout: float | None,
        on_delta: DeltaSink | None,
    ) -> ModelResponse:
        client = await self._http()
        timeout = request_timeout
        try:
            async with client.stream(
                "POST", url, json=body, headers=headers, timeout=timeout
            ) as response:
                if response.status_code >= 400:
                    raise _RetrySafe(await self._status_error(response))
                return await self._read(response, self.new_state(on_delta))
        except httpx.TimeoutException as exc:
            error: ProviderError = ProviderTimeout(
                f"no response from {self._shown_url} within {timeout} s", provider=self.name
            )
            raise _RetrySafe(error) from exc
        except httpx.UnsupportedProtocol as exc:
            raise ConfigurationError(f"base_url {self._shown_url!r} is not http(s)") from exc
        except httpx.TransportError as exc:
            reason = f"{type(exc).__name__}: {exc}".rstrip(": ")
            error = ConnectionLost(f"cannot reach {self._shown_url}: {reason}", provider=self.name)
            raise _RetrySafe(error) from exc

    async def _status_error(self, response: httpx.Response) -> ProviderError:
        raw = b""
        try:
            async for piece in response.aiter_bytes():
                raw += piece
                if len(raw) >= _ERROR_BODY_LIMIT:
                    break
        except httpx.HTTPError:
            pass  # the status says enough
        text = raw[:_ERROR_BODY_LIMIT].decode("utf-8", "replace")
        return classify_status(
            response.status_code,
            text,
            response.headers,
            provider=self.name,
            key_env=self.key_env,
            key_sent=self._api_key() is not None,
            loopback=self._loopback,
        )

    async def _read(self, response: httpx.Response, state: StreamAccumulator) -> ModelResponse:
        if "text/event-stream" not in response.headers.get("content-type", ""):
            return await self._read_whole(response, state)
        decoder = SSEDecoder()
        try:
            await self._receive(response, decoder, state)
        except httpx.TimeoutException as exc:
            if not state.done:
                stalled = ProviderTimeout("the reply stalled: no data within the timeout")
                raise state.fail(stalled) from exc
        except httpx.TransportError as exc:
            if not state.done:
                reason = f"the connection dropped mid-reply ({type(exc).__name__})"
                raise state.fail(ConnectionLost(reason)) from exc
        if not state.done:
            for event in decoder.finish():
                if not event.complete:
                    raise state.fail(ConnectionLost("the stream was cut in the middle of an event"))
                state.feed(event)
        if not state.ended():
            raise state.fail(ConnectionLost("the stream ended before its last event"))
        return state.response()

    @staticmethod
    async def _receive(
        response: httpx.Response, decoder: SSEDecoder, state: StreamAccumulator
    ) -> None:
        drained = 0
        async for piece in response.aiter_bytes():
            if state.done:  # read the tail so the connection returns to the pool
                drained += len(piece)
                if drained > _DRAIN_LIMIT:
                    break
                continue
            try:
                events = decoder.feed(piece)
            except SSEError as exc:
                raise state.fail(MalformedResponse(str(exc))) from exc
            for event in events:
                if not state.done:
                    state.feed(event)

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


async def _close_on_loop_shutdown(client: httpx.AsyncClient) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        try:
            await client.aclose()
        except Exception:  # a broken connection must not fail the close
            log.debug("closing the HTTP client failed", exc_info=True)


def _is_loopback(host: str | None) -> bool:
    import ipaddress

    if not host:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _scrub(error: ProviderError, secrets: list[str | None]) -> ProviderError:
    """Remove credentials from everything an error shows (message, args, body)."""
    error.message = redact(error.message, secrets)
    error.args = tuple(redact(a, secrets) if isinstance(a, str) else a for a in error.args)
    if error.body is not None:
        error.body = redact(error.body, secrets)
    return error


# -- until models/http_errors.py (the shared classification) lands ----------------------------


def classify_status(
    status: int,
    text: str,
    headers: httpx.Headers,
    *,
    provider: str,
    key_env: tuple[str, ...],
    key_sent: bool,
    loopback: bool,
) -> ProviderError:
    detail = text.strip()[:300] or "(empty body)"
    try:
        obj = json.loads(text)
    except ValueError:
        obj = None
    if isinstance(obj, dict) and isinstance(obj.get("error"), dict):
        detail = str(obj["error"].get("message") or detail)[:300]
    kw: dict[str, Any] = {"provider": provider, "status": status, "body": text[:2000]}
    if status in (401, 403):
        hint = ""
        if not key_sent:
            where = f" or set ${key_env[0]}" if key_env else ""
            if loopback:
                where = "; a key from the environment is not sent to a loopback server"
            hint = f" (no API key was sent: pass api_key={where})"
        return AuthenticationError(f"authentication failed: {detail}{hint}", **kw)
    if status == 429:
        after = headers.get("retry-after")
        try:
            retry_after = float(after) if after is not None else None
        except ValueError:
            retry_after = None
        return RateLimitError(f"rate limited: {detail}", retry_after=retry_after, **kw)
    if status == 408:
        return ProviderTimeout(f"the server timed out: {detail}", retryable=True, **kw)
    if status >= 500:
        return ServerError(f"server error: {detail}", **kw)
    return ProviderError(f"request rejected: {detail}", **kw)
