"""Which files a cassette reads and writes: the cassette named, and the sibling that mode "auto"
records into when that cassette exists (``sibling``), so a shipped cassette is never changed."""

from __future__ import annotations

import os
from pathlib import Path

from lion_nb.cassettes.store import Damaged, Recording

__all__ = ["CassetteFile", "sibling"]


def sibling(path: str | os.PathLike[str]) -> str:
    """The file mode "auto" records new calls into when the cassette ``path`` exists:
    ``x.cassette.jsonl`` -> ``x.local.cassette.jsonl``, ``x.jsonl`` -> ``x.local.jsonl`` (in
    the same folder)."""
    head, name = os.path.split(os.fspath(path))
    base, _, ext = name.rpartition(".")
    if not base:
        return os.path.join(head, f"{name}.local")
    if base.endswith(".cassette") and len(base) > len(".cassette"):
        base, ext = base[: -len(".cassette")], f"cassette.{ext}"
    return os.path.join(head, f"{base}.local.{ext}")


class CassetteFile:
    """One file a cassette reads (and perhaps writes): its path as given (``shown``) and its
    lines as last read or written."""

    __slots__ = ("items", "path", "shown")

    def __init__(self, shown: str | os.PathLike[str]) -> None:
        self.path = Path(shown)
        self.shown = os.fspath(shown)
        self.items: list[Recording | Damaged] = []

    def is_(self, path: str | os.PathLike[str]) -> bool:
        """``path`` names this file."""
        return os.path.abspath(path) == os.path.abspath(self.path)
