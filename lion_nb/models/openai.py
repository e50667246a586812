"""OpenAI-compatible chat completions over HTTP: OpenAI, OpenRouter, Ollama, vLLM, llama.cpp,
LM Studio... (any server speaking ``POST {base_url}/chat/completions``).

Every call streams (``stream=true`` with usage) so deltas reach the branch while the reply is
being written; a server that ignores ``stream`` and answers with one JSON body works too.

Errors become ``lion_nb.errors`` classes (``models/http_errors.py``). A call is retried (exponential backoff with jitter, or
the server's ``Retry-After``, capped) only when nothing of the reply was read yet: on 429, 408,
5xx, timeouts and connection failures. Once a byte of the body arrived, a failure is raised with
the text received so far in ``exc.partial_text``, because repeating would show the user a
second, different beginning.

Credentials: the key comes from ``api_key`` or the environment variables ``api_key_env`` (the
registry's ``key_env``). A key read from the environment is not sent to a loopback server (it belongs to the hosted API; pass
``api_key=`` for a local server that wants one). Every error leaving ``complete`` is scrubbed of
the key, of the values of secret-named headers and options, and of anything shaped like a
secret (``lion_nb.secrets``).
"""

from __future__ import annotations

import json
import logging
from typing import Any, Literal

import httpx

from lion_nb.errors import ConfigurationError, MalformedResponse, ProviderError
from lion_nb.models.base import DeltaSink, ModelRequest, ModelResponse
from lion_nb.models.capabilities import remember, remembered
from lion_nb.models.chat_format import (
    ChatAccumulator,
    format_tool,
    format_tool_choice,
    response_format,
)
from lion_nb.models.http_api import (
    SERIAL_SERVER_HINT,
    SILENT_SERVER_HINT,
    HTTPProvider,
    read_failure,
    stream_cut,
)
from lion_nb.models.http_errors import event_error
from lion_nb.models.logprobs import check_logprobs
from lion_nb.models.probe import refuses_json_schema
from lion_nb.models.registry import COMMON_LOCAL_OPTIONS, PROVIDERS
from lion_nb.models.sse import SSEDecoder, SSEError, SSEEvent

__all__ = ["DEFAULT_BASE_URL", "OpenAIProvider"]

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_OURS = COMMON_LOCAL_OPTIONS | {"logprobs"}
"""Options lion_nb interprets itself; they are never copied into the request body as given."""

_JSON_BODY_LIMIT = 64 * 1024 * 1024  # a non-streamed reply larger than this is hostile
_DRAIN_LIMIT = 64 * 1024  # bytes read after [DONE] so the connection can be reused


