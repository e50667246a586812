"""The chat-completions wire format: tools and ``response_format`` for the request, and the
reply assembled from its streamed chunks (or from one whole body).

Shared by every provider whose wire format is OpenAI's ``chat.completion(.chunk)`` objects (the
HTTP provider; llama.cpp's Python API yields the same dicts). Text, reasoning and tool-call
argument deltas are reported to the ``DeltaSink`` as they arrive; tool calls accumulate by their
``index``; the ``ModelResponse`` is built once, at the end.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from lion_nb.errors import ConfigurationError, MalformedResponse, ProviderError
from lion_nb.models.base import DeltaKind, DeltaSink, ModelResponse, ToolCall
from lion_nb.models.logprobs import TokenDecoder
from lion_nb.tokens import encode_tokens_delta
from lion_nb.usage import Usage

if TYPE_CHECKING:
    from lion_nb.messages import TokenChoice

__all__ = [
    "ChatAccumulator",
    "format_tool",
    "format_tool_choice",
    "logprob_tokens",
    "response_format",
    "usage_from",
]


def format_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """A tool in chat-completions form. Accepts ``{"type": "function", "function": {...}}`` as
    is, and ``{"name", "description", "parameters" | "input_schema"}`` schemas."""
    if "type" in tool and "name" not in tool:
        return tool
    if not isinstance(tool.get("name"), str):
        raise ConfigurationError(f"a tool needs a 'name' or a 'function' entry: {sorted(tool)}")
    function: dict[str, Any] = {"name": tool["name"]}
    if tool.get("description"):
        function["description"] = tool["description"]
    function["parameters"] = (
        tool.get("parameters") or tool.get("input_schema") or {"type": "object", "properties": {}}
    )
    if "strict" in tool:
        function["strict"] = tool["strict"]
    return {"type": "function", "function": function}


def format_tool_choice(choice: Any) -> Any:
    if isinstance(choice, str) and choice not in ("auto", "none", "required"):
        return {"type": "function", "function": {"name": choice}}
    return choice


def response_format(schema: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    """``response_format`` asking for JSON matching ``schema`` (not strict: strict mode rejects
    common schemas, e.g. optional fields; the reply is validated by ``parse`` anyway)."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", name or "")[:64] or "response"
    return {"type": "json_schema", "json_schema": {"name": safe, "schema": schema, "strict": False}}


class _ToolSlot:
    __slots__ = ("args", "id", "name")

    def __init__(self) -> None:
        self.id: str | None = None
        self.name: str | None = None
        self.args: list[str] = []


