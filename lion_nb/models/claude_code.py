"""Claude Code (``claude -p ... --output-format stream-json``) as a CLI provider.

Event shapes are those of Claude Code 2.1.197 recorded in ``tests/fixtures/cli/claude`` (see
its README). ``ClaudeEventMapper`` is pure and maps one decoded line to ``Chunk``s:

- ``system/init`` -> system chunk (``session_id``; model, tools, cwd, permission mode in
  metadata); ``system/api_retry`` -> system chunk with the retry in metadata; other system
  lines (status, thinking_tokens, task_*) carry nothing a transcript needs and are skipped.
- ``stream_event`` (with ``--include-partial-messages``): ``text_delta`` / ``thinking_delta``
  become text / thinking chunks as they arrive. The complete ``assistant`` line that Claude
  Code prints after each streamed block is then *not* emitted again; only a suffix the deltas
  missed would be. Without partials the ``assistant`` blocks' text is emitted whole.
- ``assistant`` blocks: ``tool_use`` -> tool_use chunk. A synthetic assistant line
  (``model: "<synthetic>"`` with a top-level ``error``) is Claude Code's report of an API
  failure, not model text: it is held and becomes the error chunk at ``result``.
- ``user`` lines: each ``tool_result`` block -> tool_result chunk (``is_error`` flag).
- ``result`` -> result chunk (usage, cost, turns, duration, session id, permission denials,
  ``stop_reason`` and the chat-completions ``finish_reason`` it means: ``max_tokens`` ->
  ``"length"``, so the final reply says it was cut off by the token limit); when ``is_error`` is true an error chunk follows, classified by ``api_error_status``, the
  synthetic line's error kind, or the message (429 rate limit, 401 auth, 5xx/overloaded server).

Subagent lines (``parent_tool_use_id`` set) keep their tool calls and results, marked with
``metadata["parent_tool_use_id"]``; a subagent's own prose is not the main reply and is skipped
(its report reaches the main agent as the Agent tool's result).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from lion_nb.models.base import Chunk, CLIRequest
from lion_nb.models.cli_stream import CLIProviderBase, EventMapper, classify_error, error_chunk

logger = logging.getLogger(__name__)

PROVIDER = "claude_code"
# Anthropic stop reasons -> chat-completions finish reasons (the final reply's metadata).
FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}


@dataclass(slots=True)
class _Streamed:
    """One content block received as deltas, waiting for its complete ``assistant`` line."""

    message_id: str | None
    index: int
    kind: str  # "text" | "thinking" | other block types
    text: str = ""
    matched: bool = False


class ClaudeEventMapper:
    """Claude Code stream-json lines -> ``Chunk``s. One instance per stream."""

    def __init__(self, provider: str = PROVIDER) -> None:
        self.provider = provider
        self._message_id: str | None = None
        self._blocks: list[_Streamed] = []
        self._synthetic: dict[str, Any] | None = None  # held API error report
        self._errored = False

    def map(self, event: dict[str, Any]) -> list[Chunk]:
        kind = event.get("type")
        if kind == "system":
            return self._system(event)
        if kind == "stream_event":
            return self._stream_event(event)
        if kind == "assistant":
            return self._assistant(event)
        if kind == "user":
            return self._user(event)
        if kind == "result":
            return self._result(event)
        logger.debug("claude_code: ignored event type %r", kind)
        return []

    def finish(self) -> list[Chunk]:
        if self._synthetic is not None and not self._errored:
            # The CLI reported an API error but ended before its result line.
            self._errored = True
            return [self._error_from(None, self._synthetic)]
        return []

    # -- lines -----------------------------------------------------------------------------

    def _system(self, event: dict[str, Any]) -> list[Chunk]:
        subtype = event.get("subtype")
        if subtype == "init":
            meta: dict[str, Any] = {
                k: event[k]
                for k in ("model", "cwd", "tools", "permissionMode", "claude_code_version")
                if k in event
            }
            return [
                Chunk(type="system", session_id=event.get("session_id"), metadata=meta, raw=event)
            ]
        if subtype == "api_retry":
            retry: dict[str, Any] = {
                k: event.get(k)
                for k in ("attempt", "max_retries", "retry_delay_ms", "error_status", "error")
            }
            logger.info(
                "claude_code: API retry %s/%s after status %s",
                retry["attempt"],
                retry["max_retries"],
                retry["error_status"],
            )
            return [Chunk(type="system", metadata={"subtype": "api_retry", **retry}, raw=event)]
        return []

    def _stream_event(self, event: dict[str, Any]) -> list[Chunk]:
        if event.get("parent_tool_use_id"):
            return []
        sse = event.get("event") or {}
        sse_type = sse.get("type")
        if sse_type == "message_start":
            self._message_id = (sse.get("message") or {}).get("id")
        elif sse_type == "content_block_start":
            block = sse.get("content_block") or {}
            self._blocks.append(
                _Streamed(self._message_id, sse.get("index", -1), str(block.get("type")))
            )
        elif sse_type == "content_block_delta":
            delta = sse.get("delta") or {}
            streamed = self._open_block(sse.get("index", -1))
            if delta.get("type") == "text_delta" and delta.get("text"):
                if streamed is not None:
                    streamed.text += delta["text"]
                return [Chunk(type="text", text=delta["text"], raw=event)]
            if delta.get("type") == "thinking_delta" and delta.get("thinking"):
                if streamed is not None:
                    streamed.text += delta["thinking"]
                return [Chunk(type="thinking", text=delta["thinking"], raw=event)]
        return []

    def _open_block(self, index: int) -> _Streamed | None:
        for streamed in reversed(self._blocks):
            if streamed.message_id == self._message_id and streamed.index == index:
                return streamed
        return None

    def _assistant(self, event: dict[str, Any]) -> list[Chunk]:
        message = event.get("message") or {}
        if event.get("error") or message.get("model") == "<synthetic>":
            self._synthetic = event
            return []
        parent = event.get("parent_tool_use_id")
        chunks: list[Chunk] = []
        for block in message.get("content") or []:
            btype = block.get("type")
            if btype == "tool_use":
                meta = {"parent_tool_use_id": parent} if parent else {}
                chunks.append(
                    Chunk(
                        type="tool_use",
                        tool_id=block.get("id"),
                        name=block.get("name"),
                        arguments=block.get("input") or {},
                        metadata=meta,
                        raw=event,
                    )
                )
            elif btype in ("text", "thinking") and not parent:
                full = block.get(btype) or ""
                rest = self._unstreamed(message.get("id"), btype, full)
                if rest:
                    chunks.append(Chunk(type=btype, text=rest, raw=event))
        return chunks

    def _unstreamed(self, message_id: str | None, kind: str, full: str) -> str:
        """The part of a complete block not already emitted from deltas."""
        for streamed in self._blocks:
            if not streamed.matched and streamed.message_id == message_id and streamed.kind == kind:
                streamed.matched = True
                if full.startswith(streamed.text):
                    return full[len(streamed.text) :]
                logger.warning(
                    "claude_code: %s block %s differs from its deltas; kept deltas",
                    kind,
                    message_id,
                )
                return ""
        return full

    def _user(self, event: dict[str, Any]) -> list[Chunk]:
        content = (event.get("message") or {}).get("content")
        if not isinstance(content, list):
            return []
        parent = event.get("parent_tool_use_id")
        chunks = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                meta = {"parent_tool_use_id": parent} if parent else {}
                chunks.append(
                    Chunk(
                        type="tool_result",
                        tool_id=block.get("tool_use_id"),
                        output=_tool_output(block.get("content")),
                        is_error=bool(block.get("is_error")),
                        metadata=meta,
                        raw=event,
                    )
                )
        return chunks

    def _result(self, event: dict[str, Any]) -> list[Chunk]:
        usage = event.get("usage") or {}
        meta: dict[str, Any] = {
            "usage": {
                k: usage[k]
                for k in (
                    "input_tokens",
                    "output_tokens",
                    "cache_read_input_tokens",
                    "cache_creation_input_tokens",
                )
                if k in usage
            },
            "total_cost_usd": event.get("total_cost_usd"),
            "num_turns": event.get("num_turns"),
            "duration_ms": event.get("duration_ms"),
            "session_id": event.get("session_id"),
            "permission_denials": event.get("permission_denials") or [],
            "is_error": bool(event.get("is_error")),
            "stop_reason": event.get("stop_reason"),
            "subtype": event.get("subtype"),
        }
        finish = FINISH_REASONS.get(str(event.get("stop_reason")))
        if finish is not None:
            meta["finish_reason"] = finish
        chunks = [Chunk(type="result", metadata=meta, raw=event)]
        if event.get("is_error") or str(event.get("subtype", "")).startswith("error"):
            self._errored = True
            chunks.append(self._error_from(event, self._synthetic))
        elif self._synthetic is not None:
            logger.warning("claude_code: API error reported, but the run ended successfully")
        return chunks

    def _error_from(self, result: dict[str, Any] | None, synthetic: dict[str, Any] | None) -> Chunk:
        text = ""
        if result is not None:
            text = result.get("result") or "; ".join(map(str, result.get("errors") or []))
            if not text and result.get("subtype", "success") != "success":
                text = f"Claude Code ended with {result['subtype']}"
        if not text and synthetic is not None:
            blocks = (synthetic.get("message") or {}).get("content") or []
            text = "".join(b.get("text", "") for b in blocks if isinstance(b, dict))
        status = (result or {}).get("api_error_status")
        kind = (synthetic or {}).get("error")
        error = classify_error(
            text,
            provider=self.provider,
            status=status if isinstance(status, int) else None,
            kind=kind if isinstance(kind, str) else None,
        )
        return error_chunk(error, result if result is not None else synthetic)


def _tool_output(content: Any) -> Any:
    """A tool result's content as text when it is text blocks (the common case)."""
    if isinstance(content, list) and all(
        isinstance(b, dict) and b.get("type") == "text" for b in content
    ):
        return "\n".join(b.get("text", "") for b in content)
    return content


