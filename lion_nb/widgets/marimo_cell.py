"""A view made by a click, in marimo: made as part of the cell that showed the view clicked.

marimo serves a widget's front-end module as a file that belongs to a cell (it goes when the
cell runs again). A widget made while no cell runs — in a page action's handler, e.g. the chat
view the grid's "Open" makes — finds no cell to belong to and fails to open (marimo 0.25:
``AssertionError`` in its virtual file), so the page never gets it. ``current_cell()`` notes,
when a view is made, the marimo cell running then; ``in_cell(cell)`` makes what is made inside
it belong to that cell when no cell runs. Outside marimo both do nothing (``import lion_nb``
never imports marimo: the module is looked up in ``sys.modules``)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

__all__ = ["current_cell", "in_cell"]


def _context() -> Any:
    """marimo's runtime context in this kernel, or None (not marimo, or not initialized)."""
    if "marimo" not in sys.modules:
        return None
    try:
        # lazy: marimo's own kernel has it loaded; elsewhere this is never reached
        from marimo._runtime.context import get_context

        return get_context()
    except Exception:  # no context (a plain script importing marimo), or another marimo
        return None


def current_cell() -> Any:
    """The id of the marimo cell running now; None outside marimo or between runs."""
    ctx = _context()
    return getattr(ctx, "cell_id", None) if ctx is not None else None


@contextlib.contextmanager
def in_cell(cell: Any) -> Iterator[None]:
    """What is made inside belongs to marimo cell ``cell`` (from ``current_cell()``) when no
    cell runs now; otherwise (a cell runs, no cell was noted, not marimo) nothing changes."""
    ctx = _context() if cell is not None else None
    if ctx is None or getattr(ctx, "cell_id", None) is not None or not hasattr(ctx, "with_cell_id"):
        yield
        return
    with ctx.with_cell_id(cell):
        yield
