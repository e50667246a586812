"""OpenAI-compatible chat completions over HTTP: OpenAI, OpenRouter, Ollama, vLLM, llama.cpp,
LM Studio... (any server speaking ``POST {base_url}/chat/completions``).

Every call streams (``stream=true`` with usage) so deltas reach the branch while the reply is
being written; a server that ignores ``stream`` and answers with one JSON body works too.

Errors become ``lion_nb.errors`` classes. A call is retried (exponential backoff with jitter, or
the server's ``Retry-After``, capped) only when nothing of the reply was read yet: on 429, 408,
5xx, timeouts and connection failures. Once a byte of the body arrived, a failure is raised with
the text received so far in ``exc.partial_text``, because repeating would show the user a
second, different beginning.

Credentials: the key comes from ``api_key`` or the environment variable ``api_key_env``. A key
read from the environment is not sent to a loopback server (it belongs to the hosted API; pass
``api_key=`` for a local server that wants one). Every error leaving ``complete`` is scrubbed of
the key, of the values of secret-named headers and options, and of anything shaped like a
secret (``lion_nb.secrets``).
"""

from __future__ import annotations

import asyncio
import email.utils
import ipaddress
import json
import logging
import os
import random
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any, Literal
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
from lion_nb.models.base import DeltaSink, ModelRequest, ModelResponse
from lion_nb.models.chat_format import (
    ChatAccumulator,
    format_tool,
    format_tool_choice,
    response_format,
)
from lion_nb.models.sse import SSEDecoder, SSEError, SSEEvent
from lion_nb.secrets import public_url, redact, secret_values
from lion_nb.tokens import check_logprobs

__all__ = ["DEFAULT_BASE_URL", "LOCAL_OPTIONS", "OpenAIProvider"]

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
LOCAL_OPTIONS = frozenset(
    {"timeout", "max_retries", "stream", "stream_options", "logprobs", "prefill"}
)
"""Options lion_nb interprets itself; they are never copied into the request body."""

_ERROR_BODY_LIMIT = 64 * 1024  # bytes of an error body worth reading
_JSON_BODY_LIMIT = 64 * 1024 * 1024  # a non-streamed reply larger than this is hostile
_DRAIN_LIMIT = 64 * 1024  # bytes read after [DONE] so the connection can be reused

Sleep = Callable[[float], Awaitable[Any]]


class _RetrySafe(Exception):  # an internal signal; never escapes complete()
    """Carries a classified error raised before any byte of the reply body was consumed."""

    def __init__(self, error: ProviderError) -> None:
        super().__init__(error)
        self.error = error


