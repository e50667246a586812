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
import math
import uuid
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

from lion_nb.progression import Messages, Progression

# MESSAGE and MESSAGE_LIST (TypeAdapters) are importable too; they are built on first use.
__all__ = [
    "ActionRequest",
    "ActionResponse",
    "AnyMessage",
    "AssistantResponse",
    "Instruction",
    "Messages",
    "Progression",
    "RoledMessage",
    "System",
    "TokenChoice",
]

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
    """The system message: how the model should behave. A branch holds at most one, first."""

    role: Literal["system"] = "system"
    system: str

    @property
    def text(self) -> str:
        """The system prompt."""
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


class TokenChoice(BaseModel):
    """One token of a reply as the model chose it: its ``text``, its ``logprob`` (natural log
    of its probability, <= 0) and ``top``, the most likely tokens at that position as ``(text,
    logprob)`` pairs, most likely first (empty when no alternatives were asked for)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    logprob: float = Field(le=0.0, allow_inf_nan=False)
    top: list[tuple[str, float]] = Field(default_factory=list)

    @property
    def p(self) -> float:
        """The token's probability (``exp(logprob)``)."""
        return math.exp(self.logprob)


def _no_tokens(value: Any) -> bool:
    return value is None


class AssistantResponse(RoledMessage):
    """What the model said. ``metadata`` may hold ``usage``, ``thinking``, ``model``, ``result``.

    ``tokens``: the reply token by token (``TokenChoice``; their texts join to ``response``)
    when log-probabilities were asked for (``iModel(..., logprobs=K)``), else None (and absent
    from the JSON form)."""

    role: Literal["assistant"] = "assistant"
    response: str = ""
    tokens: list[TokenChoice] | None = Field(default=None, exclude_if=_no_tokens)

    @model_validator(mode="after")
    def _tokens_join_to_response(self) -> AssistantResponse:
        if self.tokens is not None and "".join(t.text for t in self.tokens) != self.response:
            raise ValueError("the texts of 'tokens' do not join to the response text")
        return self

    @property
    def text(self) -> str:
        """The reply's text (``response``)."""
        return self.response

    @property
    def usage(self) -> dict[str, Any]:
        """The call's token usage as ``Usage.as_dict`` gives it (``{}`` when none was reported)."""
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
        """The call as one line: ``function({"arg": value})``."""
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
        """The tool's output as text (JSON for structured output; the error text on error)."""
        return _as_text(self.output)


AnyMessage = Annotated[
    System | Instruction | AssistantResponse | ActionRequest | ActionResponse,
    Field(discriminator="role"),
]
_ADAPTERS: dict[str, TypeAdapter[Any]] = {}


def __getattr__(name: str) -> Any:
    """``MESSAGE`` / ``MESSAGE_LIST`` TypeAdapters, built on first use (they cost import time)."""
    if name not in ("MESSAGE", "MESSAGE_LIST"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name not in _ADAPTERS:
        _ADAPTERS[name] = TypeAdapter(AnyMessage if name == "MESSAGE" else list[AnyMessage])
    return _ADAPTERS[name]


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)
