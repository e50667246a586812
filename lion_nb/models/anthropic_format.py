"""The Anthropic Messages wire format: the request compiled from chat-completions messages, and
the reply assembled from the streamed events (``message_start``, ``content_block_start`` /
``_delta`` / ``_stop``, ``message_delta``, ``message_stop``, ``ping``).

Request: system messages go top level (``system``); user and tool results become ``user``
turns (consecutive ones merged: the API alternates roles); an assistant turn carries its signed
thinking blocks first (``thinking_blocks``, as recorded), then its text, then its ``tool_use``
blocks. Tools are ``{"name", "description", "input_schema"}``; structured output is a tool the
model is made to call (``tool_choice={"type": "tool"}``) whose input is the reply.

Reply: ``text_delta`` -> ``on_delta("text")``; ``thinking_delta`` -> ``on_delta("thinking")``
with the block's ``signature_delta`` kept; ``input_json_delta`` -> ``on_delta("tool_args")``
and, at the end, a ``ToolCall``; ``stop_reason`` -> ``finish_reason`` (``max_tokens`` ->
``"length"``); usage with the cache read / write tokens.
"""

from __future__ import annotations

import json
import re
from typing import Any

from lion_nb.errors import ConfigurationError, MalformedResponse, ProviderError
from lion_nb.models.base import DeltaSink, ModelRequest, ModelResponse, ToolCall
from lion_nb.usage import Usage

__all__ = ["MessageAccumulator", "compile_request", "finish_reason", "usage_of"]

FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "pause_turn": "pause",
    "refusal": "content_filter",
}
_DATA_URL = re.compile(r"^data:(?P<type>[\w/+.-]+);base64,(?P<data>.*)$", re.S)


def finish_reason(stop_reason: Any) -> str | None:
    return FINISH_REASONS.get(stop_reason, stop_reason) if isinstance(stop_reason, str) else None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def _user_blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks: list[dict[str, Any]] = []
    for part in content or ():
        if part.get("type") == "text" and part.get("text"):
            blocks.append({"type": "text", "text": part["text"]})
        elif part.get("type") == "image_url":
            url = (part.get("image_url") or {}).get("url", "")
            match = _DATA_URL.match(url)
            source = (
                {"type": "base64", "media_type": match["type"], "data": match["data"]}
                if match
                else {"type": "url", "url": url}
            )
            blocks.append({"type": "image", "source": source})
    return blocks


def _assistant_blocks(msg: dict[str, Any]) -> list[dict[str, Any]]:
    blocks = [dict(b) for b in msg.get("thinking_blocks") or () if isinstance(b, dict)]
    if text := _text(msg.get("content")):
        blocks.append({"type": "text", "text": text})
    for call in msg.get("tool_calls") or ():
        function = call.get("function") or {}
        args = function.get("arguments") or "{}"
        try:
            arguments = json.loads(args) if isinstance(args, str) else dict(args)
        except ValueError:
            arguments = {"_raw": args}
        blocks.append(
            {"type": "tool_use", "id": call["id"], "name": function["name"], "input": arguments}
        )
    return blocks


def compile_messages(messages: list[dict[str, Any]]) -> tuple[str | None, list[dict[str, Any]]]:
    """(system, messages) in the Messages API's form."""
    system: list[str] = []
    out: list[dict[str, Any]] = []
    for msg in messages:
        role = msg.get("role")
        if role == "system":
            system.append(_text(msg.get("content")))
            continue
        if role == "assistant":
            turn, blocks = "assistant", _assistant_blocks(msg)
        elif role == "tool":
            turn = "user"
            blocks = [
                {
                    "type": "tool_result",
                    "tool_use_id": msg.get("tool_call_id"),
                    "content": _text(msg.get("content")),
                }
            ]
        else:
            turn, blocks = "user", _user_blocks(msg.get("content"))
        if not blocks:
            continue  # the API refuses empty text blocks
        if out and out[-1]["role"] == turn:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": turn, "content": blocks})
    return ("\n\n".join(s for s in system if s) or None), out


def format_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """A tool as ``{"name", "description", "input_schema"}`` (from the chat-completions form
    or a plain schema)."""
    if isinstance(tool.get("function"), dict):
        tool = tool["function"]
    if not isinstance(tool.get("name"), str):
        raise ConfigurationError(f"a tool needs a 'name': {sorted(tool)}")
    out: dict[str, Any] = {"name": tool["name"]}
    if tool.get("description"):
        out["description"] = tool["description"]
    out["input_schema"] = (
        tool.get("input_schema") or tool.get("parameters") or {"type": "object", "properties": {}}
    )
    return out


