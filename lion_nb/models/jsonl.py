"""Sans-I/O JSON-lines decoder for CLI agent output.

``JSONLinesDecoder().feed(data) -> list`` takes bytes exactly as they were read from a pipe, in
blocks of any size, and returns every complete line decoded; ``finish()`` flushes the last line
when the stream ends. No ``await``, no file objects: the same decoder serves a subprocess, a
recorded fixture, and a crash-recovery buffer.

Each returned item is either a ``dict`` (one JSON object) or a ``MalformedLine`` marker. Markers
are returned in stream order instead of raising so that one bad line does not lose the good lines
around it; the consumer decides whether a marker is fatal (a CLI provider skips ``invalid_json``,
``not_object`` and ``too_long`` lines with a warning, and reports ``truncated`` — the process died
mid-line — as an error). ``marker.error`` is a ready ``MalformedResponse``.

Lines are split on ``b"\\n"`` *before* UTF-8 decoding. That is safe because the byte 0x0A never
occurs inside a multi-byte UTF-8 sequence, so a block boundary inside a character is harmless.
A trailing ``\\r`` is dropped, blank lines are skipped, and invalid UTF-8 is replaced (U+FFFD)
and logged rather than failing the line.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any, Literal

from lion_nb.errors import MalformedResponse

logger = logging.getLogger(__name__)

MAX_LINE_BYTES = 16 * 1024 * 1024
PREVIEW_CHARS = 200

MalformedReason = Literal["invalid_json", "not_object", "too_long", "truncated"]


@dataclass(frozen=True, slots=True)
class MalformedLine:
    """A line that is not one JSON object. ``line_no`` counts from 1 (blank lines included)."""

    reason: MalformedReason
    line_no: int
    preview: str  # the start of the line, for logs and error messages
    error: MalformedResponse

    def as_event(self) -> dict[str, Any]:
        """A JSON-safe description, for stream persistence (``Chunk.raw``)."""
        return {
            "type": "malformed_line",
            "reason": self.reason,
            "line_no": self.line_no,
            "preview": self.preview,
        }


DecodedItem = dict[str, Any] | MalformedLine


class JSONLinesDecoder:
    """Incremental decoder: ``feed(bytes) -> list[dict | MalformedLine]``, ``finish() -> list``.

    ``max_line_bytes`` bounds memory: a line that grows past it is reported once as
    ``too_long`` and its remaining bytes are discarded up to the next newline.
    """

    def __init__(self, *, max_line_bytes: int = MAX_LINE_BYTES, source: str | None = None) -> None:
        self.max_line_bytes = max_line_bytes
        self.source = source  # provider name, used in error messages
        self.lines = 0  # complete lines seen (blank and malformed included)
        self.replaced_lines = 0  # lines whose invalid UTF-8 was replaced
        self._buffer = bytearray()
        self._discarding = False  # inside an over-long line, waiting for its newline

    def feed(self, data: bytes) -> list[DecodedItem]:
        out: list[DecodedItem] = []
        start = 0
        # Search only the new bytes for newlines, so a long line fed in small blocks stays linear.
        while (newline := data.find(b"\n", start)) >= 0:
            piece = data[start:newline]
            start = newline + 1
            self.lines += 1
            if self._discarding:
                self._discarding = False
                continue
            if self._buffer:
                self._buffer += piece
                line = bytes(self._buffer)
                self._buffer.clear()
            else:
                line = piece
            if len(line) > self.max_line_bytes:
                out.append(self._too_long(line))
            else:
                self._decode(line, out)
        rest = data[start:]
        if rest and not self._discarding:
            self._buffer += rest
            if len(self._buffer) > self.max_line_bytes:
                out.append(self._too_long(bytes(self._buffer), line_no=self.lines + 1))
                self._buffer.clear()
                self._discarding = True
        return out

    def finish(self) -> list[DecodedItem]:
        """Flush the last line. A final line without a newline is accepted when it parses (some
        writers omit the last newline); otherwise it is reported as ``truncated``."""
        line = bytes(self._buffer)
        self._buffer.clear()
        if self._discarding:  # already reported as too_long
            self._discarding = False
            return []
        if not line.strip():
            return []
        self.lines += 1
        out: list[DecodedItem] = []
        self._decode(line, out, final=True)
        return out

    # -- internals -------------------------------------------------------------------------

    def _decode(self, line: bytes, out: list[DecodedItem], *, final: bool = False) -> None:
        if line.endswith(b"\r"):
            line = line[:-1]
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            text = line.decode("utf-8", errors="replace")
            self.replaced_lines += 1
            logger.warning(
                "%s: line %d is not valid UTF-8; invalid bytes replaced",
                self.source or "JSON lines",
                self.lines,
            )
        if not text.strip():
            return
        try:
            value = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            reason: MalformedReason = "truncated" if final else "invalid_json"
            if final:
                what = "stream ended in the middle of a line"
            elif isinstance(exc, json.JSONDecodeError):
                what = f"line is not valid JSON ({exc.msg} at column {exc.colno})"
            else:  # absurdly deep nesting must not crash the stream
                what = "line is nested too deeply to decode"
            out.append(self._marker(reason, text, what))
            return
        if not isinstance(value, dict):
            out.append(
                self._marker(
                    "not_object", text, f"line is JSON {type(value).__name__}, not an object"
                )
            )
            return
        out.append(value)

    def _too_long(self, line: bytes, *, line_no: int | None = None) -> MalformedLine:
        preview = line[:PREVIEW_CHARS].decode("utf-8", errors="replace")
        return self._marker(
            "too_long", preview, f"line exceeds {self.max_line_bytes} bytes", line_no=line_no
        )

    def _marker(
        self, reason: MalformedReason, text: str, what: str, *, line_no: int | None = None
    ) -> MalformedLine:
        number = self.lines if line_no is None else line_no
        preview = text[:PREVIEW_CHARS]
        error = MalformedResponse(
            f"malformed output line {number}: {what}: {preview!r}",
            provider=self.source,
            body=preview,
            retryable=reason == "truncated",
        )
        return MalformedLine(reason, number, preview, error)
