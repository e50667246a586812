"""The progression inspector's view model: which messages it lists (a role filter), the page
it shows and the rows it expanded, the timeline rows of a page, and whole-branch totals. Pure
functions of a branch and its provenance table; ``render.timeline`` draws them and
``widgets.inspector`` maps them to widgets.

Everything is computed per visible page, so a 10,000-message branch costs a page of work to
open; only whole-branch totals walk every message, and they are kept up to date incrementally.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lion_nb.messages import AssistantResponse, RoledMessage
from lion_nb.provenance import Provenance, RunRecord

if TYPE_CHECKING:
    from lion_nb.session.branch import Branch

__all__ = [
    "ROLE_FILTERS",
    "TimelineModel",
    "TimelineRow",
    "TotalsCache",
    "branch_totals",
    "messages_before_runs",
    "page_bounds",
    "page_count",
    "run_usage",
    "timeline_rows",
]

ROLE_FILTERS: dict[str, tuple[str, ...] | None] = {
    "all": None,
    "user": ("user",),
    "assistant": ("assistant",),
    "actions": ("action_request", "action_response"),
    "system": ("system",),
}


# ----- paging ----------------------------------------------------------------------------------
def page_count(total: int, page_size: int) -> int:
    return max(1, -(-total // page_size))


def page_bounds(page: int, page_size: int, total: int) -> tuple[int, int]:
    """``[start, stop)`` of ``page`` (clamped to the last page)."""
    page = min(max(0, page), page_count(total, page_size) - 1)
    start = page * page_size
    return start, min(total, start + page_size)


# ----- rows ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class TimelineRow:
    index: int
    message: RoledMessage
    run: RunRecord | None
    cell: int | None
    new_run: bool  # the first row of its run on this page (a run header is shown above it)

    @property
    def usage(self) -> dict[str, Any]:
        if isinstance(self.message, AssistantResponse):
            return self.message.usage
        return {}


def timeline_rows(
    messages: Sequence[RoledMessage] | Any,
    indices: Sequence[int],
    provenance: Provenance | None = None,
) -> list[TimelineRow]:
    """Rows for the messages at ``indices`` only (the visible page: a ``range``, or the
    positions a filter kept)."""
    rows = []
    prev_run = None
    prev_index = None
    for index in indices:
        message = messages[index]
        run = provenance.run_for(message.id) if provenance is not None else None
        if provenance is not None and prev_index != index - 1 and index > 0:
            prev = provenance.run_for(messages[index - 1].id)
            prev_run = prev.run_id if prev else None
        run_id = run.run_id if run else None
        rows.append(
            TimelineRow(
                index=index,
                message=message,
                run=run,
                cell=provenance.cell_for(message.id) if provenance is not None else None,
                new_run=run_id is not None and run_id != prev_run,
            )
        )
        prev_run, prev_index = run_id, index
    return rows


def run_usage(run: RunRecord) -> dict[str, Any]:
    return {
        k: v
        for k in ("input_tokens", "output_tokens", "total_cost_usd")
        if (v := getattr(run, k)) is not None
    }


def messages_before_runs(
    messages: Sequence[RoledMessage] | Any, provenance: Provenance | None
) -> int:
    """Messages (the system message aside) recorded before the first one an observed run
    recorded: a branch whose runs happened before its provenance table was attached (before
    the inspector opened) has these, and no runs listed for them."""
    run_of = provenance.run_of if provenance is not None else {}
    count = 0
    for msg in messages:
        if str(msg.id) in run_of:
            break
        if msg.role != "system":
            count += 1
    return count


# ----- whole-branch summary --------------------------------------------------------------------
def branch_totals(
    messages: Sequence[RoledMessage] | Any, base: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Counts per role and summed usage, added onto ``base`` (totals of earlier messages);
    ``unpriced``: replies with tokens but no known cost (the summed cost leaves them out)."""
    roles: dict[str, int] = dict(base["roles"]) if base else {}
    usage: dict[str, Any] = dict(base["usage"]) if base else {}
    unpriced: int = base.get("unpriced", 0) if base else 0
    for msg in messages:
        roles[msg.role] = roles.get(msg.role, 0) + 1
        if msg.role == "assistant":
            reported = msg.metadata.get("usage") or {}
            for key, value in reported.items():
                if isinstance(value, int | float) and not isinstance(value, bool):
                    usage[key] = usage.get(key, 0) + value
            if reported.get("total_cost_usd") is None and (
                reported.get("input_tokens") is not None
                or reported.get("output_tokens") is not None
            ):
                unpriced += 1
    return {"roles": roles, "usage": usage, "unpriced": unpriced}


class TotalsCache:
    """``branch_totals`` kept up to date by adding only the messages recorded since the last
    call (a live branch grows at its end); recomputed whole if the history changed."""

    __slots__ = ("_count", "_last", "_totals")

    def __init__(self) -> None:
        self._count = 0
        self._last: Any = None
        self._totals: dict[str, Any] = {"roles": {}, "usage": {}, "unpriced": 0}

    def get(self, messages: Sequence[RoledMessage] | Any) -> dict[str, Any]:
        n = len(messages)
        order = messages.progression if hasattr(messages, "progression") else None
        grew = 0 < self._count <= n and order is not None and order[self._count - 1] == self._last
        if grew:
            self._totals = branch_totals(messages[self._count : n], self._totals)
        elif order is not None or n != self._count or self._count == 0:
            # a branch whose end is not the one counted: its history changed (a message
            # retracted and another added keeps the count), so count afresh
            self._totals = branch_totals(messages)
        self._count = n
        self._last = order[n - 1] if order is not None and n else None
        return self._totals


