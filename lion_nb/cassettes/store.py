"""The cassette file: JSON lines, a format header, one model call per line, written atomically.

    {"format": "lion_nb.cassette", "version": 1}
    {"call": 1, "kind": "api", "request": {"provider": "local", "model": null, "messages": [...]},
     "events": [{"t": 0.041, "text": "Paris"}, ...], "response": {"text": "Paris.", ...},
     "end": 0.093, "recorded_at": "2026-12-01T10:20:00Z"}

Keys keep one order (top level as written, nested objects sorted), so re-recording an unchanged
call changes only its timings. A line that cannot be read is kept as ``Damaged`` (its text
verbatim, its line number and why): a rewrite puts it back where it was, so nothing is lost.
Every line passes ``scrub`` (``lion_nb.secrets.redact``) before it is written.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from lion_nb.cassettes.codec import decode_tokens
from lion_nb.cassettes.matching import fingerprint
from lion_nb.errors import CassetteError
from lion_nb.secrets import redact, secret_values

__all__ = [
    "FORMAT",
    "VERSION",
    "Damaged",
    "Recording",
    "read",
    "scrub",
    "scrub_value",
    "secrets_from_environment",
    "write",
]

FORMAT = "lion_nb.cassette"
VERSION = 1
HEADER = {"format": FORMAT, "version": VERSION}


@dataclass(slots=True)
class Recording:
    """One recorded call. ``events``: ``{"t": seconds since the call started, <kind>: delta}``
    for API calls (kind ``text`` / ``thinking`` / ``tool_args`` with ``name`` and ``id``), or
    ``{"t", "chunk": {...}}`` for CLI streams. It ends with ``response`` (API), ``error`` (the
    ProviderError raised), or ``stopped`` (the caller stopped reading at ``end``)."""

    kind: Literal["api", "cli"]
    request: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)
    response: dict[str, Any] | None = None  # with "tokens" when logprobs were asked for
    error: dict[str, Any] | None = None
    end: float = 0.0
    stopped: bool = False
    recorded_at: str | None = None
    line: int = 0  # where it is in the file (1-based; 0 until written)
    call: int = 0  # its ordinal among the calls of the file
    key: str = ""
    raw: str = ""  # the line as read or written (rewritten verbatim while its number holds)
    source: dict[str, Any] | None = None  # the object read (keys this version does not know)

    def __post_init__(self) -> None:
        if not self.key:
            self.key = fingerprint(self.request)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"call": self.call, "kind": self.kind, "request": self.request}
        out["events"] = self.events
        if self.response is not None:
            out["response"] = self.response
        if self.error is not None:
            out["error"] = self.error
        out["end"] = round(self.end, 4)
        if self.stopped:
            out["stopped"] = True
        if self.recorded_at:
            out["recorded_at"] = self.recorded_at
        return out


@dataclass(slots=True)
class Damaged:
    line: int
    text: str
    reason: str


def _recording(obj: Any) -> Recording:
    """Validate one decoded line; ``ValueError`` says what is wrong."""
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")
    kind, request, events = obj.get("kind"), obj.get("request"), obj.get("events")
    if kind not in ("api", "cli"):
        raise ValueError(f"'kind' must be 'api' or 'cli', not {kind!r}")
    if not isinstance(request, dict) or not isinstance(request.get("provider"), str):
        raise ValueError("'request' must be an object naming its provider")
    if not isinstance(events, list) or not all(
        isinstance(e, dict) and isinstance(e.get("t"), int | float) for e in events
    ):
        raise ValueError("'events' must be a list of objects with a time 't'")
    if kind == "cli" and not all(isinstance(e.get("chunk"), dict) for e in events):
        raise ValueError("a CLI event must carry a 'chunk' object")
    response, error = obj.get("response"), obj.get("error")
    stopped = obj.get("stopped") is True
    if response is not None and not isinstance(response, dict):
        raise ValueError("'response' must be an object")
    if isinstance(response, dict) and "tokens" in response:
        decode_tokens(response)  # a damaged token list is a damaged line
    if error is not None and not isinstance(error, dict):
        raise ValueError("'error' must be an object")
    if kind == "api" and response is None and error is None and not stopped:
        raise ValueError("an API call needs a 'response', an 'error' or 'stopped'")
    return Recording(
        kind=kind,
        request=request,
        events=events,
        response=response,
        error=error,
        end=float(obj.get("end") or 0.0),
        stopped=stopped,
        recorded_at=obj.get("recorded_at"),
        source=obj,
    )


def read(path: Path) -> list[Recording | Damaged]:
    """Every line of ``path`` after the header, in order (``[]`` when the file is missing).
    Raises ``CassetteError`` only for a file of a newer format version."""
    try:
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise CassetteError(f"cannot read the cassette {str(path)!r}: {exc}") from exc
    items: list[Recording | Damaged] = []
    calls = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            items.append(Damaged(number, line, f"not JSON ({exc.msg} at column {exc.colno})"))
            continue
        if isinstance(obj, dict) and obj.get("format") == FORMAT:  # a header (also where two
            version = obj.get("version")  # cassettes were concatenated)
            if not isinstance(version, int) or version > VERSION:
                raise CassetteError(
                    f"{str(path)!r} is a cassette of format version {version!r}; this "
                    f"lion_nb reads version {VERSION} (upgrade lion_nb to replay it)",
                    path=str(path),
                    line=number,
                )
            continue
        try:
            recording = _recording(obj)
        except ValueError as exc:
            items.append(Damaged(number, line, str(exc)))
            continue
        calls += 1
        recording.line, recording.call, recording.raw = number, calls, line
        items.append(recording)
    return items


def secrets_from_environment() -> list[str]:
    """Values of environment variables whose names say they hold a credential."""
    return secret_values(os.environ)


def scrub(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` (a JSON line) without any of ``secrets`` (as written inside a JSON string too)
    and without anything shaped like a secret: ``lion_nb.secrets.redact``."""
    return redact(text, secrets)


