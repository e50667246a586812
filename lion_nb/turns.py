"""What a branch's recorded messages say about its turns, read from the messages alone, so
code, the live views and the static HTML of a saved notebook agree:

* a reply cut off by the token limit (``finish_reason == "length"``) and whether it was
  continued (the continuation's instruction has ``metadata["continues"]`` = the reply's id);
* where the last request was cut to fit the context window (the recorded instruction's
  ``metadata["context_fit"]``, written by ``operations.window``);
* a reply that was stopped (``metadata["stopped"]``).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CONTINUE_PROMPT",
    "ContextCut",
    "continuations",
    "is_truncated",
    "last_cut",
    "open_truncated",
]

CONTINUE_PROMPT = "Continue exactly where your last reply stopped, without repeating it."


def is_truncated(message: Any) -> bool:
    """A reply that ended because of the token limit."""
    return getattr(message, "role", None) == "assistant" and (
        message.metadata.get("finish_reason") == "length"
    )


def continuations(messages: Sequence[Any]) -> dict[str, uuid.UUID]:
    """Reply id -> the id of the instruction that continues it."""
    found: dict[str, uuid.UUID] = {}
    for message in messages:
        if getattr(message, "role", None) == "user":
            target = message.metadata.get("continues")
            if isinstance(target, str) and target not in found:
                found[target] = message.id
    return found


def open_truncated(messages: Sequence[Any]) -> list[uuid.UUID]:
    """The truncated replies not continued yet (each offers Continue, once)."""
    continued = continuations(messages)
    return [m.id for m in messages if is_truncated(m) and str(m.id) not in continued]


@dataclass(frozen=True, slots=True)
class ContextCut:
    """The last request left out ``omitted`` messages; ``before`` is the id of the first
    message it sent after the system message (the notice goes before it; None: only the new
    instruction was sent, so the notice goes before that instruction, ``instruction``)."""

    omitted: int
    before: uuid.UUID | None
    instruction: uuid.UUID
    tokens: int | None = None
    window: int | None = None


def last_cut(messages: Sequence[Any]) -> ContextCut | None:
    """The cut of the last request sent, when it was cut to fit the window."""
    ins = next((m for m in reversed(messages) if getattr(m, "role", None) == "user"), None)
    fit = ins.metadata.get("context_fit") if ins is not None else None
    if ins is None or not isinstance(fit, dict) or not fit.get("omitted"):
        return None
    ids = {str(m.id): m.id for m in messages}
    first = fit.get("first_sent")
    return ContextCut(
        omitted=len(fit["omitted"]),
        before=ids.get(first) if isinstance(first, str) else None,
        instruction=ins.id,
        tokens=fit.get("tokens"),
        window=fit.get("window"),
    )
