"""OpenAI's Responses API: ``POST {base_url}/responses`` with ``stream: true``.

``iModel(provider="openai", api="responses", model="gpt-5-mini")``; chat completions
(``models/openai.py``) stays the default, and what compatible servers get. Spoken over httpx
with the house's SSE decoder (``models/http_stream.py``), not the ``openai`` SDK: the events are
plain typed JSON, the SDK would add its own client, retries and error classes in front of ours,
and ``tests/models/test_vendor_sdk_fidelity.py`` has the SDK parse the same streams our tests
use.

Translated both ways:

* messages: system messages become ``instructions``; user / assistant turns become input
  messages (images as ``input_image``); an assistant's tool calls become ``function_call``
  items and tool results ``function_call_output`` items;
* tools: ``{"type": "function", "name", "description", "parameters"}``; ``tool_choice`` as the
  API spells it; structured output: ``text.format`` ``json_schema`` (not strict);
* options: ``max_tokens`` (= ``max_output_tokens``), ``temperature``, ``top_p``,
  ``reasoning_effort`` / ``reasoning_summary`` (or a ``reasoning`` dict), ``verbosity``, and
  the API's own ``store``, ``parallel_tool_calls``, ``truncation``, ``user``, ``metadata``,
  ``service_tier``, ``previous_response_id``, ``include``, ``prompt_cache_key``,
  ``safety_identifier``, ``max_tool_calls``, ``top_logprobs``. Any other option is refused by
  name. Reasoning models (``o1``/``o3``/``o4``/``gpt-5``/``codex``) are asked for a reasoning
  summary (``reasoning.summary="auto"``);
* the reply: ``response.output_text.delta`` is text, ``response.reasoning_summary_text.delta``
  (and ``response.reasoning_text.delta``) thinking; ``response.function_call_arguments.delta``
  streams a tool call's arguments (``.done`` has them whole); ``response.completed`` ends it
  (``"stop"``, or ``"tool_calls"`` when it called tools), ``response.incomplete`` with
  ``max_output_tokens`` gives ``"length"``; ``response.failed`` and ``error`` events raise the
  classified error with what arrived so far. Usage from the final response: input and output
  tokens (reasoning tokens are part of the output);
* a loopback server (llama.cpp's ``llama-server``, whose ``/v1/responses`` is chat completions
  inside and ignores ``text.format``) also gets the schema as chat completions'
  ``response_format``, and ``logprobs: true`` with ``top_logprobs``;
* ``logprobs=K``: ``top_logprobs=K`` and ``include`` ``message.output_text.logprobs``; each
  text delta's ``logprobs`` become the reply's ``tokens`` (``"tokens"`` deltas as they come),
  as chat completions' do (``chat_format.logprob_tokens``). The API cannot continue a prefix.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from lion_nb.errors import ConfigurationError, ProviderError
from lion_nb.models.base import DeltaSink, ModelRequest, ModelResponse
from lion_nb.models.chat_format import format_tool, logprob_tokens, response_format
from lion_nb.models.http_errors import event_error
from lion_nb.models.http_stream import HTTPStreamProvider, StreamAccumulator
from lion_nb.models.logprobs import TokenDecoder, check_logprobs
from lion_nb.models.registry import COMMON_LOCAL_OPTIONS, PROVIDERS, RESPONSES_OPTIONS
from lion_nb.models.sse import SSEEvent
from lion_nb.tokens import encode_tokens_delta
from lion_nb.usage import Usage

if TYPE_CHECKING:
    from lion_nb.messages import TokenChoice

__all__ = ["DEFAULT_BASE_URL", "OPTIONS", "OpenAIResponsesProvider"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"

OPTIONS = RESPONSES_OPTIONS
"""The request options ``OpenAIResponsesProvider`` takes (its registry entry's list)."""
_RENAMED = frozenset(
    {"max_tokens", "reasoning_effort", "reasoning_summary", "verbosity", "logprobs"}
)
_LOGPROBS = "message.output_text.logprobs"  # what ``include`` names to get them
_PASSED = OPTIONS - COMMON_LOCAL_OPTIONS - _RENAMED

_REASONING_MODELS = ("o1", "o3", "o4", "gpt-5", "codex")


class OpenAIResponsesProvider(HTTPStreamProvider):
    """``OpenAIResponsesProvider(model, api_key, base_url=..., **options)``; see the module."""

    name = "openai"
    default_base_url = DEFAULT_BASE_URL
    options = OPTIONS
    not_found_hint = (
        "The server has no {url} (OpenAI's Responses API); one that speaks only chat "
        'completions needs iModel(provider="openai", ...) without api="responses"'
    )

    def __init__(self, model: str | None = None, api_key: str | None = None, **kw: Any) -> None:
        kw.setdefault("api_key_env", PROVIDERS["openai"].key_env)  # the same keys as chat
        kw.pop("api", None)  # the registry routed us here already
        super().__init__(model, api_key, **kw)

    def url(self, request: ModelRequest) -> str:
        return f"{self.base_url}/responses"

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"}

    def new_state(self, on_delta: DeltaSink | None) -> StreamAccumulator:
        return _ResponsesState(on_delta, self.name)

    def state_for(self, body: dict[str, Any], on_delta: DeltaSink | None) -> StreamAccumulator:
        return _ResponsesState(on_delta, self.name, logprobs=_LOGPROBS in body.get("include", ()))

    def build_body(self, request: ModelRequest) -> tuple[dict[str, Any], float | None]:
        options, timeout = self.merged_options(request)
        instructions, items = _input(request.messages)
        body: dict[str, Any] = {"model": self.model} if self.model else {}
        if instructions:
            body["instructions"] = instructions
        body["input"] = items
        body.update({k: v for k, v in options.items() if k in _PASSED})
        if "max_tokens" in options and "max_output_tokens" not in options:
            body["max_output_tokens"] = options["max_tokens"]
        reasoning = dict(body.get("reasoning") or {})
        if "reasoning_effort" in options:
            reasoning["effort"] = options["reasoning_effort"]
        if "reasoning_summary" in options:
            reasoning["summary"] = options["reasoning_summary"]
        if (self.model or "").startswith(_REASONING_MODELS):
            reasoning.setdefault("summary", "auto")
        if reasoning:
            body["reasoning"] = reasoning
        logprobs = check_logprobs(options.get("logprobs"))
        if logprobs is not None:  # the reply's tokens, with K alternatives each
            body["top_logprobs"] = logprobs
            body["include"] = [*(i for i in body.get("include") or () if i != _LOGPROBS), _LOGPROBS]
            if self._loopback:  # a local server's Responses API is chat completions inside
                body["logprobs"] = True
        text = dict(body.get("text") or {})
        if "verbosity" in options:
            text["verbosity"] = options["verbosity"]
        if request.response_schema is not None:
            text["format"] = {
                "type": "json_schema",
                "name": _schema_name(request.response_name),
                "schema": request.response_schema,
                "strict": False,
            }
            if self._loopback:  # llama-server's /v1/responses reads only the chat form
                body["response_format"] = response_format(
                    request.response_schema, request.response_name
                )
        if text:
            body["text"] = text
        if request.tools:
            body["tools"] = [_tool(tool) for tool in request.tools]
        if request.tool_choice is not None:
            body["tool_choice"] = _tool_choice(request.tool_choice)
        body["stream"] = True
        return body, timeout


def _schema_name(name: str | None) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", name or "")[:64] or "response"


def _tool(tool: dict[str, Any]) -> dict[str, Any]:
    function = format_tool(tool).get("function") or {}
    if not isinstance(function.get("name"), str):
        raise ConfigurationError(f"a tool needs a function name: {sorted(tool)}")
    out: dict[str, Any] = {"type": "function", "name": function["name"]}
    if function.get("description"):
        out["description"] = function["description"]
    out["parameters"] = function.get("parameters") or {"type": "object", "properties": {}}
    out["strict"] = bool(function.get("strict", False))
    return out


def _tool_choice(choice: Any) -> Any:
    if isinstance(choice, str):
        return choice if choice in ("auto", "none", "required") else _named(choice)
    if isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        return _named(choice["function"].get("name"))
    return choice


def _named(name: Any) -> dict[str, Any]:
    return {"type": "function", "name": name}


def _content(content: Any, role: str) -> Any:
    if isinstance(content, str) or content is None:
        return content or ""
    kind = "output_text" if role == "assistant" else "input_text"
    parts: list[dict[str, Any]] = []
    for part in content:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text":
            parts.append({"type": kind, "text": part.get("text", "")})
        elif part.get("type") == "image_url":
            image = part.get("image_url") or {}
            item = {"type": "input_image", "image_url": image.get("url", "")}
            item["detail"] = image.get("detail") or "auto"
            parts.append(item)
    return parts


def _input(messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """(instructions, input items) from chat-completions messages."""
    system: list[str] = []
    items: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        if role in ("system", "developer"):
            text = _content(content, "user")
            system.append(text if isinstance(text, str) else "".join(p["text"] for p in text))
        elif role in ("user", "assistant"):
            if content:
                items.append({"role": role, "content": _content(content, role)})
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                args = function.get("arguments")
                items.append(
                    {
                        "type": "function_call",
                        "call_id": call.get("id"),
                        "name": function.get("name"),
                        "arguments": args if isinstance(args, str) else json.dumps(args or {}),
                    }
                )
        elif role == "tool":
            output = content if isinstance(content, str) else json.dumps(content)
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.get("tool_call_id"),
                    "output": output,
                }
            )
    return "\n\n".join(s for s in system if s), items


