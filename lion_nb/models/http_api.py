"""What every HTTP API provider shares: its client (one per event loop, closed with the
provider or its loop), its key (``api_key=`` or the registry's environment variables), the
retry loop and the classification of failures (``models/http_errors.py``).

A provider subclasses ``HTTPProvider`` and writes ``build_body`` / ``complete`` and its stream
reader; ``post_stream`` sends one attempt and hands the open response to the reader, turning a
status >= 400, a timeout or a connection failure before the body into a retryable
``RetrySafe``; ``read_failure`` turns a transport failure mid-body into the error carrying what
arrived. A key read from the environment is not sent to a loopback server (it belongs to the
hosted API; pass ``api_key=`` for a local server that wants one). A vendor's API (a provider
with key variables) pointed at a server that is not loopback, with no key, is refused at the
call with an ``AuthenticationError`` naming the variables and ``api_key=``, before any
connection (``check_key``).

A generation is sent to a plain-HTTP server (a local one: llama.cpp's ``llama-server``,
``llama_cpp.server``, Ollama, LM Studio, vLLM) on a connection of its own, closed after the
reply (``Connection: close``): ``llama-server`` closes the connection after every streamed
reply although it promised to keep it, and a request written to such a connection before
the close arrives fails with "server disconnected without sending a response" — which the
retry loop would send again, unasked. A new loopback connection costs a fraction of a
millisecond. Over HTTPS (the vendor clouds and their proxies, which keep their keep-alive
promises, and where a new connection costs a TLS handshake) connections stay pooled.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import os
import re
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx

from lion_nb.errors import (
    AuthenticationError,
    ConfigurationError,
    ConnectionLost,
    MalformedResponse,
    ProviderError,
    ProviderTimeout,
)
from lion_nb.models.http_errors import Retry, RetrySafe, call_with_retries, status_error
from lion_nb.models.probe import VENDOR_HOSTS
from lion_nb.models.registry import env_key, key_env_names
from lion_nb.models.sse import SSEDecoder, SSEError, SSEEvent
from lion_nb.secrets import public_url, secret_values

__all__ = ["HTTPProvider", "is_loopback", "read_failure", "read_sse", "stream_cut"]

log = logging.getLogger(__name__)

T = TypeVar("T")
Sleep = Callable[[float], Awaitable[Any]]

_ERROR_BODY_LIMIT = 64 * 1024  # bytes of an error body worth reading
# A header that carries a key (``Authorization``, ``x-api-key``, ``x-goog-api-key``, ``api-key``).
_AUTH_HEADER = re.compile(r"authorization|api[-_]?key", re.IGNORECASE)


class HTTPProvider:
    """Base of the HTTP API providers. ``http_client``: an ``httpx.AsyncClient`` to use (its
    owner closes it); otherwise one is created on first use per event loop and closed by
    ``aclose()``. ``sleep``: the coroutine used between retries (tests inject one)."""

    name = "http"
    is_cli = False
    default_base_url = ""
    # A key from the environment goes to a loopback server too? No for OpenAI-compatible
    # servers (a local one is other software: OPENAI_API_KEY is not its key); a vendor whose
    # only servers are its API and proxies of it says yes.
    env_key_to_loopback = False
    # Said when the server answers 404 (it has no such endpoint: maybe not this API at all);
    # ``{url}`` is the URL asked.
    not_found_hint = ""

    def __init__(
        self,
        model: str | None = None,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        api_key_env: str | tuple[str, ...] | None = (),
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
        self.model = model
        self.base_url = (base_url or self.default_base_url).rstrip("/")
        self.key_env = key_env_names(api_key_env)
        self.api_key_env = self.key_env[0] if self.key_env else None  # named in messages
        self.timeout = timeout
        self.max_retries = max(0, int(max_retries))
        self.retry = Retry(self.max_retries, backoff, max_backoff, max_retry_after)
        self.defaults = {k: v for k, v in defaults.items() if v is not None}
        self.__api_key = api_key or None
        self._headers = dict(headers or {})
        self._sleep: Sleep = sleep or asyncio.sleep
        self._client = http_client
        self._owns_client = http_client is None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._closer: AsyncGenerator[None, None] | None = None
        self._loopback = is_loopback(urlsplit(self.base_url).hostname)
        # A generation gets a fresh connection over plain HTTP (the module says why).
        self._pooled = urlsplit(self.base_url).scheme == "https"
        # Shown in messages: without any user:password@ part of the URL.
        self._shown_url = public_url(self.base_url) or self.base_url

    # -- lifecycle ---------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the HTTP client this provider created (an injected client is left open)."""
        closer, self._closer, self._client_loop = self._closer, None, None
        if self._owns_client:
            self._client = None
        if closer is not None:
            await closer.aclose()

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _http(self) -> httpx.AsyncClient:
        if not self._owns_client:
            assert self._client is not None
            return self._client
        loop = asyncio.get_running_loop()
        if self._client is None or self._client.is_closed or self._client_loop is not loop:
            # Pooled connections belong to the loop that opened them: each loop gets its own
            # client, closed by ``aclose()`` or, failing that, when its loop shuts down (the
            # closer is an async generator, and asyncio.run / pytest close those first).
            client = httpx.AsyncClient(timeout=self.timeout)
            closer = _close_on_loop_shutdown(client)
            await anext(closer)
            self._client, self._client_loop, self._closer = client, loop, closer
        return self._client

    # -- credentials -------------------------------------------------------------------------

    def _api_key(self) -> str | None:
        if self.__api_key:
            return self.__api_key
        if self.env_key_to_loopback or not self._loopback:
            return env_key(self.key_env)
        return None

    def missing_key(self) -> bool:
        """A vendor's API (a provider with key variables) pointed at a server that is not
        loopback, with no key to send: the call cannot succeed, and nothing is sent. A key
        given in ``headers`` counts; a loopback server may want none."""
        if not self.key_env or self._loopback or self._api_key() is not None:
            return False
        return not any(_AUTH_HEADER.search(name) for name in self._headers)

    def check_key(self) -> None:
        """Raise ``AuthenticationError`` naming the key's variables and ``api_key=`` when the
        key is missing (``missing_key``): before any connection, at the call, never at
        construction (a notebook builds its models before it sets keys)."""
        if not self.missing_key():
            return
        names = " or ".join(f"${n}" for n in self.key_env)
        host = (urlsplit(self.base_url).hostname or "").lower()
        own = "" if host in VENDOR_HOSTS else " (a server that needs none takes api_key='none')"
        raise AuthenticationError(
            f"no API key for {self._shown_url}: set {names} or pass iModel(..., api_key=...)"
            f"{own}; nothing was sent",
            provider=self.name,
        )

    async def get_json(self, url: str, timeout: float) -> tuple[int, Any] | None:  # noqa: ASYNC109
        """``GET url`` on this provider's client with its key (a server's own routes, such
        as llama-server's ``/props``): the status and the JSON body (None when not JSON), or
        None when the server cannot be reached."""
        headers = {}
        if key := self._api_key():
            headers["Authorization"] = f"Bearer {key}"
        client = await self._http()
        try:
            response = await client.get(url, headers=headers, timeout=timeout)
        except httpx.HTTPError:
            return None
        try:
            return response.status_code, response.json()
        except ValueError:
            return response.status_code, None

    async def post_json(self, url: str, body: dict[str, Any]) -> Any:
        """``POST body`` to ``url`` on this provider's client with its key, retried and
        classified as a call is (a server's own routes, such as llama-server's
        ``/tokenize``): the JSON body of the reply."""
        headers = {}
        if key := self._api_key():
            headers["Authorization"] = f"Bearer {key}"

        async def read(response: httpx.Response) -> Any:
            await response.aread()
            try:
                return response.json()
            except ValueError as exc:
                raise MalformedResponse(
                    f"{_no_query(response.url)} did not answer JSON", provider=self.name
                ) from exc

        async def post() -> Any:
            return await self.post_stream(url, body, headers, self.timeout, read)

        return await self.with_retries(post)

    def secret_values(self) -> list[str | None]:
        """The credentials this provider may send (for redaction by cassettes)."""
        return self._secrets()

    def _secrets(self) -> list[str | None]:
        env = [os.environ.get(name) for name in self.key_env]
        return [self.__api_key, *env, *secret_values(self._headers), *secret_values(self.defaults)]

    # -- one call ----------------------------------------------------------------------------

    async def with_retries(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """``attempt`` retried as ``http_errors.call_with_retries`` says, errors scrubbed."""
        return await call_with_retries(attempt, self.retry, self._sleep, self._secrets())

    async def post_stream(
        self,
        url: str,
        body: dict[str, Any],
        headers: dict[str, str],
        timeout: float | None,  # noqa: ASYNC109 - httpx's per-request timeout, passed on
        read: Callable[[httpx.Response], Awaitable[T]],
    ) -> T:
        """POST ``body`` and give the open response to ``read``; failures before the body are
        classified and wrapped in ``RetrySafe``; a missing key is refused before connecting."""
        self.check_key()
        client = await self._http()
        if not self._pooled and not any(name.lower() == "connection" for name in headers):
            headers = {**headers, "Connection": "close"}
        error: ProviderError
        try:
            async with client.stream(
                "POST", url, json=body, headers=headers, timeout=timeout
            ) as response:
                if response.status_code >= 400:
                    raise RetrySafe(await self._status_error(response))
                return await read(response)
        except httpx.TimeoutException as exc:
            error = ProviderTimeout(
                f"no response from {self._shown_url} within {timeout} s", provider=self.name
            )
            raise RetrySafe(error) from exc
        except httpx.UnsupportedProtocol as exc:
            raise ConfigurationError(f"base_url {self._shown_url!r} is not http(s)") from exc
        except httpx.TransportError as exc:
            reason = f"{type(exc).__name__}: {exc}".rstrip(": ")
            error = ConnectionLost(f"cannot reach {self._shown_url}: {reason}", provider=self.name)
            raise RetrySafe(error) from exc

    async def _status_error(self, response: httpx.Response) -> ProviderError:
        raw = b""
        try:
            async for piece in response.aiter_bytes():
                raw += piece
                if len(raw) >= _ERROR_BODY_LIMIT:
                    break
        except httpx.HTTPError:
            pass  # the status says enough; the body was a courtesy
        return status_error(
            response.status_code,
            response.headers,
            raw[:_ERROR_BODY_LIMIT].decode("utf-8", "replace"),
            provider=self.name,
            key_env=self.key_env,
            key_sent=self._api_key() is not None,
            loopback=self._loopback and not self.env_key_to_loopback,
            not_found=self.not_found_hint.format(url=_no_query(response.url)),
        )


def _no_query(url: httpx.URL) -> str:
    return public_url(str(url.copy_with(query=None))) or ""


def read_failure(exc: httpx.HTTPError, *, received: bool = True) -> ProviderError:
    """A transport failure while the body was being read; ``received``: part of the reply
    (text, thinking or a tool call) had arrived."""
    if isinstance(exc, httpx.TimeoutException):
        return ProviderTimeout("the reply stalled: no data within the timeout")
    when = "ended" if received else "began"
    return ConnectionLost(f"the connection dropped before the reply {when} ({type(exc).__name__})")


SERIAL_SERVER_HINT = (
    ". A server that runs one generation at a time (llama_cpp.server) ends the running reply "
    "when another request arrives: send it one request at a time (iModel(..., "
    "max_concurrent=1))"
)
"""What to do about a stream a server ended cleanly but without finishing its reply."""

SILENT_SERVER_HINT = (
    ". The server sent no event at all: it failed on the request (its log says why). "
    "llama_cpp.server answers a request longer than its window this way: give the window "
    "(iModel(..., context_window=N)) so lion_nb can fit or refuse the request"
)
"""What to do about an event stream that ended before its first event (HTTP 200, no body)."""


def stream_cut(how: str, *, received: bool, hint: str = "") -> ConnectionLost:
    """A stream the server ended before its reply was complete (``how``: what the stream
    lacked), never a reply: "the server closed the stream before the reply began" when nothing
    of it (text, thinking, a tool call) arrived, "... ended" otherwise (the accumulator's
    ``fail`` attaches what did)."""
    when = "ended" if received else "began"
    return ConnectionLost(f"the server closed the stream before the reply {when} ({how}){hint}")


async def _close_on_loop_shutdown(client: httpx.AsyncClient) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        try:
            await client.aclose()
        except Exception:  # a broken connection must not fail the close
            log.debug("closing the HTTP client failed", exc_info=True)


def is_loopback(host: str | None) -> bool:
    if not host:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


_DRAIN_LIMIT = 64 * 1024  # bytes read after the last event so the connection can be reused


async def read_sse(
    response: httpx.Response,
    *,
    done: Callable[[], bool],
    on_event: Callable[[SSEEvent], None],
    fail: Callable[[ProviderError], ProviderError],
    received: Callable[[], bool] = lambda: True,
) -> None:
    """Decode the body as Server-Sent Events, giving each to ``on_event`` until ``done()``
    (the stream's terminal event); then read the tail, up to a limit, so the connection
    returns to the pool. A malformed stream, a transport failure before the end, or an event
    cut off by the end of the body is raised through ``fail`` (which attaches what arrived);
    ``received()``: part of the reply arrived (the error says "before the reply ended", else
    "began")."""
    decoder, drained = SSEDecoder(), 0
    try:
        async for piece in response.aiter_bytes():
            if done():
                drained += len(piece)
                if drained > _DRAIN_LIMIT:  # a server that keeps talking is cut off
                    break
                continue
            try:
                events = decoder.feed(piece)
            except SSEError as exc:
                raise fail(MalformedResponse(str(exc))) from exc
            for event in events:
                if not done():
                    on_event(event)
    except httpx.TransportError as exc:  # timeouts included
        if not done():
            raise fail(read_failure(exc, received=received())) from exc
    if done():
        return
    for event in decoder.finish():
        if not event.complete:
            raise fail(stream_cut("in the middle of an event", received=received()))
        on_event(event)
