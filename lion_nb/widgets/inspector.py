"""``ProgressionInspector``: a navigable, collapsible, paginated timeline of a branch.

    inspector = ProgressionInspector(branch)      # or lion_nb.widgets.inspector.inspect(branch)
    inspector

Each row is one message (index, role, preview, usage, run, notebook cell, time); expanding it
shows the card, what the model saw for that turn (the compiled request, as JSON) and the
message's provenance; "Fork here" forks the branch at that message and shows the fork. The
header sums the branch and says what the next turn will send, in tokens against the model's
context window (exact with an offline tokenizer, otherwise a labelled estimate).

Only the visible page has widgets: ``page_size`` rows are built once and re-filled when the
page changes, so a 10,000-message branch opens as fast as a 50-message one. Which messages,
which page and which rows are expanded is ``viewmodels.timeline.TimelineModel``; what the next
turn sends is ``operations.window.next_turn``; all HTML comes from ``lion_nb.render.timeline``,
``render.turns`` and ``render.chrome`` (pure functions, tested without a kernel).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import ipywidgets

from lion_nb.operations import window as nt
from lion_nb.provenance import provenance_of
from lion_nb.render import timeline as tl
from lion_nb.render import turns
from lion_nb.render.chrome import forked_html, next_turn_pending_html
from lion_nb.render.text import transcript_plain
from lion_nb.signals import MessageAdded, MessageRetracted, RunEnd, RunFailed, RunStart, Signal
from lion_nb.tokens import NextTurn
from lion_nb.viewmodels.timeline import ROLE_FILTERS, TimelineModel, TotalsCache, timeline_rows
from lion_nb.widgets.inspector_parts import Chrome, Pager, Row, fork_panel
from lion_nb.widgets.viewbase import StaticFallback, Throttle

if TYPE_CHECKING:
    from lion_nb.session.branch import Branch

__all__ = ["ROLE_FILTERS", "ProgressionInspector", "inspect"]


class ProgressionInspector(StaticFallback, ipywidgets.VBox):
    """The timeline of ``branch``, ``page_size`` rows at a time. It opens on the newest
    messages and follows new ones while it shows the end (``follow``); paging back keeps the
    rows still as messages arrive. ``on_fork(fork)`` replaces the default of showing a fork
    panel (chat view + compare button) under the timeline."""

    def __init__(
        self,
        branch: Branch,
        *,
        page_size: int = 50,
        title: str | None = None,
        follow: bool = True,
        on_fork: Callable[[Branch], Any] | None = None,
        refresh_interval: float = 0.25,
    ) -> None:
        self.timeline = TimelineModel(branch, page_size=page_size, follow=follow)
        self.branch = branch
        self.title = title or branch.name or f"Branch {str(branch.id)[:8]}"
        self.on_fork = on_fork
        self.provenance = provenance_of(branch)
        self.forks: list[Branch] = []
        self.closed = False
        self._turn: NextTurn | None = None
        self._turn_pending = False
        self._pending_messages = False
        self._totals = TotalsCache()
        w = ipywidgets
        self._chrome = chrome = Chrome()
        self._rows: list[Row] = []
        self._style = chrome.html(self.style_html())
        self._header = chrome.html("")
        self._next = chrome.html("")
        self._runs = chrome.html("")
        self._runs_box = w.Accordion(children=(self._runs,), selected_index=None)
        self._runs_box.set_title(0, "Runs")
        self.pager = pager = Pager(chrome, ROLE_FILTERS)
        pager.first.on_click(lambda _b: self.show_start(0))
        pager.prev.on_click(lambda _b: self.show_start(self.start - self.page_size))
        pager.next.on_click(lambda _b: self.show_start(self.start + self.page_size))
        pager.last.on_click(lambda _b: self.show_end())
        pager.go.on_click(lambda _b: self.go_to(pager.goto.value))
        pager.filter.observe(lambda ch: self._apply_filter(ch["new"]), names="value")
        pager.collapse.on_click(lambda _b: self.collapse_all())
        self._rows_box = w.VBox(layout=w.Layout(width="100%"), _dom_classes=("lion-tl-rows",))
        self.status = chrome.html("")
        self._forks_box = w.VBox()
        super().__init__(
            children=(
                self._style,
                self._header,
                self._next,
                self._runs_box,
                pager.box,
                self._rows_box,
                self.status,
                self._forks_box,
            ),
            _dom_classes=("lion-view", "lion-inspector"),
        )
        self._refresh = Throttle(self._refresh_now, refresh_interval)
        self._unsubscribe = self._subscribe()
        self._refresh_header(next_turn=True)
        self._render_page()
        self._ready = True

    # ----- paging (the view model's state) ---------------------------------------------
    @property
    def page_size(self) -> int:
        return self.timeline.page_size

    @property
    def follow(self) -> bool:
        return self.timeline.follow

    @property
    def expanded(self) -> set[int]:
        return self.timeline.expanded

    @property
    def start(self) -> int:
        """Position (in the filtered list) of the first visible row."""
        return self.timeline.start

    @property
    def total(self) -> int:
        """Messages the timeline lists (all of them, or those the role filter keeps)."""
        return self.timeline.total

    @property
    def pages(self) -> int:
        return self.timeline.pages

    @property
    def page(self) -> int:
        """The page number of the first visible row (0-based)."""
        return self.timeline.page

    @property
    def at_end(self) -> bool:
        return self.timeline.at_end

    def visible_indices(self) -> Sequence[int]:
        return self.timeline.visible_indices()

    def show_start(self, start: int) -> None:
        """Show ``page_size`` rows from position ``start`` (clamped to the last full window)."""
        if self.timeline.show_start(start):
            self._render_page()

    def show_page(self, page: int) -> None:
        self.show_start(page * self.page_size)

    def show_end(self) -> None:
        """Show the newest messages (the view then follows new ones)."""
        self.show_start(self.timeline.end_start())

    def go_to(self, index: int) -> None:
        """Show the page holding message ``index`` (a progression position) and expand it."""
        if 0 <= index < len(self.branch.messages) and self.timeline.hides(index):
            self.set_filter("all")
        self.timeline.go_to(index)
        self._render_page()

    def set_filter(self, name: str) -> None:
        """Show only some roles: one of ``ROLE_FILTERS`` ("all", "user", "assistant",
        "actions", "system")."""
        if name not in ROLE_FILTERS:
            raise ValueError(f"unknown filter {name!r}; use one of {', '.join(ROLE_FILTERS)}")
        if self.pager.filter.value != name:
            self.pager.filter.value = name  # the dropdown's observer applies it
        else:
            self._apply_filter(name)

    def _apply_filter(self, name: str) -> None:
        self.timeline.set_filter(name)
        self._render_page()

    def toggle(self, index: int) -> None:
        self.timeline.toggle(index)
        self._render_page()

    def collapse_all(self) -> None:
        self.timeline.expanded.clear()
        self._render_page()

    # ----- forking -----------------------------------------------------------------------
    def fork(self, index: int, *, name: str | None = None) -> Branch:
        """Fork the branch at message ``index`` (kept in the branch's session, linked to its
        origin through ``metadata["forked_from"]``) and show it."""
        origin = self.branch
        forked = origin.fork(index, name=name or f"{origin.name or 'branch'} @{index}")
        self.forks.append(forked)
        provenance_of(forked)  # its runs are timed from the start (compare shows latency)
        self.status.value = forked_html(index, forked.name, len(forked.messages), forked.id)
        if self.on_fork is not None:
            self.on_fork(forked)
        else:
            panel = fork_panel(origin, forked, self._chrome)
            self._forks_box.children = (*self._forks_box.children, panel)
        return forked

    # ----- live --------------------------------------------------------------------------
    def _subscribe(self) -> Callable[[], None]:
        table = self.provenance
        assert table is not None
        table.add_listener(self._on_signal)  # after the table recorded the signal
        return lambda: table.remove_listener(self._on_signal)

    def _on_signal(self, signal: Signal) -> None:
        if self.closed:
            return
        if isinstance(signal, MessageAdded):
            self._pending_messages = True
            self._refresh.request()
        elif isinstance(signal, MessageRetracted):
            self.refresh()  # positions after it moved: recompute rather than patch
        elif isinstance(signal, RunStart | RunEnd | RunFailed):
            self._refresh.request()
            if not isinstance(signal, RunStart):
                self._refresh.flush()
                self._refresh_header(next_turn=True)
                self.refresh_static()

    def _refresh_now(self) -> None:
        if self.closed:
            return
        if self._pending_messages:
            self._pending_messages = False
            self.timeline.grew()
        self._refresh_header(next_turn=False)
        self._render_page()

    def refresh(self) -> None:
        """Recompute everything from the branch now (e.g. after ``clear_messages``)."""
        self._pending_messages = False
        self.set_filter(self.pager.filter.value)
        self._refresh_header(next_turn=True)

    # ----- rendering ---------------------------------------------------------------------
    def _refresh_header(self, *, next_turn: bool) -> None:
        messages = self.branch.messages
        runs = len(self.provenance.runs) if self.provenance else 0
        self._header.value = tl.header_html(
            self.title, len(messages), self._totals.get(messages), runs
        )
        if next_turn or self._turn is None:
            self._schedule_next_turn()
        untracked = self.timeline.untracked(self.provenance)
        self._runs.value = tl.runs_html(self.provenance, untracked=untracked)
        self._runs_box.set_title(0, tl.runs_title(runs, untracked))

    def _schedule_next_turn(self) -> None:
        """The next-turn estimate compiles every message (about 0.2 s for 10,000): in a
        kernel it runs just after the view is shown, so opening does not wait for it."""
        if self._turn_pending:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.update_next_turn()
            return
        self._turn_pending = True
        if self._turn is None:
            self._next.value = next_turn_pending_html()
        loop.call_soon(self.update_next_turn)

    def update_next_turn(self) -> NextTurn:
        """Compute what the next turn sends, now; returns it (also shown in the header)."""
        self._turn_pending = False
        if self.closed:
            return self._turn  # type: ignore[return-value]
        self._turn = nt.next_turn(self.branch.messages, self.branch.chat_model_or_none)
        self._next.value = turns.next_turn_html(self._turn)
        return self._turn

    def _render_page(self) -> None:
        messages = self.branch.messages
        rows = timeline_rows(messages, self.visible_indices(), self.provenance)
        while len(self._rows) < len(rows):
            self._rows.append(Row(self._chrome, self.toggle, self.fork))
        model = self.branch.chat_model_or_none
        cli = bool(model is not None and model.is_cli)
        children: list[Any] = []
        for widgets, row in zip(self._rows, rows, strict=False):
            detail = None
            if row.index in self.expanded:
                detail = tl.row_detail_html(row, messages, cli=cli)
            children.append(widgets.show(row.index, tl.row_summary_html(row), detail))
        if self._rows_box.children != tuple(children):
            self._rows_box.children = tuple(children)
        self.pager.update(
            self.timeline.position_text(),
            at_start=self.start == 0,
            at_end=self.at_end,
            last_index=len(messages) - 1,
        )

    def rows_html(self) -> list[str]:
        """The summary HTML of the visible rows, in order (tests and debugging)."""
        return [r.summary.value for r in self._rows[: len(self.visible_indices())]]

    def detail_html(self, index: int) -> str:
        """The expanded HTML of message ``index`` (whether or not it is expanded)."""
        row = timeline_rows(self.branch.messages, [index], self.provenance)[0]
        model = self.branch.chat_model_or_none
        cli = bool(model is not None and model.is_cli)
        return tl.row_detail_html(row, self.branch.messages, cli=cli)

    # ----- static fallback ---------------------------------------------------------------
    def _static_bounds(self) -> tuple[int, int]:
        return self.timeline.static_bounds()

    def static_html(self) -> str:
        start, stop = self._static_bounds()
        return tl.static_html(
            self.title,
            self.branch.messages,
            start,
            stop,
            self.provenance,
            self._turn,
            self._totals.get(self.branch.messages),
            untracked=self.timeline.untracked(self.provenance),
        )

    def static_text(self) -> str:
        messages = self.branch.messages
        start, stop = self._static_bounds()
        head = f"{self.title}: {len(messages):,} messages"
        if stop - start < len(messages):
            head += f" (#{start}–#{stop - 1} shown)"
        return head + "\n\n" + transcript_plain(messages[start:stop])

    def _release(self) -> None:
        self._unsubscribe()
        self._refresh.cancel()
        for row in self._rows:
            row.close()
        self.pager.close()

    def _owned_widgets(self) -> Iterable[Any]:
        return (
            self._style,
            self._header,
            self._next,
            self._runs,
            self._runs_box,
            self._rows_box,
            self.status,
            self._forks_box,
            *self._chrome.widgets(),
        )

    def __repr__(self) -> str:
        return f"<ProgressionInspector of {self.branch!r} rows from #{self.start}>"


def inspect(branch: Branch, **kwargs: Any) -> ProgressionInspector:
    """``ProgressionInspector(branch, **kwargs)``."""
    return ProgressionInspector(branch, **kwargs)