class _ResponsesState(StreamAccumulator):
    """The Responses API's typed events -> the reply; ends at a terminal event. ``logprobs``:
    the request included the output text's logprobs, which become the reply's ``tokens``."""

    def __init__(self, on_delta: DeltaSink | None, provider: str, *, logprobs: bool = False):
        super().__init__(on_delta, provider)
        self._decoder: TokenDecoder | None = TokenDecoder() if logprobs else None
        self.tokens: list[TokenChoice] = []
        self.refused = False

    def _add_logprobs(self, content: Any) -> None:
        if self._decoder is None or not content:
            return
        if not isinstance(content, list):
            raise self.malformed("logprobs is not a list", json.dumps(content)[:2000])
        try:
            new = logprob_tokens(self._decoder, content)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise self.malformed(f"a logprobs entry is malformed ({exc!r})") from None
        self._emit_tokens(new)

    def _emit_tokens(self, new: list[TokenChoice]) -> None:
        if new:
            self.tokens.extend(new)
            if self._on_delta is not None:
                self._on_delta("tokens", encode_tokens_delta(new))

    def response(self, raw: Any = None) -> ModelResponse:
        response = super().response(raw)
        if self._decoder is not None and not self.refused:  # a refusal comes without them
            response.tokens = self._final_tokens()
        return response

    def _final_tokens(self) -> list[TokenChoice]:
        """The reply's tokens, spelling its text; asked for and not sent is an error."""
        assert self._decoder is not None
        self._emit_tokens(self._decoder.finish())
        spelled = "".join(t.text for t in self.tokens)
        if spelled == self.text:
            return self.tokens
        if not self.tokens:
            raise ConfigurationError(
                "log-probabilities were asked for (logprobs=K) but the API sent none; "
                "this model or server does not give them through the Responses API (a "
                'compatible server may through chat completions: leave out api="responses")'
            )
        raise self.malformed(
            f"the log-probability tokens spell {spelled[:80]!r}, not the reply {self.text[:80]!r}"
        )

    def feed(self, event: SSEEvent) -> None:
        if not event.data.strip() or event.data.strip() == "[DONE]":
            return
        obj = self.json_of(event)
        if not isinstance(obj, dict):
            raise self.malformed("a stream event is not a JSON object", event.data[:2000])
        kind = obj.get("type") or event.event
        handler = _HANDLERS.get(str(kind))
        if handler is not None:
            handler(self, obj, event.data)

    def whole(self, obj: Any, text: str) -> None:
        if not isinstance(obj, dict):
            raise self.malformed("not a response object", text[:2000])
        if isinstance(obj.get("error"), dict) and obj.get("object") != "response":
            raise self.fail(_error(obj["error"]))
        for index, item in enumerate(obj.get("output") or []):
            self._whole_item(index, item)
        self._finish(obj, text)

    def _whole_item(self, index: int, item: Any) -> None:
        if not isinstance(item, dict):
            return
        if item.get("type") == "reasoning":
            for part in item.get("summary") or []:
                self.add_thinking(str(part.get("text", "")))
        elif item.get("type") == "message":
            for part in item.get("content") or []:
                if part.get("type") == "output_text":
                    self.add_text(str(part.get("text", "")))
                    self._add_logprobs(part.get("logprobs"))
        elif item.get("type") == "function_call":
            self._open_call(index, item)
            self.set_tool_args(str(index), str(item.get("arguments") or ""))

    # -- events --------------------------------------------------------------------------------

    def on_created(self, obj: dict[str, Any], text: str) -> None:
        response = obj.get("response") or {}
        self.id = response.get("id") or self.id
        self.model = response.get("model") or self.model

    def on_item_added(self, obj: dict[str, Any], text: str) -> None:
        item = obj.get("item") or {}
        if item.get("type") == "function_call":
            self._open_call(obj.get("output_index", 0), item)

    def _open_call(self, index: Any, item: dict[str, Any]) -> None:
        name = item.get("name")
        self.open_tool(str(index), item.get("call_id") or item.get("id"), name)

    def on_text(self, obj: dict[str, Any], text: str) -> None:
        self.add_text(str(obj.get("delta") or ""))
        self._add_logprobs(obj.get("logprobs"))

    def on_refusal(self, obj: dict[str, Any], text: str) -> None:
        self.refused = True
        self.add_text(str(obj.get("delta") or ""))  # a refusal is the reply's text

    def on_thinking(self, obj: dict[str, Any], text: str) -> None:
        self.add_thinking(str(obj.get("delta") or ""))

    def on_summary_part_added(self, obj: dict[str, Any], text: str) -> None:
        if self.thinking_text:  # a summary's parts (and reasoning items) are paragraphs
            self.add_thinking("\n\n")

    def on_args(self, obj: dict[str, Any], text: str) -> None:
        self.add_tool_args(str(obj.get("output_index", 0)), str(obj.get("delta") or ""))

    def on_args_done(self, obj: dict[str, Any], text: str) -> None:
        if isinstance(obj.get("arguments"), str):
            self.set_tool_args(str(obj.get("output_index", 0)), obj["arguments"])

    def on_end(self, obj: dict[str, Any], text: str) -> None:
        response = obj.get("response")
        if not isinstance(response, dict):
            raise self.malformed(f"{obj.get('type')} carries no response", text[:2000])
        self._finish(response, text)

    def _finish(self, response: dict[str, Any], text: str) -> None:
        self.id = response.get("id") or self.id
        self.model = response.get("model") or self.model
        if isinstance(response.get("usage"), dict):
            self.usage = _usage(response["usage"])
        status = response.get("status")
        if status == "failed" or isinstance(response.get("error"), dict):
            raise self.fail(_error(response.get("error") or {}))
        if status == "incomplete":
            reason = (response.get("incomplete_details") or {}).get("reason")
            self.finish_reason = "length" if reason == "max_output_tokens" else str(reason)
            if reason == "content_filter":
                self.finish_reason = "content_filter"
        else:
            self.finish_reason = "tool_calls" if self.has_tool_calls else "stop"
        self.done = True

    def on_error(self, obj: dict[str, Any], text: str) -> None:
        error = obj.get("error")
        raise self.fail(_error(error if isinstance(error, dict) else obj))


