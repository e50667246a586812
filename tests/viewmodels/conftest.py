"""Signals as a branch emits them while a message streams: each delta with the running
snapshot of its part (the view models read the snapshot)."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from lion_nb.signals import StreamDelta, TextAccumulator

Part = Callable[..., StreamDelta]


@pytest.fixture
def part() -> Part:
    """``part(mid, text, kind="text", call_id=None, name=None)``: the StreamDelta of ``text``
    appended to that part of message ``mid``."""
    parts: dict[tuple, TextAccumulator] = {}
    branch_id = uuid.uuid4()

    def make(mid: uuid.UUID, text: str, kind: str = "text", **kw: object) -> StreamDelta:
        acc = parts.setdefault((mid, kind, kw.get("call_id")), TextAccumulator())
        acc.append(text)
        return StreamDelta(
            branch_id=branch_id,
            message_id=mid,
            kind=kind,  # type: ignore[arg-type]
            delta=text,
            source=acc,
            length=acc.length,
            **kw,  # type: ignore[arg-type]
        )

    return make
