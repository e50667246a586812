"""Two branches side by side, as data: the shared history once, then their turns aligned.

The shared prefix comes from fork lineage (``metadata["forked_from"]``: a fork holds the very
same message values as its origin up to the fork point) and is checked message by message; two
unrelated branches share the prefix of identical messages. After it, turns are paired in order
and classified: ``same`` (identical content), ``changed`` (both sides, different), ``added`` /
``missing`` (only one side has it). Per side: tokens (reported usage, and an estimate), and
latency (run durations when the runs were observed, else each reply's measured request time,
else the time from each request to its reply, from the messages' timestamps). ``render.compare`` draws it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import zip_longest
from typing import TYPE_CHECKING, Any

from lion_nb.messages import AssistantResponse, RoledMessage
from lion_nb.tokens import estimate_tokens

if TYPE_CHECKING:
    from lion_nb.provenance import Provenance
    from lion_nb.session.branch import Branch

__all__ = ["Alignment", "SideStats", "align", "message_content", "shared_prefix", "side_stats"]


def message_content(message: RoledMessage) -> tuple[str, str]:
    """``(role, text)``: what two turns are compared on."""
    try:
        text = message.text
    except NotImplementedError:
        text = ""
    return str(message.role), str(text)


def shared_prefix(a: Branch, b: Branch) -> tuple[int, str]:
    """Length of the common history and how it was found ("fork", "identical", "none")."""
    ma, mb = a.messages, b.messages
    limit = min(len(ma), len(mb))
    n = 0
    while n < limit and ma.progression[n] == mb.progression[n]:
        n += 1  # a fork shares the very same message values (same ids)
    how = "identical" if n else "none"
    for x, y in ((a, b), (b, a)):
        origin = y.metadata.get("forked_from") or {}
        if origin.get("branch_id") == str(x.id):
            how = "fork"
            n = min(n, int(origin.get("index", -1)) + 1)
    while n < limit and how != "fork" and message_content(ma[n]) == message_content(mb[n]):
        n += 1  # unrelated branches that start with the same conversation
        how = "identical"
    return n, how


@dataclass(slots=True)
class Alignment:
    prefix: list[RoledMessage]
    rows: list[tuple[RoledMessage | None, RoledMessage | None, str]]
    lineage: str  # fork | identical | none

    @property
    def differing(self) -> int:
        return sum(1 for _, _, kind in self.rows if kind != "same")


def align(a: Branch, b: Branch) -> Alignment:
    n, how = shared_prefix(a, b)
    rows: list[tuple[RoledMessage | None, RoledMessage | None, str]] = []
    for x, y in zip_longest(a.messages[n:], b.messages[n:]):
        if x is None:
            kind = "added"
        elif y is None:
            kind = "missing"
        else:
            kind = "same" if x.id == y.id or message_content(x) == message_content(y) else "changed"
        rows.append((x, y, kind))
    return Alignment(prefix=a.messages[:n], rows=rows, lineage=how)


@dataclass(slots=True)
class SideStats:
    messages: int = 0
    usage: dict[str, Any] = field(default_factory=dict)
    estimated_tokens: int = 0
    latency_ms: float = 0.0
    latency_source: str = "timestamps"  # "runs" when observed run durations were used
    turns: int = 0


def side_stats(
    messages: list[RoledMessage],
    all_messages: list[RoledMessage] | Any = None,
    provenance: Provenance | None = None,
) -> SideStats:
    """Totals for one side's own (non-shared) messages."""
    stats = SideStats(messages=len(messages))
    texts = []
    for m in messages:
        texts.append(message_content(m)[1])
        if isinstance(m, AssistantResponse):
            stats.turns += 1
            for key, value in m.usage.items():
                if isinstance(value, int | float) and not isinstance(value, bool):
                    stats.usage[key] = stats.usage.get(key, 0) + value
    stats.estimated_tokens = estimate_tokens(texts)
    ids = {str(m.id) for m in messages}
    if provenance is not None:
        runs = [
            r
            for r in provenance.runs
            if r.duration_ms is not None and any(mid in ids for mid in r.message_ids)
        ]
        if runs:
            stats.latency_ms = sum(r.duration_ms or 0.0 for r in runs)
            stats.latency_source = "runs"
            return stats
    # each reply's own request time (``metadata["latency_ms"]``, measured by the call); else
    # request -> reply from timestamps: a reply is created when the model finished, the
    # instruction (or tool result) before it when the request was built — which overstates a
    # regenerated reply, whose instruction is the one recorded long before
    history = list(all_messages) if all_messages is not None else messages
    position = {m.id: i for i, m in enumerate(history)}
    measured = 0
    for m in messages:
        i = position.get(m.id)
        if not isinstance(m, AssistantResponse):
            continue
        took = m.metadata.get("latency_ms")
        if isinstance(took, int | float) and not isinstance(took, bool):
            stats.latency_ms += float(took)
            measured += 1
        elif i:
            delta = (m.created_at - history[i - 1].created_at).total_seconds() * 1000.0
            stats.latency_ms += max(0.0, delta)
    if measured and measured == stats.turns:
        stats.latency_source = "requests"
    return stats