def scrub_value(value: Any, secrets: Iterable[str | None]) -> Any:
    """``value`` (plain JSON) as it reads back after ``scrub``: requests are matched in this
    form, so a request holding a secret matches its own (redacted) recording."""
    text = json.dumps(value, ensure_ascii=False)
    cleaned = scrub(text, secrets)
    return value if cleaned == text else json.loads(cleaned)


def encode(recording: Recording, secrets: Iterable[str | None]) -> str:
    """A new recording as its line. A value JSON cannot hold (a scripted tool output that is
    some Python object) is written as its ``str``: a recording is never refused."""
    line = json.dumps(recording.to_json(), ensure_ascii=False, separators=(", ", ": "), default=str)
    return scrub(line, secrets)


def write(path: Path, items: list[Recording | Damaged], secrets: Iterable[str | None]) -> None:
    """Replace ``path`` with ``items`` atomically (a temporary file in the same folder, flushed
    to disk, then renamed over it): a crash leaves the old file or the new one, never half.
    Lines read from the file are written back as they were (a renumbered call changes only its
    ``call``); new recordings are encoded and scrubbed. Sets each recording's ``line``,
    ``call`` and ``raw`` to what it now is."""
    secrets = list(secrets)
    lines = [json.dumps(HEADER)]
    calls = 0
    for item in items:
        if isinstance(item, Damaged):
            lines.append(item.text)
            item.line = len(lines)
            continue
        calls += 1
        if item.source is None:
            item.call = calls
            item.raw = encode(item, secrets)
        elif item.source.get("call") != calls or not item.raw:
            item.call = item.source["call"] = calls  # the key keeps its place in the line
            item.raw = json.dumps(item.source, ensure_ascii=False, separators=(", ", ": "))
        lines.append(item.raw)
        item.line = len(lines)
    data = ("\n".join(lines) + "\n").encode("utf-8", errors="surrogateescape")
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o777
    except OSError:
        mode = 0o644  # mkstemp makes 0600: a cassette is meant to be shared
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
