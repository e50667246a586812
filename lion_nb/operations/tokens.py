"""Token estimates for when no tokenizer is available offline (labelled as estimates)."""

from __future__ import annotations

from collections.abc import Iterable


def estimate_tokens(texts: Iterable[str]) -> int:
    """About 4 characters per token for English text: a labelled estimate, never exact."""
    return sum((len(t) + 3) // 4 for t in texts)
