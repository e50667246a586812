"""Stream persistence for ``Branch.run(stream_persist=True)``: the files and their format.

Files (other tools rely on these names):

* ``<snapshot_dir>/<branch id>.json`` — the branch (``Branch.to_dict()``), written atomically
  (temporary file, fsync, ``os.replace``) after the instruction is recorded and before the
  agent starts, and again when the run ends;
* ``<persist_dir>/<branch id>.buffer.jsonl`` — the live buffer: a header line, then one JSON
  object per chunk, appended and flushed as each chunk arrives. It is removed only after the
  final snapshot is safely written, so a leftover buffer means the run did not finish cleanly.

A flushed line is in the operating system's hands, so it survives the Python process being
killed (``kill -9``); it is not fsynced per chunk (that would cost a disk sync per token), so a
power loss may lose the last lines. ``lion_nb.session.recover.recover_branch`` rebuilds the
branch from the snapshot plus the buffer (``read_buffer``) by replaying the chunks through the
same ``StreamAssembler`` ``run()`` uses.

This module sits below the operations (``run`` writes through it) and knows a branch only as
something with an ``id`` and a ``to_dict()`` (``Snapshotable``).

Files are created readable by the owner only: they hold the conversation.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import uuid
from dataclasses import fields
from pathlib import Path
from typing import Any, Protocol, TextIO

from lion_nb import errors
from lion_nb.models.base import Chunk
from lion_nb.models.jsonl import JSONLinesDecoder, MalformedLine

logger = logging.getLogger(__name__)

BUFFER_FORMAT = "lion_nb.run-buffer/1"
SNAPSHOT_SUFFIX = ".json"
BUFFER_SUFFIX = ".buffer.jsonl"
_CHUNK_FIELDS = tuple(f.name for f in fields(Chunk) if f.name != "error")


class Snapshotable(Protocol):
    """What a snapshot is written from (a ``Branch``, a ``BranchHost``)."""

    @property
    def id(self) -> uuid.UUID: ...

    def to_dict(self) -> dict[str, Any]: ...


def snapshot_path(snapshot_dir: str | os.PathLike[str], branch_id: uuid.UUID | str) -> Path:
    return Path(snapshot_dir) / f"{branch_id}{SNAPSHOT_SUFFIX}"


def buffer_path(persist_dir: str | os.PathLike[str], branch_id: uuid.UUID | str) -> Path:
    return Path(persist_dir) / f"{branch_id}{BUFFER_SUFFIX}"


def _make_dir(path: Path) -> None:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):  # not every filesystem lets a directory be opened
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_snapshot(branch: Snapshotable, snapshot_dir: str | os.PathLike[str]) -> Path:
    """Write ``<snapshot_dir>/<branch id>.json`` atomically: a reader (or a crash) sees the old
    snapshot or the new one, never a torn file."""
    directory = Path(snapshot_dir)
    _make_dir(directory)
    target = snapshot_path(directory, branch.id)
    data = json.dumps(branch.to_dict(), ensure_ascii=False, default=str)
    tmp = directory / f".{target.name}.{uuid.uuid4().hex[:8]}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _fsync_dir(directory)
    return target


def chunk_to_dict(chunk: Chunk) -> dict[str, Any]:
    """A JSON-safe form of ``chunk``: every field, the error as its class name and message."""
    out: dict[str, Any] = {name: getattr(chunk, name) for name in _CHUNK_FIELDS}
    error = chunk.error
    if error is not None:
        out["error"] = {
            "type": type(error).__name__,
            "message": str(error),
            "status": getattr(error, "status", None),
            "provider": getattr(error, "provider", None),
        }
    return out


def chunk_from_dict(data: dict[str, Any]) -> Chunk:
    """The inverse of ``chunk_to_dict``; the error comes back as the same lion_nb class when
    there is one of that name (else a ``ProviderError``)."""
    kw = {name: data[name] for name in _CHUNK_FIELDS if name in data}
    err = data.get("error")
    if isinstance(err, dict):
        cls = getattr(errors, str(err.get("type")), None)
        if not (isinstance(cls, type) and issubclass(cls, errors.ProviderError)):
            cls = errors.ProviderError
        message = err.get("message") or ""
        try:
            kw["error"] = cls(message, provider=err.get("provider"), status=err.get("status"))
        except TypeError:
            kw["error"] = errors.ProviderError(message, provider=err.get("provider"))
    return Chunk(**kw)


class ChunkBuffer:
    """The live ``.buffer.jsonl`` of one run: ``open(header)``, ``append(chunk)``, ``close()``,
    ``remove()``. A write failure mid-stream is logged once and later chunks are skipped: the
    agent's work goes on, and the final snapshot still records every message."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh: TextIO | None = None
        self._seq = 0
        self.failed = False

    def open(self, header: dict[str, Any]) -> None:
        _make_dir(self.path.parent)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        self._fh = os.fdopen(fd, "w", encoding="utf-8")
        self._write({"format": BUFFER_FORMAT, **header})

    def _write(self, obj: dict[str, Any]) -> None:
        assert self._fh is not None
        self._fh.write(json.dumps(obj, ensure_ascii=False, default=repr) + "\n")
        self._fh.flush()  # in the OS page cache: survives the death of this process

    def append(self, chunk: Chunk) -> None:
        if self._fh is None or self.failed:
            return
        self._seq += 1
        try:
            self._write({"seq": self._seq, "chunk": chunk_to_dict(chunk)})
        except (OSError, ValueError) as exc:
            self.failed = True
            logger.error(
                "stream persistence: could not append to %s (%s); later chunks are "
                "not buffered, the final snapshot will still be written",
                self.path,
                exc,
            )

    def close(self) -> None:
        fh, self._fh = self._fh, None
        if fh is not None:
            try:
                fh.close()
            except (OSError, ValueError) as exc:  # never in the way of the final snapshot
                logger.error("stream persistence: closing %s failed (%s)", self.path, exc)

    def remove(self) -> None:
        self.close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


def read_buffer(path: str | os.PathLike[str]) -> tuple[dict[str, Any], list[Chunk]]:
    """The header and chunks of a buffer file. A last line cut by a crash is dropped (with a
    warning); so is any other line that does not decode."""
    decoder = JSONLinesDecoder(source="run buffer")
    items = decoder.feed(Path(path).read_bytes()) + decoder.finish()
    header: dict[str, Any] = {}
    chunks: list[Chunk] = []
    for item in items:
        if isinstance(item, MalformedLine):
            logger.warning("recover: skipping %s line %d of %s", item.reason, item.line_no, path)
        elif "format" in item and not header and not chunks:
            header = item
        elif isinstance(item.get("chunk"), dict):
            chunks.append(chunk_from_dict(item["chunk"]))
    if header.get("format") not in (None, BUFFER_FORMAT):
        raise ValueError(f"{path}: unsupported buffer format {header.get('format')!r}")
    return header, chunks