class OpenAIProvider(HTTPProvider):
    """``OpenAIProvider(model, api_key, base_url=..., **request_defaults)``.

    ``http_client``: an ``httpx.AsyncClient`` to use (its owner closes it); otherwise one is
    created on first use per event loop and closed by ``aclose()``. ``sleep``: the coroutine
    used between retries (tests inject one that records delays). ``models/http_api.py`` holds
    what every HTTP provider shares.
    """

    name = "openai"
    default_base_url = DEFAULT_BASE_URL
    not_found_hint = (
        "The server has no {url} (OpenAI's chat completions): base_url should be its "
        "OpenAI-compatible root, for a local server usually http://host:port/v1"
    )

    def __init__(
        self,
        model: str | None = None,
        api_key: str | None = None,
        *,
        api_key_env: str | tuple[str, ...] | None = PROVIDERS["openai"].key_env,
        json_mode: Literal["json_schema", "json_object"] | None = None,
        prefill: Literal["message", "vllm"] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(model, api_key, api_key_env=api_key_env, **options)
        # How this server continues an assistant prefix (``fork_at_token``): "message" sends
        # it as a trailing assistant message, which llama.cpp's server (and Ollama) continue;
        # "vllm" adds vLLM's ``continue_final_message``. None: the server cannot (OpenAI's API).
        self.prefill = prefill
        # "json_object" sends {"type": "json_object", "schema": ...}: the form
        # llama_cpp.server (and some other local servers) accept; OpenAI's own API wants
        # json_schema. None: json_schema, unless this server is known to refuse it
        # (``models/capabilities.py``: learnt from its /props or its first refusal).
        self.json_mode = json_mode

    def __repr__(self) -> str:
        model = f"model={self.model!r}, " if self.model else ""
        return f"OpenAIProvider({model}base_url={self._shown_url!r})"

    # -- request -----------------------------------------------------------------------------

    def build_body(self, request: ModelRequest) -> tuple[dict[str, Any], float | None]:
        """The JSON body for ``request`` and the timeout for this call."""
        options = {**self.defaults, **{k: v for k, v in request.options.items() if v is not None}}
        timeout = options.get("timeout", self.timeout)
        body: dict[str, Any] = {"model": self.model} if self.model else {}
        body.update({k: v for k, v in options.items() if k not in _OURS})
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
            if self._json_mode() == "json_object":
                body["response_format"] = {"type": "json_object", "schema": request.response_schema}
            else:
                body["response_format"] = response_format(
                    request.response_schema, request.response_name
                )
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        return body, timeout

    def _json_mode(self) -> str:
        """The form structured output is asked in: ``json_mode=`` as given (the user's word
        wins), else json_schema unless this server refuses it."""
        if self.json_mode is not None:
            return self.json_mode
        return "json_object" if remembered(self.base_url).json_schema is False else "json_schema"

    def adapt_to_refusal(self, request: ModelRequest, error: ProviderError) -> bool:
        """Whether ``error`` is a refusal this provider now knows how to avoid, so that the
        same request may be sent once more (``iModel`` does): a server that takes
        ``json_object`` but not ``json_schema`` (llama_cpp.server) is remembered as such. A
        refusal of the form the user chose (``json_mode=``) is an error saying what to pass."""
        if request.response_schema is None or not refuses_json_schema(error):
            return False
        if self._json_mode() == "json_object":
            return False  # refused even so: the server's own error says why
        if self.json_mode is not None:
            raise ProviderError(
                f"the server at {self._shown_url} does not take response_format json_schema "
                "(it said: input should be 'text' or 'json_object'); pass "
                "iModel(..., json_mode='json_object'), or leave json_mode out and lion_nb "
                "chooses what the server takes",
                provider=self.name,
                status=error.status,
                body=error.body,
            ) from error
        remember(self.base_url, json_schema=False)
        log.info("%s takes json_object, not json_schema: asking again in that form", self)
        return True

    async def _status_error(self, response: httpx.Response) -> ProviderError:
        error = await super()._status_error(response)
        if refuses_json_schema(error):
            error.retryable = False  # the same body gets the same refusal: not retried as is
        return error

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
        url = f"{self.base_url}/chat/completions"

        async def read(response: httpx.Response) -> ModelResponse:
            acc = ChatAccumulator(on_delta, provider=self.name, logprobs="logprobs" in body)
            return await self._read(response, acc)

        return await self.with_retries(lambda: self.post_stream(url, body, headers, timeout, read))

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
        except (httpx.TimeoutException, httpx.TransportError) as exc:
            if not done:
                raise acc.fail(read_failure(exc, received=acc.received)) from exc
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
        """The reply, once the body ended. A reply is complete when a finish reason came (a
        ``[DONE]`` is not enough: ``llama_cpp.server`` ends a reply it interrupts with one);
        anything else is an error carrying what arrived, never a reply."""
        if not done:
            for event in decoder.finish():
                if not event.complete and event.data.strip() != "[DONE]":
                    raise acc.fail(stream_cut("in the middle of an event", received=acc.received))
                done = self._handle(event, acc) or done
        if acc.finish_reason is None:
            if not done:
                silent = not acc.received and acc.id is None and acc.model is None
                raise acc.fail(
                    stream_cut(
                        "it ended before [DONE]",
                        received=acc.received,
                        hint=SILENT_SERVER_HINT if silent else "",
                    )
                )
            raise acc.fail(
                stream_cut(
                    "[DONE] without a finish reason",
                    received=acc.received,
                    hint=SERIAL_SERVER_HINT,
                )
            )
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
            raise acc.fail(event_error(text, provider=self.name))
        if not isinstance(obj, dict) or not isinstance(obj.get("choices", []), list):
            raise acc.fail(MalformedResponse("not a chat-completions object", body=text[:2000]))
        acc.add(obj)
