"""Token estimates for when no tokenizer is available offline (labelled as estimates), and
``NextTurn``: what the next turn of a branch sends, as data for the renderers (computed by
``operations.window.next_turn``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


def estimate_tokens(texts: Iterable[str]) -> int:
    """About 4 characters per token for English text: a labelled estimate, never exact."""
    return sum((len(t) + 3) // 4 for t in texts)


@dataclass(frozen=True, slots=True)
class NextTurn:
    """What the next turn of a branch sends (the inspector's header)."""

    messages: int  # chat-completions messages the next request would carry
    tokens: int
    exact: bool  # counted by the provider's tokenizer, not estimated
    window: int | None
    cli: bool
    recorded: int = 0  # branch messages they are compiled from (tool calls merge into turns)

    @property
    def fraction(self) -> float | None:
        return self.tokens / self.window if self.window else None