class ClaudeCodeProvider(CLIProviderBase):
    """``iModel(provider="claude_code", model="sonnet", cwd=..., allowed_tools=["Read"])``.

    Options (constructor or ``CLIRequest.options``): ``include_partial_messages`` (default
    True: token-level text), ``allowed_tools`` / ``disallowed_tools`` (list or str),
    ``permission_mode``, ``max_turns``, ``system_prompt_mode`` ("append", the default, keeps
    Claude Code's own agent prompt; "replace" uses ``--system-prompt``), ``terminate_grace``.
    """

    name = PROVIDER
    executable = "claude"
    package = "@anthropic-ai/claude-code"
    api_key_env = ("ANTHROPIC_API_KEY",)
    # its own variables, plus the Bedrock and Vertex back ends Claude Code supports
    vendor_env = ("ANTHROPIC_", "CLAUDE_", "AWS_", "GOOGLE_APPLICATION_CREDENTIALS")

    def build_argv(self, request: CLIRequest) -> list[str]:
        opt = lambda key, default=None: self._option(request, key, default)  # noqa: E731
        prompt_arg = [] if _looks_like_flag(request.prompt) else [request.prompt]
        argv = [
            self.cli_path or self.executable,
            "-p",
            *prompt_arg,
            "--output-format",
            "stream-json",
            "--verbose",
        ]
        if opt("include_partial_messages", True):
            argv.append("--include-partial-messages")
        if request.resume:
            argv += ["--resume", request.resume]
        if self.model:
            argv += ["--model", self.model]
        if request.system:
            replace = opt("system_prompt_mode", "append") == "replace"
            argv += ["--system-prompt" if replace else "--append-system-prompt", request.system]
        if (turns := opt("max_turns")) is not None:
            argv += ["--max-turns", str(int(turns))]
        if tools := _names(opt("disallowed_tools")):
            argv += ["--disallowedTools", *tools]
        if tools := _names(opt("allowed_tools")):
            argv += ["--allowedTools", *tools]
        if mode := opt("permission_mode"):
            # Also ends the variadic --allowedTools list above.
            argv += ["--permission-mode", str(mode)]
        return argv + self.extra_args

    def stdin_for(self, request: CLIRequest) -> bytes | None:
        # A prompt starting with "-" would be parsed as a flag; `claude -p` reads the prompt
        # from stdin when none is given on the command line.
        return request.prompt.encode() if _looks_like_flag(request.prompt) else None

    def new_mapper(self) -> EventMapper:
        return ClaudeEventMapper(self.name)


def _looks_like_flag(prompt: str) -> bool:
    return prompt.startswith("-")


def _names(value: Any) -> list[str]:
    if not value:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return [str(v) for v in value]