def format_tool_choice(choice: Any) -> dict[str, Any] | None:
    if choice is None:
        return None
    if choice in ("auto", "none"):
        return {"type": choice}
    if choice in ("required", "any"):
        return {"type": "any"}
    if isinstance(choice, str):
        return {"type": "tool", "name": choice}
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name") or choice.get("name")
        if choice.get("type") in ("auto", "any", "none", "tool"):
            return choice
        if name:
            return {"type": "tool", "name": name}
    raise ConfigurationError(f"tool_choice {choice!r} is not understood")


def response_tool_name(request: ModelRequest) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", request.response_name or "")[:64] or "response"


def compile_request(request: ModelRequest, options: dict[str, Any]) -> dict[str, Any]:
    """The body's request part (model and sampling options are added by the provider)."""
    system, messages = compile_messages(request.messages)
    body: dict[str, Any] = {"messages": messages}
    if system:
        body["system"] = system
    tools = [format_tool(t) for t in request.tools or ()]
    choice = format_tool_choice(request.tool_choice)
    if request.response_schema is not None:
        name = response_tool_name(request)
        tools.append(
            {
                "name": name,
                "description": "Give the reply through this tool: its input is the reply.",
                "input_schema": request.response_schema,
            }
        )
        thinking = isinstance(options.get("thinking"), dict) and (
            options["thinking"].get("type") == "enabled"
        )
        if not request.tools and not thinking:  # the API refuses a forced tool with thinking
            choice = {"type": "tool", "name": name}
    if tools:
        body["tools"] = tools
    if choice is not None:
        body["tool_choice"] = choice
    return body


def usage_of(data: dict[str, Any], usage: Usage | None = None) -> Usage:
    """The Messages API's usage (``message_start``, updated by ``message_delta``) as ``Usage``:
    ``input_tokens`` counts every input token, cached ones included."""
    usage = usage or Usage()

    def number(key: str) -> int | None:
        value = data.get(key)
        return (
            int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
        )

    fresh, read, write = (
        number("input_tokens"),
        number("cache_read_input_tokens"),
        number("cache_creation_input_tokens"),
    )
    if read is not None:
        usage.cache_read_tokens = read
    if write is not None:
        usage.cache_write_tokens = write
    if fresh is not None:
        usage.input_tokens = (
            fresh + (usage.cache_read_tokens or 0) + (usage.cache_write_tokens or 0)
        )
    if (out := number("output_tokens")) is not None:
        usage.output_tokens = out
    return usage


class _Block:
    __slots__ = ("data", "kind", "parts", "signature")

    def __init__(self, start: dict[str, Any]) -> None:
        self.kind = str(start.get("type"))
        self.data = start
        self.parts: list[str] = []
        self.signature = start.get("signature") or ""