class ChatAccumulator:
    """Feed ``add(obj)`` each ``chat.completion.chunk`` (or one ``chat.completion``); read
    ``response()`` at the end. ``fail(error)`` attaches what arrived so far to an error."""

    def __init__(
        self,
        on_delta: DeltaSink | None = None,
        *,
        provider: str | None = None,
        logprobs: bool = False,
    ) -> None:
        self._on_delta = on_delta
        self.provider = provider
        # logprobs: collect ``choices[0].logprobs.content`` into ``tokens`` (and "tokens" deltas)
        self._token_decoder: TokenDecoder | None = TokenDecoder() if logprobs else None
        self.tokens: list[TokenChoice] | None = [] if logprobs else None
        self._text: list[str] = []
        self._thinking: list[str] = []
        self._tools: dict[int, _ToolSlot] = {}
        self.usage = Usage()
        self.model: str | None = None
        self.finish_reason: str | None = None
        self.id: str | None = None

    @property
    def text(self) -> str:
        return "".join(self._text)

    @property
    def received(self) -> bool:
        """Whether any of the reply (text, thinking, a tool call) has arrived."""
        return bool(self._text or self._thinking or self._tools)

    def fail(self, error: ProviderError) -> ProviderError:
        """``error`` with ``partial_text`` (and ``partial_thinking``) set: nothing is lost."""
        return error.with_partial(self.text, "".join(self._thinking), self.provider)

    def _malformed(self, message: str, body: str | None = None) -> ProviderError:
        return self.fail(MalformedResponse(message, provider=self.provider, body=body))

    def _emit(self, kind: DeltaKind, delta: str, slot: _ToolSlot | None = None) -> None:
        if self._on_delta is not None:
            if slot is None:
                self._on_delta(kind, delta)
            else:
                self._on_delta(kind, delta, name=slot.name, call_id=slot.id)

    def add(self, obj: dict[str, Any]) -> None:
        if isinstance(obj.get("model"), str):
            self.model = obj["model"]
        if isinstance(obj.get("id"), str):
            self.id = obj["id"]
        if isinstance(obj.get("usage"), dict):
            self.usage = usage_from(obj["usage"])
        for choice in obj.get("choices") or ():
            if not isinstance(choice, dict):
                raise self._malformed("a choice is not an object", json.dumps(choice)[:2000])
            if choice.get("index", 0) != 0:
                continue  # n > 1 is not requested; a stray choice is ignored
            delta = choice.get("delta")
            if delta is None:
                delta = choice.get("message") or {}
            if not isinstance(delta, dict):
                raise self._malformed("a delta is not an object", json.dumps(delta)[:2000])
            self._add_delta(delta)
            if self._token_decoder is not None and isinstance(choice.get("logprobs"), dict):
                self._add_logprobs(choice["logprobs"].get("content"))
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])

    def _add_delta(self, delta: dict[str, Any]) -> None:
        for key in ("reasoning_content", "reasoning"):  # DeepSeek / vLLM, OpenRouter / Ollama
            piece = _as_text(delta.get(key))
            if piece:
                self._thinking.append(piece)
                self._emit("thinking", piece)
                break
        piece = _as_text(delta.get("content"))
        if piece:
            self._text.append(piece)
            self._emit("text", piece)
        calls = delta.get("tool_calls") or []
        if not isinstance(calls, list):
            raise self._malformed("tool_calls is not a list", json.dumps(calls)[:2000])
        for position, call in enumerate(calls):
            if not isinstance(call, dict):
                raise self._malformed("a tool call is not an object", json.dumps(call)[:2000])
            self._add_tool_delta(position, call)

    def _add_logprobs(self, content: Any) -> None:
        """``logprobs.content`` of a chunk: ``[{"token", "logprob", "bytes"?, "top_logprobs":
        [{"token", "logprob", "bytes"?}, ...]}, ...]``."""
        if not content:
            return
        if not isinstance(content, list):
            raise self._malformed("logprobs.content is not a list", json.dumps(content)[:2000])
        assert self._token_decoder is not None and self.tokens is not None
        try:
            new = logprob_tokens(self._token_decoder, content)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise self._malformed(f"a logprobs entry is malformed ({exc!r})") from None
        self._emit_tokens(new)

    def _emit_tokens(self, new: list[TokenChoice]) -> None:
        if new and self.tokens is not None:
            self.tokens.extend(new)
            if self._on_delta is not None:
                self._on_delta("tokens", encode_tokens_delta(new))

    def _add_tool_delta(self, position: int, call: dict[str, Any]) -> None:
        index = call.get("index")
        slot = self._tools.setdefault(index if isinstance(index, int) else position, _ToolSlot())
        if isinstance(call.get("id"), str) and call["id"]:
            slot.id = call["id"]
        function = call.get("function") or {}
        if not isinstance(function, dict):
            raise self._malformed("a tool call's function is not an object")
        if isinstance(function.get("name"), str) and function["name"] and slot.name is None:
            slot.name = function["name"]  # sent once; some servers repeat it on every delta
        args = function.get("arguments")
        if isinstance(args, dict | list):  # a few servers send parsed arguments
            args = json.dumps(args)
        if isinstance(args, str) and args:
            slot.args.append(args)
            self._emit("tool_args", args, slot)

    def response(self, raw: Any = None) -> ModelResponse:
        calls: list[ToolCall] = []
        for index in sorted(self._tools):
            slot = self._tools[index]
            text = "".join(slot.args)
            if not slot.name:
                raise self._malformed(f"tool call #{index} has no function name", text[:2000])
            try:
                arguments = json.loads(text) if text.strip() else {}
            except ValueError:
                raise self._malformed(
                    f"arguments of tool call {slot.name!r} are not JSON: {text[:200]!r}", text
                ) from None
            if not isinstance(arguments, dict):
                raise self._malformed(
                    f"arguments of tool call {slot.name!r} are not a JSON object", text
                )
            calls.append(
                ToolCall(id=slot.id or f"call_{index}", name=slot.name, arguments=arguments)
            )
        return ModelResponse(
            text=self.text,
            tool_calls=calls,
            thinking="".join(self._thinking) or None,
            usage=self.usage,
            model=self.model,
            finish_reason=self.finish_reason,
            raw=raw if raw is not None else {"id": self.id, "model": self.model},
            tokens=self._final_tokens(),
        )

    def _final_tokens(self) -> list[TokenChoice] | None:
        """The reply's tokens, whose texts join to its text; a server that was asked for them
        and sent none (or tokens that do not spell its reply) is an error, never silence."""
        if self._token_decoder is None or self.tokens is None:
            return None
        self._emit_tokens(self._token_decoder.finish())
        spelled = "".join(t.text for t in self.tokens)
        if spelled == self.text:
            return self.tokens
        if not self.tokens:
            raise ConfigurationError(
                "log-probabilities were asked for (logprobs=K) but the server sent none; "
                "this server or model does not give them"
            )
        raise self._malformed(
            f"the server's log-probability tokens spell {spelled[:80]!r}, not its reply "
            f"{self.text[:80]!r}"
        )


