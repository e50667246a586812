"""A stand-in for the notebook: IPython's cell events and what ``display`` / ``update_display``
would save in the .ipynb for a view shown with a display id (the static fallback)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest


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


@pytest.fixture
def outputs(monkeypatch: pytest.MonkeyPatch) -> SavedOutputs:
    import IPython.display

    import lion_nb.widgets.viewbase as viewbase

    out = SavedOutputs()
    monkeypatch.setattr(IPython.display, "display", out.display)
    monkeypatch.setattr(IPython.display, "update_display", out.update_display)
    monkeypatch.setattr(viewbase, "_shell", lambda: out.shell)  # as if inside IPython
    monkeypatch.setattr(viewbase, "_CELLS", viewbase._Cells())
    return out


# ----- a widget's comm without a kernel: what a page drawing the view would get -----------
class _RecordingComm:
    """A widget's comm without a kernel: what it was opened with and each message sent."""

    def __init__(self, *, data: dict, **_: object) -> None:
        self.comm_id = f"comm-{id(self)}"
        self.opened = data
        self.sent: list[dict] = []
        self.kernel = object()  # ipywidgets sends nothing on a comm without a kernel

    def on_msg(self, _callback: object) -> None: ...

    def send(self, data: dict | None = None, **_: object) -> None:
        self.sent.append(data or {})

    def close(self, *_: object, **__: object) -> None: ...


def page_state(comm: _RecordingComm) -> dict:
    """The widget state a page drawing the view now would hold: the comm's opening state with
    every update message applied (custom messages are not replayed to a view drawn later)."""
    state = dict(comm.opened["state"])
    for msg in comm.sent:
        if msg.get("method") == "update":
            state.update(msg["state"])
    return state


@pytest.fixture
def comms(monkeypatch: pytest.MonkeyPatch) -> list[_RecordingComm]:
    import comm

    made: list[_RecordingComm] = []

    def create_comm(**kwargs: object) -> _RecordingComm:
        made.append(_RecordingComm(**kwargs))  # type: ignore[arg-type]
        return made[-1]

    monkeypatch.setattr(comm, "create_comm", create_comm)
    return made
