"""OpenAI Codex CLI (``codex exec --json``) as a CLI provider.

Event shapes are those of codex-cli 0.171.0 recorded in ``tests/fixtures/cli/codex``.
``CodexEventMapper`` is pure:

- ``thread.started`` -> system chunk; the ``thread_id`` is the session id that
  ``codex exec resume <thread_id>`` takes.
- ``item.completed`` ``agent_message`` -> text; ``reasoning`` -> thinking. Codex prints these
  only complete (no deltas), so consecutive ones are separated by a blank line.
- ``command_execution`` / ``file_change`` / ``mcp_tool_call`` / ``web_search`` items ->
  tool_use at ``item.started`` (or at completion if no start was printed) and tool_result at
  ``item.completed``; failure from ``status: "failed"``, a non-zero ``exit_code`` or ``error``.
  Note that a sandbox-blocked command prints no item at all.
- ``error`` items are non-fatal notices from Codex (logged, not raised).
- ``turn.completed`` -> result chunk. Codex reports the *thread's cumulative* usage there (a
  resumed thread includes the earlier runs), so the mapper reports the marginal usage of this
  turn against the totals it last saw for the thread; the cumulative figures stay in
  ``metadata["thread_usage"]``.
- ``error`` lines: ``Reconnecting... n/m`` notices are Codex retrying its own stream and are
  only logged; an ``error`` line with an empty ``error: {}`` payload is the end-of-stream
  sentinel some versions print after a resumed session (``benign_eos=True``); any other
  ``error`` line is held and becomes the error chunk at ``turn.failed`` (which repeats it) or
  at the end of the stream.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from lion_nb.models.base import Chunk, ChunkType, CLIRequest
from lion_nb.models.cli_stream import CLIProviderBase, EventMapper, classify_error, error_chunk

logger = logging.getLogger(__name__)

PROVIDER = "codex"
_USAGE_KEYS = (
    "input_tokens",
    "cached_input_tokens",
    "cache_write_input_tokens",
    "output_tokens",
    "reasoning_output_tokens",
)
_TOOL_ITEMS = ("command_execution", "file_change", "mcp_tool_call", "web_search")


class CodexEventMapper:
    """Codex ``exec --json`` lines -> ``Chunk``s. One instance per stream.

    ``thread_totals`` maps thread id -> cumulative usage last reported; pass the provider's
    dict so a resumed thread's usage is reported as marginal. It is updated in place.
    """

    def __init__(
        self, provider: str = PROVIDER, thread_totals: dict[str, dict[str, int]] | None = None
    ) -> None:
        self.provider = provider
        self.thread_totals = thread_totals if thread_totals is not None else {}
        self._thread_id: str | None = None
        self._started: set[str] = set()
        self._prose: set[ChunkType] = set()  # chunk kinds emitted since the last tool call
        self._pending_error: dict[str, Any] | None = None
        self._errored = False

    def map(self, event: dict[str, Any]) -> list[Chunk]:
        kind = event.get("type")
        if kind == "thread.started":
            self._thread_id = event.get("thread_id")
            return [Chunk(type="system", session_id=self._thread_id, raw=event)]
        if kind in ("item.started", "item.updated", "item.completed"):
            return self._item(kind, event.get("item") or {}, event)
        if kind == "turn.completed":
            return [self._turn_completed(event)]
        if kind == "turn.failed":
            self._errored = True
            message = (event.get("error") or {}).get("message")
            if not message and self._pending_error is not None:
                message = self._pending_error.get("message")
            self._pending_error = None
            return [error_chunk(classify_error(message, provider=self.provider), event)]
        if kind == "error":
            return self._error_line(event)
        return []  # turn.started and anything newer

    def finish(self) -> list[Chunk]:
        if self._pending_error is not None and not self._errored:
            self._errored = True
            event, self._pending_error = self._pending_error, None
            return [
                error_chunk(classify_error(event.get("message"), provider=self.provider), event)
            ]
        return []

    # -- items -----------------------------------------------------------------------------

    def _item(self, phase: str, item: dict[str, Any], event: dict[str, Any]) -> list[Chunk]:
        itype = item.get("type")
        item_id = str(item.get("id", ""))
        if itype in ("agent_message", "reasoning"):
            if phase != "item.completed" or not item.get("text"):
                return []
            kind: ChunkType = "text" if itype == "agent_message" else "thinking"
            # Complete messages, not deltas: keep two in a row from running together.
            text = ("\n\n" if kind in self._prose else "") + item["text"]
            self._prose.add(kind)
            return [Chunk(type=kind, text=text, raw=event)]
        if itype in _TOOL_ITEMS:
            chunks: list[Chunk] = []
            if item_id not in self._started:
                self._started.add(item_id)
                self._prose.clear()
                chunks.append(
                    Chunk(
                        type="tool_use",
                        tool_id=item_id,
                        name=_tool_name(item),
                        arguments=_tool_arguments(item),
                        raw=event,
                    )
                )
            if phase == "item.completed":
                output, failed = _tool_outcome(item)
                chunks.append(
                    Chunk(
                        type="tool_result",
                        tool_id=item_id,
                        name=_tool_name(item),
                        output=output,
                        is_error=failed,
                        raw=event,
                    )
                )
            return chunks
        if itype == "error" and phase == "item.completed":
            logger.warning("codex: %s", item.get("message"))
        return []

    def _turn_completed(self, event: dict[str, Any]) -> Chunk:
        total = {k: v for k, v in (event.get("usage") or {}).items() if isinstance(v, int)}
        before = self.thread_totals.get(self._thread_id or "", {})
        if any(total.get(k, 0) < before.get(k, 0) for k in total):
            before = {}  # counters restarted: the figures are this turn's own
        marginal = {k: total[k] - before.get(k, 0) for k in _USAGE_KEYS if k in total}
        if self._thread_id:
            self.thread_totals[self._thread_id] = total
        meta = {
            "usage": marginal,
            "thread_usage": total,
            "num_turns": 1,
            "session_id": self._thread_id,
            "is_error": False,
        }
        return Chunk(type="result", metadata=meta, raw=event)

    def _error_line(self, event: dict[str, Any]) -> list[Chunk]:
        message = event.get("message")
        if isinstance(message, str) and message.startswith("Reconnecting..."):
            logger.warning("codex: %s", message)
            return []
        if message is None and event.get("error") == {}:
            return [Chunk(type="error", text="end of stream", benign_eos=True, raw=event)]
        self._pending_error = event
        return []


def _tool_name(item: dict[str, Any]) -> str:
    if item.get("type") == "mcp_tool_call":
        return f"{item.get('server', 'mcp')}.{item.get('tool', 'tool')}"
    return str(item.get("type"))


def _tool_arguments(item: dict[str, Any]) -> dict[str, Any]:
    itype = item.get("type")
    if itype == "command_execution":
        return {"command": item.get("command", "")}
    if itype == "file_change":
        return {"changes": item.get("changes") or []}
    if itype == "web_search":
        return {"query": item.get("query", "")}
    args = item.get("arguments")
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            args = {"arguments": args}
    return args if isinstance(args, dict) else {"arguments": args}


def _tool_outcome(item: dict[str, Any]) -> tuple[Any, bool]:
    failed = item.get("status") == "failed" or bool(item.get("error"))
    exit_code = item.get("exit_code")
    if isinstance(exit_code, int) and exit_code != 0:
        failed = True
    itype = item.get("type")
    if itype == "command_execution":
        return item.get("aggregated_output", ""), failed
    if itype == "file_change":
        return {"status": item.get("status"), "changes": item.get("changes") or []}, failed
    if item.get("error"):
        error = item["error"]
        return (error.get("message") if isinstance(error, dict) else error), failed
    return item.get("result"), failed


class CodexProvider(CLIProviderBase):
    """``iModel(provider="codex", model="gpt-5.5", cwd=..., sandbox="workspace-write")``.

    The prompt goes to stdin (``-``), so its length and leading dashes are no concern.
    Options: ``skip_git_repo_check`` (default True: notebooks rarely sit in a git repo),
    ``sandbox`` (``-s``: read-only / workspace-write / danger-full-access), ``config``
    (dict -> ``-c key=value``), ``terminate_grace``. A system prompt is passed as
    ``-c developer_instructions=...``.
    """

    name = PROVIDER
    executable = "codex"
    package = "@openai/codex"
    api_key_env = ("CODEX_API_KEY", "OPENAI_API_KEY")
    vendor_env = ("OPENAI_", "CODEX_", "AZURE_OPENAI_")

    def __init__(self, model: str | None = None, api_key: str | None = None, **kwargs: Any) -> None:
        super().__init__(model, api_key, **kwargs)
        self.thread_totals: dict[str, dict[str, int]] = {}

    def build_argv(self, request: CLIRequest) -> list[str]:
        argv = [self.cli_path or self.executable, "exec", "--json"]
        if self.model:
            argv += ["-m", self.model]
        if self._option(request, "skip_git_repo_check", True):
            argv.append("--skip-git-repo-check")
        if sandbox := self._option(request, "sandbox"):
            argv += ["-s", str(sandbox)]
        if request.system:
            # -c values are parsed as TOML; a JSON string literal is a valid TOML string.
            argv += ["-c", f"developer_instructions={json.dumps(request.system)}"]
        for key, value in (self._option(request, "config") or {}).items():
            value = value if isinstance(value, str) else json.dumps(value)
            argv += ["-c", f"{key}={value}"]
        argv += self.extra_args
        # Flags belong between `exec` and `resume`; `resume <thread_id>` comes last.
        if request.resume:
            argv += ["resume", request.resume]
        return [*argv, "-"]

    def stdin_for(self, request: CLIRequest) -> bytes | None:
        return request.prompt.encode()

    def new_mapper(self) -> EventMapper:
        return CodexEventMapper(self.name, self.thread_totals)
