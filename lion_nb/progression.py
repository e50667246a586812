"""The order of a conversation: ``Progression`` (message ids) and ``Messages`` (the record).

Kept free of pydantic so that constructing a Branch stays cheap; the message classes live in
``lion_nb.messages``, which re-exports both names.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from typing import Any


class Progression:
    """An ordered sequence of message ids (the order a conversation is read in).

    A ``Progression`` you make yourself chooses which messages a call sends
    (``branch.chat(..., progression=...)``); a branch's own (``branch.progression``) is
    changed only through the branch, so its messages and signals stay in step."""

    __slots__ = ("_order",)

    def __init__(self, ids: Iterable[uuid.UUID] = ()) -> None:
        self._order: list[uuid.UUID] = list(ids)

    def append(self, message_id: uuid.UUID) -> None:
        """Add ``message_id`` at the end."""
        self._order.append(message_id)

    def insert(self, index: int, message_id: uuid.UUID) -> None:
        """Put ``message_id`` at position ``index`` (as ``list.insert``)."""
        self._order.insert(index, message_id)

    def remove(self, message_id: uuid.UUID) -> None:
        """Take ``message_id`` out; ``ValueError`` if it is not there."""
        self._order.remove(message_id)

    def clear(self) -> None:
        """Remove every id."""
        self._order.clear()

    def index(self, message_id: uuid.UUID) -> int:
        """The position of ``message_id``; ``ValueError`` if it is not there."""
        return self._order.index(message_id)

    def __iter__(self) -> Iterator[uuid.UUID]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)

    def __contains__(self, item: object) -> bool:
        return item in self._order

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return Progression(self._order[index])
        return self._order[index]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Progression) and self._order == other._order

    def __repr__(self) -> str:
        return f"Progression({len(self._order)} ids)"


class Messages:
    """The ordered record of a branch's messages: iterable, ``len()``-able, indexable by
    position, slice or id. Mutated only through the branch (so signals are emitted)."""

    __slots__ = ("_by_id", "progression")

    def __init__(self) -> None:
        self._by_id: dict[uuid.UUID, Any] = {}
        self.progression = Progression()

    def _append(self, message: Any) -> None:
        if message.id in self._by_id:
            raise ValueError(f"message {message.id} is already recorded")
        self._by_id[message.id] = message
        self.progression.append(message.id)

    def _remove(self, message_id: uuid.UUID) -> Any:
        """Take ``message_id`` out of the record and the order; returns the message."""
        message = self._by_id.pop(message_id, None)
        if message is None:
            raise ValueError(f"message {message_id} is not recorded")
        self.progression.remove(message_id)
        return message

    def _clear(self, keep_system: bool = True) -> None:
        system = self.system if keep_system else None
        self._by_id.clear()
        self.progression.clear()
        if system is not None:
            self._append(system)

    @property
    def system(self) -> Any:
        """The System message when the conversation starts with one, else None."""
        if self.progression:
            first = self._by_id[self.progression[0]]
            if first.role == "system":
                return first
        return None

    def get(self, message_id: uuid.UUID) -> Any:
        """The message with id ``message_id``, or None when it is not recorded."""
        return self._by_id.get(message_id)

    def __iter__(self) -> Iterator[Any]:
        by_id = self._by_id
        return (by_id[i] for i in self.progression)

    def __len__(self) -> int:
        return len(self.progression)

    def __getitem__(self, key: int | slice | uuid.UUID) -> Any:
        if isinstance(key, uuid.UUID):
            return self._by_id[key]
        if isinstance(key, slice):
            return [self._by_id[i] for i in self.progression._order[key]]
        return self._by_id[self.progression[key]]

    def __contains__(self, item: object) -> bool:
        if hasattr(item, "role") and hasattr(item, "id"):
            return item.id in self._by_id
        return item in self._by_id

    def __repr__(self) -> str:
        return f"Messages({len(self)})"