class OpenAIProvider:
    """``OpenAIProvider(model, api_key, base_url=..., **request_defaults)``.

    ``http_client``: an ``httpx.AsyncClient`` to use (its owner closes it); otherwise one is
    created on first use per event loop and closed by ``aclose()``. ``sleep``: the coroutine
    used between retries (tests inject one that records delays).
    """

    name = "openai"
    is_cli = False

    def __init__(
        self,
        model: str | None = None,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        api_key_env: str | None = "OPENAI_API_KEY",
        timeout: float | None = 60.0,
        max_retries: int = 2,
        http_client: httpx.AsyncClient | None = None,
        headers: dict[str, str] | None = None,
        sleep: Sleep | None = None,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        max_retry_after: float = 60.0,
        json_mode: Literal["json_schema", "json_object"] = "json_schema",
        prefill: Literal["message", "vllm"] | None = None,
        **defaults: Any,
    ) -> None:
        self.model = model
        # How this server continues an assistant prefix (``fork_at_token``): "message" sends
        # it as a trailing assistant message, which llama.cpp's server (and Ollama) continue;
        # "vllm" adds vLLM's ``continue_final_message``. None: the server cannot (OpenAI's API).
        self.prefill = prefill
        # "json_object" sends {"type": "json_object", "schema": ...}: the form llama.cpp's
        # server (and some other local servers) accept; OpenAI's own API wants json_schema.
        self.json_mode = json_mode
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self.api_key_env = api_key_env
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
        parts = urlsplit(self.base_url)
        self._loopback = _is_loopback(parts.hostname)
        # Shown in messages: without any user:password@ part of the URL.
        self._shown_url = public_url(self.base_url) or self.base_url

    def __repr__(self) -> str:
        model = f"model={self.model!r}, " if self.model else ""
        return f"OpenAIProvider({model}base_url={self._shown_url!r})"

    # -- lifecycle ---------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the HTTP client this provider created (an injected client is left open)."""
        closer, self._closer, self._client_loop = self._closer, None, None
        if self._owns_client:
            self._client = None
        if closer is not None:
            await closer.aclose()

    async def __aenter__(self) -> OpenAIProvider:
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

    # -- request -----------------------------------------------------------------------------

    def _api_key(self) -> str | None:
        if self.__api_key:
            return self.__api_key
        if self.api_key_env and not self._loopback:
            return os.environ.get(self.api_key_env) or None
        return None

    def secret_values(self) -> list[str | None]:
        """The credentials this provider may send (for redaction by cassettes)."""
        return self._secrets()

    def _secrets(self) -> list[str | None]:
        env = os.environ.get(self.api_key_env) if self.api_key_env else None
        return [self.__api_key, env, *secret_values(self._headers), *secret_values(self.defaults)]

    def build_body(self, request: ModelRequest) -> tuple[dict[str, Any], float | None]:
        """The JSON body for ``request`` and the timeout for this call."""
        options = {**self.defaults, **{k: v for k, v in request.options.items() if v is not None}}
        timeout = options.get("timeout", self.timeout)
        body: dict[str, Any] = {"model": self.model} if self.model else {}
        body.update({k: v for k, v in options.items() if k not in LOCAL_OPTIONS})
        body["messages"] = request.messages
        if request.prefix is not None:
            body["messages"] = [*request.messages, self._prefix_message(request.prefix, body)]
        logprobs = check_logprobs(options.get("logprobs"))
        if logprobs is not None:
            body["logprobs"] = True
            body["top_logprobs"] = logprobs
        if request.tools:
            body["tools"] = [format_tool(tool) for tool in request.tools]
        if request.tool_choice is not None:
            body["tool_choice"] = format_tool_choice(request.tool_choice)
        if request.response_schema is not None and "response_format" not in body:
            if self.json_mode == "json_object":
                body["response_format"] = {"type": "json_object", "schema": request.response_schema}
            else:
                body["response_format"] = response_format(
                    request.response_schema, request.response_name
                )
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        return body, timeout

    def _prefix_message(self, prefix: str, body: dict[str, Any]) -> dict[str, Any]:
        if self.prefill is None:
            raise ConfigurationError(
                f"the server at {self._shown_url} is not known to continue an assistant prefix "
                "(a fork from a token needs that); if it does, say how: prefill='message' "
                "(llama.cpp's server, Ollama: a trailing assistant message) or prefill='vllm'"
            )
        if self.prefill == "vllm":
            body["continue_final_message"] = True
            body["add_generation_prompt"] = False
        return {"role": "assistant", "content": prefix}

    def _request_headers(self) -> dict[str, str]:
        headers = dict(self._headers)
        key = self._api_key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    async def complete(
        self, request: ModelRequest, on_delta: DeltaSink | None = None
    ) -> ModelResponse:
        body, timeout = self.build_body(request)
        headers = self._request_headers()
        secrets = self._secrets()
        attempt = 0
        while True:
            try:
                return await self._attempt(body, headers, timeout, on_delta)
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
        # Jitter spreads the retries of many concurrent calls that failed together.
        return min(self.backoff * 2**attempt, self.max_backoff) * (1 - 0.25 * random.random())

    async def _attempt(
        self,
        body: dict[str, Any],
        headers: dict[str, str],
        request_timeout: float | None,
        on_delta: DeltaSink | None,
    ) -> ModelResponse:
        url = f"{self.base_url}/chat/completions"
        client = await self._http()
        error: ProviderError
        try:
            async with client.stream(
                "POST", url, json=body, headers=headers, timeout=request_timeout
            ) as response:
                if response.status_code >= 400:
                    raise _RetrySafe(await self._status_error(response))
                acc = ChatAccumulator(on_delta, provider=self.name, logprobs="logprobs" in body)
                return await self._read(response, acc)
        except httpx.TimeoutException as exc:
            error = ProviderTimeout(
                f"no response from {self._shown_url} within {request_timeout} s",
                provider=self.name,
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
            pass  # the status says enough; the body was a courtesy
        text = raw[:_ERROR_BODY_LIMIT].decode("utf-8", "replace")
        detail, code = _error_detail(text)
        status = response.status_code
        kw: dict[str, Any] = {"provider": self.name, "status": status, "body": text[:2000]}
        if status in (401, 403):
            hint = ""
            if self._api_key() is None:
                where = f" or set ${self.api_key_env}" if self.api_key_env else ""
                if self._loopback:  # see the module docstring
                    where = "; a key from the environment is not sent to a loopback server"
                hint = f" (no API key was sent: pass api_key={where})"
            return AuthenticationError(f"authentication failed: {detail}{hint}", **kw)
        if status == 429:
            return RateLimitError(
                f"rate limited: {detail}",
                retry_after=_retry_after(response.headers),
                retryable=code != "insufficient_quota",  # no amount of waiting buys credit
                **kw,
            )
        if status == 408:
            return ProviderTimeout(f"the server timed out: {detail}", retryable=True, **kw)
        if status >= 500:
            return ServerError(f"server error: {detail}", **kw)
        return ProviderError(f"request rejected: {detail}", **kw)

    # -- reply -------------------------------------------------------------------------------

    async def _read(self, response: httpx.Response, acc: ChatAccumulator) -> ModelResponse:
        sse = "text/event-stream" in response.headers.get("content-type", "")
        decoder, buffered = SSEDecoder(), bytearray()
        done = await self._receive(response, decoder, None if sse else buffered, acc)
        if not sse:
            text = buffered.decode("utf-8", "replace")
            try:
                obj = json.loads(text)
            except ValueError:
                done = self._untyped_stream(response, decoder, text, bytes(buffered), acc)
            else:
                self._apply(obj, acc, text)
                return acc.response(raw=obj)
        return self._end_of_stream(decoder, done, acc)

    async def _receive(
        self,
        response: httpx.Response,
        decoder: SSEDecoder,
        buffered: bytearray | None,
        acc: ChatAccumulator,
    ) -> bool:
        """Read the body: decode it as SSE (``buffered`` None) or collect it into ``buffered``.
        True once the end-of-stream marker was seen."""
        done, drained = False, 0
        try:
            async for piece in response.aiter_bytes():
                if done:
                    # Read the tail (usually only the chunked terminator) so the connection
                    # returns to the pool; a server that keeps talking is cut off.
                    drained += len(piece)
                    if drained > _DRAIN_LIMIT:
                        break
                elif buffered is None:
                    done = self._feed(decoder, piece, acc)
                else:
                    buffered += piece
                    if len(buffered) > _JSON_BODY_LIMIT:
                        raise acc.fail(MalformedResponse("the reply body is too large"))
        except httpx.TimeoutException as exc:
            if not done:
                raise acc.fail(
                    ProviderTimeout("the reply stalled: no data within the timeout")
                ) from exc
        except httpx.TransportError as exc:
            if not done:
                reason = f"the connection dropped mid-reply ({type(exc).__name__})"
                raise acc.fail(ConnectionLost(reason)) from exc
        return done

    def _untyped_stream(
        self,
        response: httpx.Response,
        decoder: SSEDecoder,
        text: str,
        body: bytes,
        acc: ChatAccumulator,
    ) -> bool:
        """A body that is not JSON: an event stream sent with a wrong content type is decoded
        as one; anything else is malformed."""
        if not text.lstrip().startswith(("data:", "event:", ":")):
            raise acc.fail(
                MalformedResponse(
                    "the reply is neither JSON nor an event stream",
                    status=response.status_code,
                    body=text[:2000],
                )
            ) from None
        return self._feed(decoder, body, acc)

    def _end_of_stream(
        self, decoder: SSEDecoder, done: bool, acc: ChatAccumulator
    ) -> ModelResponse:
        if not done:
            for event in decoder.finish():
                if not event.complete and event.data.strip() != "[DONE]":
                    raise acc.fail(ConnectionLost("the stream was cut in the middle of an event"))
                done = self._handle(event, acc) or done
        if not done and acc.finish_reason is None:
            raise acc.fail(ConnectionLost("the stream ended before [DONE]"))
        return acc.response()

    def _feed(self, decoder: SSEDecoder, piece: bytes, acc: ChatAccumulator) -> bool:
        """Decode and apply ``piece``; True once the end-of-stream marker was seen."""
        try:
            events = decoder.feed(piece)
        except SSEError as exc:
            raise acc.fail(MalformedResponse(str(exc))) from exc
        return any(self._handle(event, acc) for event in events)

    def _handle(self, event: SSEEvent, acc: ChatAccumulator) -> bool:
        """Apply one event; True at the end-of-stream marker."""
        data = event.data.strip()
        if data == "[DONE]":
            return True
        if event.event not in ("message", "error"):
            log.debug("skipping an event of unknown type %r", event.event[:40])
            return False
        if not data:
            return False  # an empty keep-alive event
        try:
            obj = json.loads(data)
        except ValueError:
            raise acc.fail(
                MalformedResponse("a stream event is not JSON", body=data[:2000])
            ) from None
        self._apply(obj, acc, data)
        return False

    def _apply(self, obj: Any, acc: ChatAccumulator, text: str) -> None:
        if isinstance(obj, dict) and obj.get("error"):
            detail, code = _error_detail(text)
            cls: type[ProviderError] = ProviderError
            if code in ("rate_limit_exceeded", "rate_limit") or "rate" in str(code):
                cls = RateLimitError
            elif code in ("server_error", "overloaded_error", "internal_error"):
                cls = ServerError
            raise acc.fail(
                cls(f"the server reported an error: {detail}", body=text[:2000], retryable=False)
            )
        if not isinstance(obj, dict) or not isinstance(obj.get("choices", []), list):
            raise acc.fail(MalformedResponse("not a chat-completions object", body=text[:2000]))
        acc.add(obj)


async def _close_on_loop_shutdown(client: httpx.AsyncClient) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        try:
            await client.aclose()
        except Exception:  # a broken connection must not fail the close
            log.debug("closing the HTTP client failed", exc_info=True)


def _is_loopback(host: str | None) -> bool:
    if not host:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _error_detail(text: str) -> tuple[str, str | None]:
    """(message, code) from an error body of the usual shapes, else the start of the text."""
    try:
        obj = json.loads(text)
    except ValueError:
        return (text.strip()[:300] or "(empty body)"), None
    err = obj.get("error", obj) if isinstance(obj, dict) else obj
    if isinstance(err, dict):
        message = err.get("message") or err.get("detail") or json.dumps(err)[:300]
        code = err.get("code") or err.get("type")
        return str(message)[:300], (str(code) if code is not None else None)
    return str(err)[:300], None


def _retry_after(headers: httpx.Headers) -> float | None:
    """Seconds from ``retry-after-ms`` (OpenAI) or ``Retry-After`` (seconds or HTTP date)."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) * scale)
        except ValueError:
            pass
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            continue
        return max(0.0, when.timestamp() - time.time())
    return None


def _scrub(error: ProviderError, secrets: list[str | None]) -> ProviderError:
    """Remove credentials from everything an error shows (message, args, body)."""
    error.message = redact(error.message, secrets)
    error.args = tuple(redact(a, secrets) if isinstance(a, str) else a for a in error.args)
    if error.body is not None:
        error.body = redact(error.body, secrets)
    return error
