"""One part of a message while it streams (its text, thinking, or a tool call's arguments), as
a view reads it: from ``StreamDelta.snapshot``, the running text the branch keeps for that part.

A view never adds deltas up itself. It keeps the latest signal of each part (``update``) and
takes what the snapshot holds beyond what it read before (``take``). The first take gives
everything streamed so far, so a view attached half-way through a reply shows its first half
too. When exactly one delta arrived since the last take, the new end of the snapshot *is* that
delta (``snapshot[read:] == delta``), so it is taken without joining the text: reading per
delta stays linear in the reply.
"""

from __future__ import annotations

from collections.abc import Callable

from lion_nb.signals import StreamDelta

__all__ = ["GrowingText", "StreamText"]


class StreamText:
    """The streamed text of one message part. ``read`` is how much of it was taken."""

    __slots__ = ("_signal", "read")

    def __init__(self, signal: StreamDelta | None = None) -> None:
        self._signal = signal
        self.read = 0

    def update(self, signal: StreamDelta) -> None:
        """A newer delta of this part arrived (its snapshot is read later, when shown)."""
        self._signal = signal

    @property
    def length(self) -> int:
        """Characters streamed so far (without building the text)."""
        signal = self._signal
        if signal is None:
            return 0
        return signal.length if signal.length >= 0 else len(signal.snapshot)

    @property
    def pending(self) -> int:
        """Characters streamed but not taken yet."""
        return self.length - self.read

    def text(self) -> str:
        """Everything streamed so far."""
        return self._signal.snapshot if self._signal is not None else ""

    def take(self) -> str:
        """``snapshot[read:]``: the text that arrived since the last ``take`` (all of it, the
        first time)."""
        signal = self._signal
        if signal is None:
            return ""
        length = self.length
        if length - len(signal.delta) == self.read:  # one delta since: the snapshot's new end
            self.read = length
            return signal.delta
        text = signal.snapshot
        new = text[self.read :]
        self.read = len(text)
        return new


class GrowingText:
    """A text a view reads whole from ``source`` when it shows it, and that grows at its end
    (a ReAct reply's analysis, read out of its partial JSON), with ``StreamText``'s reading
    interface. ``refresh`` reads the source; ``rewritten``: what was taken changed since (not
    only grew), so the reader starts again from a new ``GrowingText``."""

    __slots__ = ("_now", "_source", "_taken", "read", "rewritten")

    def __init__(self, source: Callable[[], str]) -> None:
        self._source = source
        self._now = ""
        self._taken = ""
        self.read = 0
        self.rewritten = False

    def update(self, signal: StreamDelta) -> None:
        """The source changed (it is read when shown)."""

    def refresh(self) -> None:
        now = self._source()
        if not now.startswith(self._taken):
            self.rewritten = True
        self._now = now

    @property
    def length(self) -> int:
        return len(self._now)

    @property
    def pending(self) -> int:
        """Characters grown since the last ``take`` (0 once rewritten)."""
        self.refresh()
        return 0 if self.rewritten else len(self._now) - self.read

    def text(self) -> str:
        return self._now

    def take(self) -> str:
        new = self._now[self.read :]
        self._taken = self._now
        self.read = len(self._now)
        return new
