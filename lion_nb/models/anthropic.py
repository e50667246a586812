"""Anthropic's Messages API over HTTP, streaming:
``iModel(provider="anthropic", model="claude-sonnet-4-5", api_key=... | $ANTHROPIC_API_KEY,
base_url=<server root>)``.

Lean on purpose: httpx (a core dependency) and the house's sans-I/O SSE decoder
(``models/sse.py``), with the wire format in ``models/anthropic_format.py``. The ``anthropic``
SDK (``lion_nb[anthropic]``) is not needed to call the API: it would add ~25 MB and its own
retry, timeout and error layers on top of the ones every lion_nb provider shares
(``models/http_api.py``, ``models/http_errors.py``), and cassettes, stop and the views work at
the level of the decoded events anyway. The test suite uses the SDK to check fidelity: it
parses the loopback server's stream for real.

``base_url`` is the server root (``https://api.anthropic.com``; a trailing ``/v1`` is
forgiven). The key comes from ``api_key=`` or ``$ANTHROPIC_API_KEY``, sent as ``x-api-key`` —
also to a loopback ``base_url`` (a proxy of the API or a test server), unlike the
OpenAI-compatible provider.

Every call streams (``stream: true``); a server that ignores it and answers with the whole
message as one JSON body works too. ``max_tokens`` defaults to 4096 (the API requires it).
Thinking (``thinking={"type": "enabled", "budget_tokens": N}`` or ``thinking=N``) streams as
thinking deltas and comes back in ``ModelResponse.thinking``, its signed blocks in
``thinking_blocks`` (sent back in a tool loop). Errors: ``models/http_errors.py``; an
``error`` event mid-stream raises the classified error with what arrived in
``exc.partial_text``; nothing is recorded.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx

from lion_nb.errors import ConfigurationError, MalformedResponse, ProviderError
from lion_nb.models.anthropic_format import (
    MessageAccumulator,
    compile_request,
    response_tool_name,
)
from lion_nb.models.base import DeltaSink, ModelRequest, ModelResponse
from lion_nb.models.http_api import HTTPProvider, read_failure, read_sse, stream_cut
from lion_nb.models.http_errors import event_error
from lion_nb.models.registry import COMMON_LOCAL_OPTIONS, PROVIDERS
from lion_nb.models.sse import SSEEvent

__all__ = ["API_VERSION", "DEFAULT_BASE_URL", "DEFAULT_MAX_TOKENS", "AnthropicProvider"]

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
_NOT_BODY = frozenset({"anthropic_version", "anthropic_beta", "extra_body"})  # headers, merged
_IGNORED_TOOL = (
    "the server answered without calling the tool {tool!r} it was made to call (in "
    "Anthropic's format a structured reply is that call's input): it ignores tools "
    "(llama-server does for a model whose chat template declares none). Ask it through chat "
    'completions instead: iModel(provider="openai", base_url=".../v1"), response_format=...'
)


class AnthropicProvider(HTTPProvider):
    """``AnthropicProvider(model, api_key, base_url=..., **request_defaults)``; see
    ``HTTPProvider`` for the client, retry and key options."""

    name = "anthropic"
    default_base_url = DEFAULT_BASE_URL
    env_key_to_loopback = True  # a loopback Messages server is a proxy of the API or a test
    not_found_hint = (
        "The server has no {url} (Anthropic's Messages API): base_url should be its root, "
        'without /v1; one that speaks only OpenAI\'s format needs provider="openai"'
    )

    def __init__(
        self,
        model: str | None = None,
        api_key: str | None = None,
        *,
        api_key_env: str | tuple[str, ...] | None = PROVIDERS["anthropic"].key_env,
        **options: Any,
    ) -> None:
        super().__init__(model, api_key, api_key_env=api_key_env, **options)
        if self.base_url.endswith("/v1"):  # the server root is wanted; "/v1" is forgiven
            self.base_url = self.base_url[:-3]

    def __repr__(self) -> str:
        model = f"model={self.model!r}, " if self.model else ""
        return f"AnthropicProvider({model}base_url={self._shown_url!r})"

    def build_body(self, request: ModelRequest) -> tuple[dict[str, Any], dict[str, str], Any]:
        """The JSON body, the headers and the timeout for ``request``."""
        options = {**self.defaults, **{k: v for k, v in request.options.items() if v is not None}}
        if not self.model:
            raise ConfigurationError("the Anthropic API needs a model: iModel(model=...)")
        thinking = options.get("thinking")
        if isinstance(thinking, int) and not isinstance(thinking, bool):
            options["thinking"] = {"type": "enabled", "budget_tokens": thinking}
        body: dict[str, Any] = {"model": self.model, "max_tokens": DEFAULT_MAX_TOKENS}
        for key, value in options.items():
            if key in COMMON_LOCAL_OPTIONS or key in _NOT_BODY:
                continue
            if key == "stop":
                body["stop_sequences"] = [value] if isinstance(value, str) else list(value)
            else:
                body[key] = value
        body.update(compile_request(request, options))
        body.update(options.get("extra_body") or {})
        body["stream"] = True
        headers = {
            **self._headers,
            "anthropic-version": str(options.get("anthropic_version") or API_VERSION),
        }
        if beta := options.get("anthropic_beta"):
            headers["anthropic-beta"] = beta if isinstance(beta, str) else ",".join(beta)
        if api_key := self._api_key():
            headers["x-api-key"] = api_key
        return body, headers, options.get("timeout", self.timeout)

    async def complete(
        self, request: ModelRequest, on_delta: DeltaSink | None = None
    ) -> ModelResponse:
        body, headers, timeout = self.build_body(request)
        url = f"{self.base_url}/v1/messages"
        tool = response_tool_name(request) if request.response_schema is not None else None
        forced = tool is not None and body.get("tool_choice") == {"type": "tool", "name": tool}

        async def read(response: httpx.Response) -> ModelResponse:
            acc = MessageAccumulator(on_delta, provider=self.name, response_tool=tool)
            reply = await self._read(response, acc)
            if forced and acc.ignored_response_tool:
                raise acc.fail(ProviderError(_IGNORED_TOOL.format(tool=tool)))
            return reply

        return await self.with_retries(lambda: self.post_stream(url, body, headers, timeout, read))

    async def _read(self, response: httpx.Response, acc: MessageAccumulator) -> ModelResponse:
        if "application/json" in response.headers.get("content-type", ""):
            return await self._read_json(response, acc)
        await read_sse(
            response,
            done=lambda: acc.stopped,
            on_event=lambda event: self._handle(event, acc),
            fail=acc.fail,
            received=lambda: acc.received,
        )
        if not acc.stopped:
            raise acc.fail(stream_cut("it ended before message_stop", received=acc.received))
        if acc.stop_reason is None:  # the API always says why a message stopped
            raise acc.fail(stream_cut("message_stop without a stop_reason", received=acc.received))
        return acc.response()

    async def _read_json(self, response: httpx.Response, acc: MessageAccumulator) -> ModelResponse:
        """A server that ignored ``stream`` and sent the whole message as one body."""
        try:
            raw = await response.aread()
        except httpx.HTTPError as exc:
            raise acc.fail(read_failure(exc, received=False)) from exc
        text = raw.decode("utf-8", "replace")
        try:
            message = json.loads(text)
        except ValueError:
            raise acc.fail(MalformedResponse("the reply is not JSON", body=text[:2000])) from None
        if not isinstance(message, dict) or message.get("type") == "error":
            raise acc.fail(event_error(text, provider=self.name))
        acc.add_message(message)
        return acc.response()

    def _handle(self, event: SSEEvent, acc: MessageAccumulator) -> None:
        if acc.stopped or not event.data.strip():
            return
        try:
            obj = json.loads(event.data)
        except ValueError:
            raise acc.fail(
                MalformedResponse("a stream event is not JSON", body=event.data[:2000])
            ) from None
        if not isinstance(obj, dict):
            raise acc.fail(MalformedResponse("a stream event is not an object"))
        if event.event == "error" or obj.get("type") == "error":
            raise acc.fail(event_error(event.data, provider=self.name))
        acc.add(obj)
