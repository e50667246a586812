"""Typed conversation messages and their order.

Messages are pydantic values discriminated by ``role``. A history of them round-trips to JSON
through ``MESSAGE_LIST`` (a TypeAdapter), which is how branches are snapshotted and exported.
Streaming state never lives in a half-built message: operations accumulate deltas elsewhere and
record a message once it is complete.

Roles: ``system``, ``user`` (an Instruction), ``assistant`` (an AssistantResponse),
``action_request`` (a tool call the model asked for) and ``action_response`` (its result).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

JsonValue = Any  # any JSON-serialisable value; kept loose on purpose (context may be anything)


def _now() -> datetime:
    return datetime.now(UTC)


class RoledMessage(BaseModel):
    """Fields every message has. Messages are immutable values once recorded."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: uuid.UUID = Field(default_factory=uuid.uuid4)
    created_at: datetime = Field(default_factory=_now)
    role: str
    sender: str | None = None
    recipient: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def text(self) -> str:
        """The message as plain text, as it is shown to a person."""
        raise NotImplementedError

    def _repr_markdown_(self) -> str:
        from lion_nb.render.text import message_markdown

        return message_markdown(self)

    def _repr_html_(self) -> str:
        from lion_nb.render.html import message_html

        return message_html(self)


class System(RoledMessage):
    role: Literal["system"] = "system"
    system: str

    @property
    def text(self) -> str:
        return self.system


class Instruction(RoledMessage):
    """What the user asked. ``context`` is a list of JSON values shown to the model as context."""

    role: Literal["user"] = "user"
    instruction: JsonValue = None
    guidance: JsonValue = None
    context: list[JsonValue] = Field(default_factory=list)
    plain_content: str | None = None
    request_fields: dict[str, Any] | None = None
    response_schema: dict[str, Any] | None = None
    images: list[str] = Field(default_factory=list)
    image_detail: Literal["low", "high", "auto"] | None = None

    @property
    def text(self) -> str:
        """The exact text the model receives for this instruction."""
        if self.plain_content is not None:
            return self.plain_content
        parts: list[str] = []
        if self.instruction not in (None, ""):
            parts.append(_as_text(self.instruction))
        if self.guidance not in (None, ""):
            parts.append("Guidance: " + _as_text(self.guidance))
        if self.context:
            ctx = "\n".join(f"- {_as_text(c)}" for c in self.context)
            parts.append("Context:\n" + ctx)
        if self.response_schema is not None:
            parts.append(
                "Respond with only a JSON object matching this JSON schema:\n"
                + json.dumps(self.response_schema, separators=(",", ":"))
            )
        elif self.request_fields:
            fields = json.dumps(self.request_fields, separators=(",", ":"), default=str)
            parts.append("Respond with only a JSON object with these fields:\n" + fields)
        return "\n\n".join(parts)


class AssistantResponse(RoledMessage):
    """What the model said. ``metadata`` may hold ``usage``, ``thinking``, ``model``, ``result``."""

    role: Literal["assistant"] = "assistant"
    response: str = ""

    @property
    def text(self) -> str:
        return self.response

    @property
    def usage(self) -> dict[str, Any]:
        return dict(self.metadata.get("usage") or {})


class ActionRequest(RoledMessage):
    """A tool call. ``call_id`` is the provider's id (stable across request/response)."""

    role: Literal["action_request"] = "action_request"
    function: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    call_id: str | None = None
    action_response_id: uuid.UUID | None = None

    @property
    def text(self) -> str:
        return f"{self.function}({json.dumps(self.arguments, default=str)})"


class ActionResponse(RoledMessage):
    """The result of a tool call; ``is_error`` marks failed calls (output holds the error text)."""

    role: Literal["action_response"] = "action_response"
    function: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    output: JsonValue = None
    is_error: bool = False
    call_id: str | None = None
    action_request_id: uuid.UUID | None = None

    @property
    def text(self) -> str:
        return _as_text(self.output)


AnyMessage = Annotated[
    System | Instruction | AssistantResponse | ActionRequest | ActionResponse,
    Field(discriminator="role"),
]
MESSAGE = TypeAdapter(AnyMessage)
MESSAGE_LIST = TypeAdapter(list[AnyMessage])


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


class Progression:
    """An ordered sequence of message ids (the order a conversation is read in)."""

    __slots__ = ("_order",)

    def __init__(self, ids: Iterable[uuid.UUID] = ()) -> None:
        self._order: list[uuid.UUID] = list(ids)

    def append(self, message_id: uuid.UUID) -> None:
        self._order.append(message_id)

    def insert(self, index: int, message_id: uuid.UUID) -> None:
        self._order.insert(index, message_id)

    def remove(self, message_id: uuid.UUID) -> None:
        self._order.remove(message_id)

    def clear(self) -> None:
        self._order.clear()

    def index(self, message_id: uuid.UUID) -> int:
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
        self._by_id: dict[uuid.UUID, RoledMessage] = {}
        self.progression = Progression()

    def _append(self, message: RoledMessage) -> None:
        if message.id in self._by_id:
            raise ValueError(f"message {message.id} is already recorded")
        self._by_id[message.id] = message
        self.progression.append(message.id)

    def _clear(self, keep_system: bool = True) -> None:
        system = self.system if keep_system else None
        self._by_id.clear()
        self.progression.clear()
        if system is not None:
            self._append(system)

    @property
    def system(self) -> System | None:
        if self.progression:
            first = self._by_id[self.progression[0]]
            if isinstance(first, System):
                return first
        return None

    def get(self, message_id: uuid.UUID) -> RoledMessage | None:
        return self._by_id.get(message_id)

    def __iter__(self) -> Iterator[RoledMessage]:
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
        if isinstance(item, RoledMessage):
            return item.id in self._by_id
        return item in self._by_id

    def __repr__(self) -> str:
        return f"Messages({len(self)})"
