"""Which messages a chat view shows, and in what order.

A transcript is a list of keys in reading order: a recorded message's id, ``("live", id)`` for
a reply still streaming, or ``("pending", tag)`` for a prompt shown before its Instruction is
recorded. ``hidden`` message ids are never shown (a view made with ``history=False`` hides what
was recorded before it). The widget side (``widgets.transcript``) keeps one widget per key.
"""

from __future__ import annotations

import uuid
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any, TypeGuard

if TYPE_CHECKING:
    from lion_nb.messages import RoledMessage
    from lion_nb.session.branch import Branch

__all__ = ["Key", "TranscriptModel", "is_live"]

Key = Hashable  # uuid.UUID | tuple[str, uuid.UUID]


def is_live(key: Key) -> TypeGuard[tuple[str, uuid.UUID]]:
    return isinstance(key, tuple) and key[0] == "live"


class TranscriptModel:
    """The keys a transcript shows, for ``branch`` without the ``hidden`` message ids."""

    def __init__(self, branch: Branch, hidden: frozenset[uuid.UUID] = frozenset()) -> None:
        self.branch = branch
        self.hidden = hidden
        self.keys: list[Key] = []
        self.pending: Key | None = None  # the prompt shown until its Instruction is recorded

    # ----- reading -------------------------------------------------------------------------
    def shown_ids(self) -> list[uuid.UUID]:
        """Ids of the recorded messages this transcript shows, in the branch's order."""
        return [i for i in self.branch.progression if i not in self.hidden]

    def messages(self) -> list[RoledMessage]:
        """The recorded messages this transcript shows (what a static copy should hold)."""
        return [self.branch.messages[i] for i in self.shown_ids()]

    def shows(self, key: Key) -> bool:
        return key in self.keys

    def index(self, key: Key) -> int:
        return self.keys.index(key)

    def recorded(self) -> list[uuid.UUID]:
        return [k for k in self.keys if isinstance(k, uuid.UUID)]

    def stale(self) -> bool:
        """The branch changed without signals (``clear_messages``): rebuild."""
        return self.recorded() != self.shown_ids()

    def wants(self, message: Any) -> bool:
        """A recorded message this transcript should add (not hidden, not shown yet)."""
        return message.id not in self.hidden and message.id not in self.keys

    # ----- changes ---------------------------------------------------------------------------
    def add_pending(self) -> Key:
        """A prompt shown at once, at the end."""
        self.pending = ("pending", uuid.uuid4())
        self.keys.append(self.pending)
        return self.pending

    def place(self, key: Key) -> None:
        """Show ``key`` where it is, or at the end."""
        if key not in self.keys:
            self.keys.append(key)

    def replace(self, old: Key, new: Key) -> None:
        self.keys[self.keys.index(old)] = new
        if old == self.pending:
            self.pending = None

    def insert_message(self, mid: uuid.UUID) -> int:
        """Place a newly recorded message. Operations record the instruction after the reply
        streamed: to keep reading order it goes before the replies still streaming."""
        index = next((i for i, k in enumerate(self.keys) if is_live(k)), len(self.keys))
        self.keys.insert(index, mid)
        return index

    def drop(self, key: Key) -> None:
        self.keys = [k for k in self.keys if k != key]

    def rebuild(self) -> list[Key]:
        """Show ``branch.messages`` afresh (a pending prompt stays at the end); returns the
        keys no longer shown."""
        old = self.keys
        self.keys = [m.id for m in self.branch.messages if m.id not in self.hidden]
        if self.pending is not None:
            self.keys.append(self.pending)
        return [k for k in old if k != self.pending]
