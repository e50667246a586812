"""Cassettes: record a notebook's model calls once, replay them anywhere (offline, at the
recorded pace), at the provider seam where every model produces the same typed chunks.

    cassette.py   Cassette (modes, matching, misses, where it records), cassette(), use_cassette()
    active.py     which cassette is in force (iModel asks it on every call)
    files.py      the files a cassette reads and writes; sibling(): where "auto" records
    matching.py   a request as the model sees it: the key recordings are found by
    miss.py       CassetteMiss: not on the cassette, the closest recording, how to record it
    player.py     replaying with the recorded timing, recording a live call
    codec.py      JSON forms of deltas, chunks, responses and errors
    store.py      the JSON-lines file: header, damaged lines, atomic writes, secret scrubbing

Names resolve lazily: ``iModel`` imports ``active`` alone on its import path.
"""

from __future__ import annotations

import sys
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING, Any

__all__ = [
    "MODES",
    "Cassette",
    "CassetteWarning",
    "Mode",
    "cassette",
    "sibling",
    "use_cassette",
]

if TYPE_CHECKING:
    from lion_nb.cassettes.cassette import (
        MODES,
        Cassette,
        CassetteWarning,
        Mode,
        cassette,
        sibling,
        use_cassette,
    )


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'lion_nb.cassettes' has no attribute {name!r}")
    value = getattr(import_module("lion_nb.cassettes.cassette"), name)
    globals()[name] = value
    return value


class _Package(ModuleType):
    """This package's module type. ``cassette`` names both a submodule and the function this
    package exports; Python sets a package's attribute to a submodule when the submodule is
    imported, so once anything imported ``lion_nb.cassettes.cassette`` (``lion_nb.use_cassette``
    does), ``from lion_nb.cassettes import cassette`` would give the module. The package keeps
    the name for the function; the module stays ``sys.modules["lion_nb.cassettes.cassette"]``."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "cassette" and isinstance(value, ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