class MessageAccumulator:
    """Feed ``add(event)`` each decoded stream event; read ``response()`` at the end.
    ``fail(error)`` attaches what arrived so far to an error."""

    def __init__(
        self,
        on_delta: DeltaSink | None = None,
        *,
        provider: str = "anthropic",
        response_tool: str | None = None,
    ) -> None:
        self._on_delta = on_delta
        self.provider = provider
        self.response_tool = response_tool
        self._blocks: dict[int, _Block] = {}
        self.usage = Usage()
        self.model: str | None = None
        self.id: str | None = None
        self.stop_reason: str | None = None
        self.stopped = False  # message_stop seen

    def _all(self, kind: str) -> str:
        return "".join("".join(b.parts) for b in self._blocks.values() if b.kind == kind)

    @property
    def ignored_response_tool(self) -> bool:
        """A structured reply was asked for (a forced call of its tool) and the server answered
        without calling it: it ignores tools (its text is kept as the error's partial text)."""
        if self.response_tool is None:
            return False
        return self.response_tool not in (b.data.get("name") for b in self._blocks.values())

    @property
    def received(self) -> bool:
        """Whether any of the reply (a content block with something in it) has arrived."""
        return any(block.parts for block in self._blocks.values())

    def fail(self, error: ProviderError) -> ProviderError:
        return error.with_partial(self._all("text"), self._all("thinking"), self.provider)

    def _malformed(self, message: str) -> ProviderError:
        return self.fail(MalformedResponse(message, provider=self.provider))

    def add(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "message_start":
            message = event.get("message") or {}
            self.id, self.model = message.get("id"), message.get("model")
            usage_of(message.get("usage") or {}, self.usage)
        elif kind == "content_block_start":
            self._blocks[int(event.get("index", len(self._blocks)))] = _Block(
                dict(event.get("content_block") or {})
            )
        elif kind == "content_block_delta":
            self._delta(event)
        elif kind == "message_delta":
            delta = event.get("delta") or {}
            self.stop_reason = delta.get("stop_reason") or self.stop_reason
            usage_of(event.get("usage") or {}, self.usage)
        elif kind == "message_stop":
            self.stopped = True
        # ping, content_block_stop and event types added later carry nothing to keep

    def add_message(self, message: dict[str, Any]) -> None:
        """A whole (non-streamed) message, as a server that ignores ``stream`` answers: its
        blocks as if they had streamed in one delta each."""
        self.add({"type": "message_start", "message": {**message, "content": []}})
        for index, block in enumerate(message.get("content") or ()):
            if not isinstance(block, dict):
                raise self._malformed("a content block is not an object")
            kind = block.get("type")
            self.add({"type": "content_block_start", "index": index, "content_block": block})
            piece: dict[str, Any] | None = None
            if kind == "text":
                piece = {"type": "text_delta", "text": block.get("text", "")}
            elif kind == "thinking":
                piece = {"type": "thinking_delta", "thinking": block.get("thinking", "")}
            elif kind in ("tool_use", "server_tool_use"):
                piece = {"type": "input_json_delta", "partial_json": json.dumps(block.get("input"))}
            if piece is not None:
                self.add({"type": "content_block_delta", "index": index, "delta": piece})
        self.add(
            {
                "type": "message_delta",
                "delta": {"stop_reason": message.get("stop_reason")},
                "usage": message.get("usage") or {},
            }
        )
        self.add({"type": "message_stop"})

    def _delta(self, event: dict[str, Any]) -> None:
        block = self._blocks.get(int(event.get("index", -1)))
        if block is None:
            raise self._malformed("a content_block_delta for a block that never started")
        delta = event.get("delta") or {}
        kind = delta.get("type")
        if kind == "text_delta":
            piece = str(delta.get("text", ""))
            block.parts.append(piece)
            self._emit("text", piece)
        elif kind == "thinking_delta":
            piece = str(delta.get("thinking", ""))
            block.parts.append(piece)
            self._emit("thinking", piece)
        elif kind == "signature_delta":
            block.signature += str(delta.get("signature", ""))
        elif kind == "input_json_delta":
            piece = str(delta.get("partial_json", ""))
            block.parts.append(piece)
            if block.data.get("name") != self.response_tool:
                self._emit("tool_args", piece, block)
            else:  # the structured reply streams as text
                self._emit("text", piece)

    def _emit(self, kind: Any, piece: str, block: _Block | None = None) -> None:
        if self._on_delta is None or not piece:
            return
        if block is None:
            self._on_delta(kind, piece)
        else:
            self._on_delta(kind, piece, name=block.data.get("name"), call_id=block.data.get("id"))

    def response(self) -> ModelResponse:
        text: list[str] = []
        thinking: list[str] = []
        signed: list[dict[str, Any]] = []
        calls: list[ToolCall] = []
        for index in sorted(self._blocks):
            block = self._blocks[index]
            joined = "".join(block.parts)
            if block.kind == "text":
                text.append(joined)
            elif block.kind == "thinking":
                thinking.append(joined)
                signed.append(
                    {"type": "thinking", "thinking": joined, "signature": block.signature}
                )
            elif block.kind == "redacted_thinking":
                signed.append({"type": "redacted_thinking", "data": block.data.get("data", "")})
            elif block.kind in ("tool_use", "server_tool_use"):
                self._tool(block, joined, text, calls)
        reason = finish_reason(self.stop_reason)
        if reason == "tool_calls" and not calls:  # only the structured reply's tool was used
            reason = "stop"
        return ModelResponse(
            text="".join(text),
            tool_calls=calls,
            thinking="".join(thinking) or None,
            thinking_blocks=signed or None,
            usage=self.usage,
            model=self.model,
            finish_reason=reason,
            raw={"id": self.id, "model": self.model, "stop_reason": self.stop_reason},
        )

    def _tool(self, block: _Block, joined: str, text: list[str], calls: list[ToolCall]) -> None:
        name = str(block.data.get("name") or "")
        try:
            arguments = json.loads(joined) if joined.strip() else block.data.get("input") or {}
        except ValueError:
            raise self._malformed(
                f"the input of tool {name!r} is not JSON: {joined[:200]!r}"
            ) from None
        if not isinstance(arguments, dict):
            raise self._malformed(f"the input of tool {name!r} is not a JSON object")
        if name == self.response_tool:
            text.append(joined if joined.strip() else json.dumps(arguments, ensure_ascii=False))
        else:
            calls.append(
                ToolCall(id=str(block.data.get("id") or name), name=name, arguments=arguments)
            )
