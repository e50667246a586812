"""Samples: ``n`` replies to the same turn and where they agree (``Samples``, ``agreement``).

``Conversation.asample`` and the chat view's Sample ×n build a ``Samples``; the views draw it
(``lion_nb.render.tokens_html.samples_html``, through ``_repr_html_``). Replies are compared by
their tokens when they were recorded with ``logprobs=K``, else by their words. Also importable
from ``lion_nb.tokens``, where these names lived first.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Samples", "agreement", "sampling_label", "shared_units"]


def _units(reply: Any) -> list[str]:
    """A reply as the units compared: its token texts, else its words."""
    tokens = getattr(reply, "tokens", None)
    if tokens:
        return [t.text for t in tokens]
    text = reply if isinstance(reply, str) else getattr(reply, "text", str(reply))
    return re.findall(r"\S+\s*|\s+", text)


def agreement(replies: Sequence[Any]) -> list[float]:
    """Per position, the share of ``replies`` that agree with each other up to and including
    it: position ``i`` is the size of the largest group of replies sharing the same first
    ``i + 1`` units (tokens when they have them, else words) divided by the number of replies.
    1.0 while all agree; it falls where they diverge and never rises again. Positions run to
    the end of the longest reply."""
    seqs = [_units(r) for r in replies]
    n = len(seqs)
    if n == 0:
        return []
    longest = max(len(s) for s in seqs)
    out: list[float] = []
    groups: list[list[int]] = [list(range(n))]
    for i in range(longest):
        split: list[list[int]] = []
        for group in groups:
            by_unit: dict[str, list[int]] = {}
            for j in group:
                if i < len(seqs[j]):
                    by_unit.setdefault(seqs[j][i], []).append(j)
            split.extend(by_unit.values())
        groups = split
        out.append(max((len(g) for g in groups), default=0) / n)
    return out


def shared_units(replies: Sequence[Any]) -> int:
    """How many leading units (tokens, else words) all ``replies`` share."""
    return sum(1 for a in agreement(replies) if a >= 1.0)


@dataclass
class Samples:
    """``n`` replies to the same turn, sampled concurrently as forks (``Conversation.asample``,
    ``view.asample``): where they agree and where they diverge.

    ``branches[i]`` holds ``replies[i]`` (its last message); ``temperature`` and ``top_p`` are
    what the set was sampled with (None: the model's default). ``agreement`` is per position
    (``agreement`` here): 1.0 over the prefix all share, then the share of replies
    that still agree, counted over the replies received. ``errors``: why each sample that
    failed failed, in the order they were asked (their forks are gone, nothing of them is
    recorded); ``asked``: how many were asked for. A failed sample is never an empty reply:
    ``failure_note()`` (and every rendering) says "2 of 5 failed: ..."."""

    branches: list[Any]
    replies: list[Any]
    temperature: float | None = None
    top_p: float | None = None
    errors: list[BaseException] = field(default_factory=list)
    asked: int | None = None  # None: the replies and the failures together

    @property
    def failed(self) -> int:
        """How many samples failed (``errors`` says why)."""
        return len(self.errors)

    @property
    def total(self) -> int:
        """How many samples were asked for."""
        return self.asked if self.asked is not None else len(self.replies) + len(self.errors)

    def failure_note(self) -> str:
        """``"2 of 5 failed: ConnectionLost: ... (×2)"``: each distinct reason once, with how
        many samples it ended; ``""`` when none failed."""
        if not self.errors:
            return ""
        reasons: dict[str, int] = {}
        for error in self.errors:
            reason = f"{type(error).__name__}: {error}".rstrip(": ")
            reasons[reason] = reasons.get(reason, 0) + 1
        why = "; ".join(f"{r} (×{k})" if k > 1 else r for r, k in reasons.items())
        return f"{self.failed} of {self.total} failed: {why}"

    @property
    def agreement(self) -> list[float]:
        """Per position, the share of replies that still agree (1.0 over the shared prefix)."""
        return agreement(self.replies)

    @property
    def texts(self) -> list[str]:
        """Each reply's text, in the order of ``replies``."""
        return [getattr(r, "text", "") for r in self.replies]

    @property
    def shared(self) -> int:
        """How many leading tokens (words, for replies without tokens) every sample shares."""
        return shared_units(self.replies)

    @property
    def shared_prefix(self) -> str:
        """The text every sample starts with, as far as their units agree."""
        units = _units(self.replies[0]) if self.replies else []
        return "".join(units[: self.shared])

    @property
    def diverges_at(self) -> int | None:
        """The first position where the samples disagree (None: all the same)."""
        n = self.shared
        return None if all(len(_units(r)) == n for r in self.replies) else n

    def count_label(self) -> str:
        """``"3 samples"`` (``"1 sample"``): the replies received."""
        return f"{len(self.replies)} sample{'' if len(self.replies) == 1 else 's'}"

    def label(self) -> str:
        """``"temperature 0.8 · top-p 0.95"`` (what the view's labels say)."""
        return sampling_label(self.temperature, self.top_p)

    def __len__(self) -> int:
        return len(self.replies)

    def _repr_html_(self) -> str:
        from lion_nb.render.tokens_html import samples_html

        return samples_html(self)

    def __str__(self) -> str:
        """The set as text: its heading, each reply received, and what failed."""
        head = f"{self.count_label()} · {self.label()} · {self.shared} shared"
        lines = [head, *(f"{i}. {text}" for i, text in enumerate(self.texts, 1))]
        return "\n".join([*lines, self.failure_note()] if self.errors else lines)

    def __rich__(self) -> Any:
        from rich.text import Text

        return Text(str(self))

    def __repr__(self) -> str:
        failed = f"; {self.failed} of {self.total} failed" if self.errors else ""
        return f"<Samples {len(self.replies)} × {self.label()}: shared {self.shared} units{failed}>"


def sampling_label(temperature: float | None, top_p: float | None) -> str:
    """How a sample set is labelled: its temperature and top-p (or "default")."""
    t = "default" if temperature is None else f"{temperature:g}"
    label = f"temperature {t}"
    return label if top_p is None else f"{label} · top-p {top_p:g}"