# ----- what the inspector shows ------------------------------------------------------------------
class TimelineModel:
    """The messages of ``branch`` an inspector lists (``filter``: one of ``ROLE_FILTERS``), the
    window of ``page_size`` of them it shows from position ``start``, and the ``expanded``
    rows. It opens on the newest messages and follows new ones while it shows the end
    (``follow``)."""

    def __init__(self, branch: Branch, *, page_size: int = 50, follow: bool = True) -> None:
        if page_size < 1:
            raise ValueError("page_size must be at least 1")
        self.branch = branch
        self.page_size = page_size
        self.follow = follow
        self.filter = "all"
        self.expanded: set[int] = set()
        self.indices: Sequence[int] = range(len(branch.messages))  # the filter's positions
        self.start = self.end_start()  # position (in the filtered list) of the first row
        self._untracked: tuple[tuple[int, int], int] = ((-1, -1), 0)

    @property
    def total(self) -> int:
        """Messages the timeline lists (all of them, or those the role filter keeps)."""
        return len(self.indices)

    @property
    def pages(self) -> int:
        return page_count(self.total, self.page_size)

    @property
    def page(self) -> int:
        """The page number of the first visible row (0-based)."""
        return self.start // self.page_size

    @property
    def at_end(self) -> bool:
        return self.start >= self.end_start()

    def end_start(self) -> int:
        return max(0, self.total - self.page_size)

    def visible_indices(self) -> Sequence[int]:
        return self.indices[self.start : self.start + self.page_size]

    def show_start(self, start: int) -> bool:
        """Show ``page_size`` rows from position ``start`` (clamped to the last full window);
        returns whether the window moved."""
        start = min(max(0, start), self.end_start())
        moved = start != self.start
        self.start = start
        return moved

    def go_to(self, index: int) -> None:
        """Show the page holding message ``index`` (a progression position), expanded. The
        caller clears a filter that hides it first (``hides``)."""
        if not 0 <= index < len(self.branch.messages):
            raise IndexError(f"no message #{index} (the branch has {len(self.branch.messages)})")
        position = self.indices.index(index)
        self.expanded.add(index)
        self.start = min((position // self.page_size) * self.page_size, self.end_start())

    def hides(self, index: int) -> bool:
        return index not in self.indices

    def set_filter(self, name: str) -> None:
        """List only some roles, from the end (``follow``) or the start."""
        if name not in ROLE_FILTERS:
            raise ValueError(f"unknown filter {name!r}; use one of {', '.join(ROLE_FILTERS)}")
        self.filter = name
        roles = ROLE_FILTERS[name]
        messages = self.branch.messages
        if roles is None:
            self.indices = range(len(messages))
        else:
            self.indices = [i for i, m in enumerate(messages) if m.role in roles]
        self.start = self.end_start() if self.follow else 0

    def toggle(self, index: int) -> None:
        if index in self.expanded:
            self.expanded.discard(index)
        else:
            self.expanded.add(index)

    def grew(self) -> None:
        """Messages were recorded at the end: list them; a view at the end follows them."""
        was_at_end = self.at_end
        roles = ROLE_FILTERS[self.filter]
        msgs = self.branch.messages
        if roles is None:
            self.indices = range(len(msgs))
        else:  # only the new messages need a look
            known = self.indices[-1] + 1 if self.indices else 0
            self.indices = [
                *self.indices,
                *(i for i in range(known, len(msgs)) if msgs[i].role in roles),
            ]
        if self.follow and was_at_end:
            self.start = self.end_start()

    def position_text(self) -> str:
        """Where the window is: "51–100 of 1,234 (user) · page 2/25" or "… · latest"."""
        if not self.total:
            return "no messages"
        stop = min(self.total, self.start + self.page_size)
        text = f"{self.start + 1:,}–{stop:,} of {self.total:,}"
        text += "" if self.filter == "all" else f" ({self.filter})"
        return text + (" · latest" if self.at_end else f" · page {self.page + 1:,}/{self.pages:,}")

    def untracked(self, provenance: Provenance | None) -> int:
        """``messages_before_runs`` of the branch, recomputed only when it or the run table
        grew."""
        key = (len(self.branch.messages), len(provenance.run_of) if provenance else 0)
        if key != self._untracked[0]:
            self._untracked = (key, messages_before_runs(self.branch.messages, provenance))
        return self._untracked[1]

    def static_bounds(self) -> tuple[int, int]:
        """The messages a saved notebook shows: the visible ones, or the newest ``page_size``
        when a filter is on or the view shows the end."""
        total = len(self.branch.messages)
        if self.filter != "all" or self.at_end:
            return max(0, total - self.page_size), total
        return self.start, min(total, self.start + self.page_size)
