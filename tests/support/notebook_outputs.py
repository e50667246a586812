"""A stand-in for the notebook: IPython's cell events and what ``display`` / ``update_display``
would save in the .ipynb for a view shown with a display id (the static fallback). The
``outputs`` fixture in tests/widgets/conftest.py installs one."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any


class Events:
    """IPython's ``shell.events``: callbacks per event name."""

    def __init__(self) -> None:
        self.callbacks: dict[str, list[Any]] = {}

    def register(self, name: str, fn: Any) -> None:
        self.callbacks.setdefault(name, []).append(fn)

    def trigger(self, name: str) -> None:
        for fn in self.callbacks.get(name, []):
            fn(None)


class Shell:
    def __init__(self) -> None:
        self.events = Events()


class SavedOutputs:
    """Display id -> the bundle a saved notebook would hold for that output."""

    def __init__(self) -> None:
        self.shell = Shell()
        self.saved: dict[str, dict[str, Any]] = {}
        self.updates = 0

    def display(self, obj: Any, *, raw: bool = False, display_id: str | None = None, **_: Any):
        assert raw and isinstance(obj, dict) and display_id, "views display raw bundles by id"
        self.saved[display_id] = obj

    def update_display(self, obj: Any, *, display_id: str, raw: bool = False, **_: Any) -> None:
        assert raw and display_id in self.saved, "update of a display that was never shown"
        self.saved[display_id] = obj
        self.updates += 1

    @contextlib.contextmanager
    def cell(self) -> Iterator[None]:
        """The body runs as a notebook cell (IPython's pre_run_cell ... post_run_cell)."""
        self.shell.events.trigger("pre_run_cell")
        try:
            yield
        finally:
            self.shell.events.trigger("post_run_cell")

    def show(self, view: Any) -> str:
        """Display ``view`` as a cell of its own would; returns its display id."""
        with self.cell():
            view._ipython_display_()
        return view._display_id

    def of(self, view: Any) -> dict[str, Any]:
        return self.saved[view._display_id]