_HANDLERS = {
    "response.created": _ResponsesState.on_created,
    "response.in_progress": _ResponsesState.on_created,
    "response.output_item.added": _ResponsesState.on_item_added,
    "response.output_text.delta": _ResponsesState.on_text,
    "response.refusal.delta": _ResponsesState.on_refusal,
    "response.reasoning_summary_part.added": _ResponsesState.on_summary_part_added,
    "response.reasoning_summary_text.delta": _ResponsesState.on_thinking,
    "response.reasoning_text.delta": _ResponsesState.on_thinking,
    "response.function_call_arguments.delta": _ResponsesState.on_args,
    "response.function_call_arguments.done": _ResponsesState.on_args_done,
    "response.completed": _ResponsesState.on_end,
    "response.incomplete": _ResponsesState.on_end,
    "response.failed": _ResponsesState.on_end,
    "error": _ResponsesState.on_error,
}


def _usage(data: dict[str, Any]) -> Usage:
    def count(value: Any) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    cached = (data.get("input_tokens_details") or {}).get("cached_tokens")
    reasoning = (data.get("output_tokens_details") or {}).get("reasoning_tokens")
    return Usage(
        input_tokens=count(data.get("input_tokens")),
        output_tokens=count(data.get("output_tokens")),
        cache_read_tokens=count(cached),
        reasoning_tokens=count(reasoning),
    )


def _error(error: dict[str, Any]) -> ProviderError:
    """An ``error`` event, or the ``error`` of a failed response, classified by its code
    (``http_errors.event_error``; not retried: part of the reply may have been shown)."""
    return event_error(json.dumps(error), provider="openai")
