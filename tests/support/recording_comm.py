"""A widget's comm without a kernel: what a page drawing the view would get. The ``comms``
fixture in tests/widgets/conftest.py makes every new comm one of these."""

from __future__ import annotations


class RecordingComm:
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


def page_state(comm: RecordingComm) -> dict:
    """The widget state a page drawing the view now would hold: the comm's opening state with
    every update message applied (custom messages are not replayed to a view drawn later)."""
    state = dict(comm.opened["state"])
    for msg in comm.sent:
        if msg.get("method") == "update":
            state.update(msg["state"])
    return state
