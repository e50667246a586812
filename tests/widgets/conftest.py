"""Fixtures for the widget tests without a kernel: the notebook's displays
(tests/support/notebook_outputs.py) and the widgets' comms (tests/support/recording_comm.py)."""

from __future__ import annotations

import pytest

from tests.support.notebook_outputs import SavedOutputs
from tests.support.recording_comm import RecordingComm


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


@pytest.fixture
def comms(monkeypatch: pytest.MonkeyPatch) -> list[RecordingComm]:
    import comm

    made: list[RecordingComm] = []

    def create_comm(**kwargs: object) -> RecordingComm:
        made.append(RecordingComm(**kwargs))  # type: ignore[arg-type]
        return made[-1]

    monkeypatch.setattr(comm, "create_comm", create_comm)
    return made