def logprob_tokens(decoder: TokenDecoder, content: list[Any]) -> list[TokenChoice]:
    """The tokens ``content`` completes: OpenAI's logprobs entries (chat completions'
    ``logprobs.content``, the Responses API's ``logprobs`` of a text delta), ``[{"token",
    "logprob", "bytes"?, "top_logprobs": [{"token", "logprob", "bytes"?}, ...]}, ...]``.
    A malformed entry raises KeyError, TypeError, ValueError or AttributeError."""
    new: list[TokenChoice] = []
    for entry in content:
        top = [(_token_bytes(a), float(a["logprob"])) for a in entry.get("top_logprobs") or ()]
        new += decoder.feed(_token_bytes(entry), float(entry["logprob"]), top)
    return new


def _token_bytes(entry: dict[str, Any]) -> bytes:
    """A logprobs entry's token as bytes: its ``bytes`` (exact, a character split over tokens
    included) when the server sends them, else its ``token`` text as UTF-8."""
    raw = entry.get("bytes")
    if isinstance(raw, list):
        return bytes(raw)
    return str(entry["token"]).encode("utf-8")


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content parts: [{"type": "text", "text": ...}]
        return "".join(
            p.get("text", "")
            for p in value
            if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
    return ""


def usage_from(data: dict[str, Any]) -> Usage:
    """chat-completions usage -> ``Usage`` (OpenRouter's ``cost`` becomes ``total_cost_usd``;
    cached prompt tokens and reasoning tokens from the ``..._details``)."""

    def number(*keys: str) -> Any:
        for key in keys:
            value = data.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                return value
        return None

    inp, out = number("prompt_tokens", "input_tokens"), number("completion_tokens", "output_tokens")
    cost = number("cost", "total_cost_usd")
    usage = Usage(
        int(inp) if inp is not None else None,
        int(out) if out is not None else None,
        float(cost) if cost is not None else None,
    )
    # prompt_tokens counts the cached ones; completion_tokens the reasoning ones (OpenAI)
    cached = _detail(data, "prompt_tokens_details", "cached_tokens")
    usage.cache_read_tokens = cached or None
    usage.reasoning_tokens = _detail(data, "completion_tokens_details", "reasoning_tokens")
    return usage


def _detail(data: dict[str, Any], group: str, key: str) -> int | None:
    details = data.get(group)
    value = details.get(key) if isinstance(details, dict) else None
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None
