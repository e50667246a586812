"""Google Gemini CLI (``gemini -p ... --output-format stream-json``) as a CLI provider.

Event shapes are those of gemini-cli 0.61.0 recorded in ``tests/fixtures/cli/gemini``.
``GeminiEventMapper`` is pure:

- ``init`` -> system chunk (only ``init`` carries the ``session_id``).
- ``message`` with ``role: "assistant"`` -> text (streamed deltas); the ``role: "user"`` echo of
  the prompt is skipped. Gemini CLI does not print thought parts at all.
- ``tool_use`` -> tool_use; ``tool_result`` -> tool_result (``status: "error"`` sets
  ``is_error``; the error type, e.g. ``tool_not_registered``, is in metadata).
- ``result`` -> result chunk with ``stats`` as usage; ``status: "error"`` adds an error chunk
  classified from the message (Gemini wraps the API body, e.g.
  ``[API Error: {"error":{"code":400,...}}]``; a bad key is an HTTP 400 but is an
  ``AuthenticationError``).
- ``error`` lines are documented as non-fatal: warnings are logged; an error-severity one is
  held and reported only if the stream ends without a successful ``result``.

Exit codes: Gemini CLI calls ``process.exit(httpStatus)``, so an API failure exits with the
status truncated to 8 bits (400 -> 144, 429 -> 173, 500 -> 244); ``exit_error`` maps those
back when the stream itself explained nothing.
"""

from __future__ import annotations

import logging
from typing import Any

from lion_nb.errors import AuthenticationError, ProviderError
from lion_nb.models.base import Chunk, CLIRequest
from lion_nb.models.cli_stream import (
    CLIProviderBase,
    EventMapper,
    classify_error,
    error_chunk,
)

logger = logging.getLogger(__name__)

PROVIDER = "gemini_cli"
_HTTP_STATUSES = (400, 401, 403, 404, 408, 429, 500, 502, 503, 504)
EXIT_TO_HTTP = {status & 0xFF: status for status in _HTTP_STATUSES}
EXIT_AUTH = 41  # gemini-cli FatalAuthenticationError


class GeminiEventMapper:
    """Gemini CLI stream-json lines -> ``Chunk``s. One instance per stream."""

    def __init__(self, provider: str = PROVIDER) -> None:
        self.provider = provider
        self._pending_error: dict[str, Any] | None = None
        self._finished = False  # a result line arrived
        self._session_id: str | None = None

    def map(self, event: dict[str, Any]) -> list[Chunk]:
        kind = event.get("type")
        if kind == "init":
            self._session_id = event.get("session_id")
            return [
                Chunk(
                    type="system",
                    session_id=event.get("session_id"),
                    metadata={"model": event.get("model")},
                    raw=event,
                )
            ]
        if kind == "message":
            if event.get("role") == "assistant" and event.get("content"):
                return [Chunk(type="text", text=str(event["content"]), raw=event)]
            return []
        if kind == "tool_use":
            return [
                Chunk(
                    type="tool_use",
                    tool_id=event.get("tool_id"),
                    name=event.get("tool_name"),
                    arguments=event.get("parameters") or {},
                    raw=event,
                )
            ]
        if kind == "tool_result":
            return [self._tool_result(event)]
        if kind == "result":
            return self._result(event)
        if kind == "error":
            if event.get("severity") == "warning":
                logger.warning("gemini_cli: %s", event.get("message"))
            else:
                logger.warning("gemini_cli: error reported: %s", event.get("message"))
                self._pending_error = event
            return []
        return []

    def finish(self) -> list[Chunk]:
        if self._pending_error is not None and not self._finished:
            event, self._pending_error = self._pending_error, None
            return [
                error_chunk(classify_error(event.get("message"), provider=self.provider), event)
            ]
        return []

    def _tool_result(self, event: dict[str, Any]) -> Chunk:
        failed = event.get("status") == "error"
        error = event.get("error") if isinstance(event.get("error"), dict) else None
        output = event.get("output")
        if failed and not output and error:
            output = error.get("message")
        meta = {"error": error} if error else {}
        return Chunk(
            type="tool_result",
            tool_id=event.get("tool_id"),
            output=output,
            is_error=failed,
            metadata=meta,
            raw=event,
        )

    def _result(self, event: dict[str, Any]) -> list[Chunk]:
        self._finished = True
        stats = event.get("stats") or {}
        meta: dict[str, Any] = {
            "usage": {
                k: stats[k]
                for k in ("input_tokens", "output_tokens", "cached")
                if isinstance(stats.get(k), int)
            },
            "duration_ms": stats.get("duration_ms"),
            "tool_calls": stats.get("tool_calls"),
            "models": stats.get("models"),
            "session_id": self._session_id,
            "is_error": event.get("status") == "error",
        }
        chunks = [Chunk(type="result", metadata=meta, raw=event)]
        if event.get("status") == "error":
            error = event.get("error") or {}
            message = error.get("message") if isinstance(error, dict) else str(error)
            if not message and self._pending_error is not None:
                message = self._pending_error.get("message")
            chunks.append(error_chunk(classify_error(message, provider=self.provider), event))
        self._pending_error = None
        return chunks


class GeminiCLIProvider(CLIProviderBase):
    """``iModel(provider="gemini_cli", model="gemini-2.5-pro", approval_mode="yolo")``.

    Options: ``approval_mode`` (default / auto_edit / yolo / plan), ``terminate_grace``.
    Gemini CLI has no system-prompt flag, so ``CLIRequest.system`` is put before the prompt.
    """

    name = PROVIDER
    executable = "gemini"
    package = "@google/gemini-cli"
    api_key_env = ("GEMINI_API_KEY",)
    vendor_env = ("GEMINI_", "GOOGLE_")

    def build_argv(self, request: CLIRequest) -> list[str]:
        prompt = request.prompt
        if request.system:
            prompt = f"{request.system}\n\n{prompt}"
        # yargs would read a value starting with "-" as a flag; the = form is unambiguous.
        prompt_args = [f"--prompt={prompt}"] if prompt.startswith("-") else ["-p", prompt]
        argv = [self.cli_path or self.executable, *prompt_args, "--output-format", "stream-json"]
        if self.model:
            argv += ["-m", self.model]
        if mode := self._option(request, "approval_mode"):
            argv += ["--approval-mode", str(mode)]
        if request.resume:
            argv += ["--resume", request.resume]
        return argv + self.extra_args

    def new_mapper(self) -> EventMapper:
        return GeminiEventMapper(self.name)

    def exit_error(self, code: int, stderr: str) -> ProviderError:
        detail = _error_line(stderr)
        if code == EXIT_AUTH:
            return AuthenticationError(
                f"gemini_cli could not authenticate: {detail}".rstrip(": "),
                provider=self.name,
                status=code,
                body=stderr,
            )
        if code in EXIT_TO_HTTP:
            status = EXIT_TO_HTTP[code]
            message = f"gemini_cli exited with code {code} (HTTP {status})"
            return classify_error(
                f"{message}: {detail}" if detail else message,
                provider=self.name,
                status=status,
                body=stderr,
            )
        return super().exit_error(code, stderr)


def _error_line(stderr: str) -> str:
    """The most telling stderr line: the last one reporting an error or failure, skipping
    stack frames; else the last line that is not a stack frame."""
    lines = [
        ln.strip() for ln in stderr.splitlines() if ln.strip() and not ln.strip().startswith("at ")
    ]
    for line in reversed(lines):
        lower = line.lower()
        if "error" in lower or "fail" in lower:
            return line[:300]
    return lines[-1][:300] if lines else ""
