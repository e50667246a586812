"""A stand-in for ``rfc3987_syntax`` that builds its grammar on first use, not on import.

Every Ray process imports ``jsonschema`` (``ray.runtime_env``), and jsonschema imports
``rfc3987_syntax`` when it is installed (Jupyter's ``jsonschema[format-nongpl]`` extra installs
it) to check the "iri" formats. That package builds an Earley parser for RFC 3987 when
imported: about 2 s of CPU in each of the ~8 processes a local Ray cluster starts, most of the
cluster's start time on two cores. ``lion_nb.flow.ray_start`` puts this folder first on the
``PYTHONPATH`` of the Ray processes it starts (and loads this module in the notebook's process
before Ray): the real package is found on the rest of the path, and runs unchanged the first
time something validates an IRI."""

from __future__ import annotations

import importlib
import importlib.machinery
import os
import sys
from typing import Any

_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_real = importlib.machinery.PathFinder.find_spec(
    "rfc3987_syntax", [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
)
if _real is None or not _real.submodule_search_locations:
    raise ImportError("rfc3987_syntax is not installed", name="rfc3987_syntax")
# the real package's folder: ``rfc3987_syntax.syntax_helpers`` and the grammar load from it
__path__ = list(_real.submodule_search_locations)


def _helpers() -> Any:
    return importlib.import_module(__name__ + ".syntax_helpers")


def is_valid_syntax(term: str, value: str) -> bool:
    return bool(_helpers().is_valid_syntax(term, value))


def __getattr__(
    name: str,
) -> Any:  # the real package's other names (``from .syntax_helpers import *``)
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(_helpers(), name)
