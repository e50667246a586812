"""``ProgressionInspector``: a navigable, collapsible, paginated timeline of a branch.

    inspector = ProgressionInspector(branch)      # or lion_nb.widgets.inspector.inspect(branch)
    inspector

Each row is one message (index, role, preview, usage, run, notebook cell, time); expanding it
shows the card, what the model saw for that turn (the compiled request, as JSON) and the
message's provenance; "Fork here" forks the branch at that message and shows the fork. The
header sums the branch and says what the next turn will send, in tokens against the model's
context window (exact with an offline tokenizer, otherwise a labelled estimate).

The timeline runs on the front-end module (``widgets/lion_nb.js``, kind ``inspector``:
``widgets.inspector_parts.TimelineFront``): only the visible page (``page_size`` rows) is on the
page, each row a part sent once and re-sent only when it changes; the page draws the pager,
the role filter, the go-to box and each row's expand and "Fork here" controls, and sends their
actions (``widgets.protocol``). While a run adds messages the changed rows and heading go
through the view's channel (at most ``1 / refresh_interval`` updates a second), never the whole
page. The inspector itself is a small ipywidgets box holding the timeline and, below it, the
panels of the forks it made (each a chat view, a front-end widget of its own, and a compare
button); it is what a notebook displays and saves (``StaticFallback``: the current page as
HTML). Which messages, which page and which rows are expanded is
``viewmodels.timeline.TimelineModel``; what the next turn sends is ``operations.window.next_turn``;
all HTML comes from ``lion_nb.render.timeline``, ``render.turns`` and ``render.chrome``.
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
from lion_nb.render.chrome import (
    forked_html,
    next_turn_pending_html,
    no_such_message_html,
    status_html,
)
from lion_nb.render.text import transcript_plain
from lion_nb.signals import MessageAdded, MessageRetracted, RunEnd, RunFailed, RunStart, Signal
from lion_nb.tokens import NextTurn
from lion_nb.viewmodels.timeline import (
    ROLE_FILTERS,
    TimelineModel,
    TimelineRow,
    TotalsCache,
    timeline_rows,
)
from lion_nb.widgets.inspector_parts import TimelineFront, TimelinePage, fork_panel
from lion_nb.widgets.prompt_view import PromptReader, turn_messages
from lion_nb.widgets.viewbase import StaticFallback

if TYPE_CHECKING:
    from lion_nb.session.branch import Branch

__all__ = ["ROLE_FILTERS", "ProgressionInspector", "inspect"]


class ProgressionInspector(StaticFallback, ipywidgets.VBox):
    """A branch's timeline: one row per message, paginated, each row expandable, with "Fork
    here".

    A row shows the message's index, role, preview, usage, run, notebook cell and time;
    expanded, its card, what the model saw for that turn (the compiled request) and its
    provenance. The header sums the branch and says what the next turn will send, in tokens
    against the model's context window. It opens on the newest messages and follows new ones
    while it shows the end (``follow``); paging back keeps the rows still as messages arrive.
    Only the visible page is sent to the page, so a long branch opens quickly.

    Args:
        branch: The branch to inspect.
        page_size: Rows per page.
        title: The heading; default: the branch's name.
        follow: Follow new messages while the last page is shown.
        on_fork: Called with each fork "Fork here" makes, instead of the default of showing a
            fork panel (chat view and compare button) under the timeline.
        refresh_interval: The least time (seconds) between two updates while a run adds
            messages.

    Example:
        ```python
        inspector = ProgressionInspector(branch, page_size=20)
        inspector
        inspector.go_to(3)  # the page holding message 3, expanded
        fork = inspector.fork(3)  # what "Fork here" does
        ```
    """

    def __init__(
        self,
        branch: Branch,
        *,
        page_size: int = 50,
        title: str | None = None,
        follow: bool = True,
        on_fork: Callable[[Branch], Any] | None = None,
        # 4 a second, not MAX_RATE: it shows recorded messages (rows, its heading), never a
        # streamed reply; each update re-renders the changed rows of the page
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
        self._next_html = next_turn_pending_html()
        self._pending_messages = False
        self._leave_pending = False
        self._totals = TotalsCache()
        self._details: dict[int, tuple[Any, str]] = {}  # position -> (what it shows, HTML)
        self.front = TimelineFront(
            self._page,
            {
                "open": lambda c: self._acted(self.toggle, int(c["key"])),
                "fork": lambda c: self._acted(self.fork, int(c["key"])),
                "page": lambda c: self._acted(self._turn_page, str(c["to"])),
                "goto": lambda c: self._acted(self._go_to_asked, int(c["index"])),
                "filter": lambda c: self._acted(self.set_filter, str(c["name"])),
                "collapse": lambda _c: self._acted(self.collapse_all),
                "leave": lambda _c: self._left(),
                "prompt_tokens": self._read_prompt,
            },
            refresh_interval=refresh_interval,
        )
        # "What the model read" of an expanded row (widgets.prompt_view)
        self._prompts = PromptReader(
            lambda: self.front.channel, lambda: branch.chat_model_or_none, self._prompt_failed
        )
        self._forks_box = ipywidgets.VBox(_dom_classes=("lion-tl-forks",))
        super().__init__(
            children=(self.front, self._forks_box), _dom_classes=("lion-inspector-host",)
        )
        self._unsubscribe = self._subscribe()
        self._schedule_next_turn()
        # the comm opened with empty parts: the first page goes as the state, once (ops sent
        # before any page draws the view would reach nobody: they are not replayed)
        self.front.ops()
        self.front.sync_state(send=True)
        self._ready = True

    # ----- paging (the view model's state) ---------------------------------------------
    @property
    def page_size(self) -> int:
        """How many rows a page shows."""
        return self.timeline.page_size

    @property
    def follow(self) -> bool:
        """Whether the view follows new messages while it shows the last page."""
        return self.timeline.follow

    @property
    def expanded(self) -> set[int]:
        """The positions of the expanded rows."""
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
        """How many pages the listed messages fill."""
        return self.timeline.pages

    @property
    def page(self) -> int:
        """The page number of the first visible row (0-based)."""
        return self.timeline.page

    @property
    def at_end(self) -> bool:
        """Whether the last page (the newest messages) is shown."""
        return self.timeline.at_end

    @property
    def filter(self) -> str:
        """The role filter on (one of ``ROLE_FILTERS``); ``set_filter`` changes it."""
        return self.timeline.filter

    @property
    def status(self) -> str:
        """The status line's HTML (what the last fork said)."""
        return str(self.front.chrome_value("status_line"))

    def visible_indices(self) -> Sequence[int]:
        """The progression positions of the rows shown now, in order."""
        return self.timeline.visible_indices()

    def show_start(self, start: int) -> None:
        """Show ``page_size`` rows from position ``start`` (clamped to the last full window)."""
        if self.timeline.show_start(start):
            self.front.update()

    def show_page(self, page: int) -> None:
        """Show page ``page`` (0-based; clamped to the last full page)."""
        self.show_start(page * self.page_size)

    def show_end(self) -> None:
        """Show the newest messages (the view then follows new ones)."""
        self.show_start(self.timeline.end_start())

    def go_to(self, index: int) -> None:
        """Show the page holding message ``index`` (a progression position) and expand it."""
        if 0 <= index < len(self.branch.messages) and self.timeline.hides(index):
            self.timeline.set_filter("all")
        self.timeline.go_to(index)
        self.front.update()

    def set_filter(self, name: str) -> None:
        """Show only some roles: one of ``ROLE_FILTERS`` ("all", "user", "assistant",
        "actions", "system")."""
        self.timeline.set_filter(name)  # raises ValueError for an unknown name
        self.front.update()

    def toggle(self, index: int) -> None:
        """Expand message ``index`` (its card, what the model saw, its provenance), or
        collapse it."""
        self.timeline.toggle(index)
        self.front.update()

    def collapse_all(self) -> None:
        """Collapse every expanded row."""
        self.timeline.expanded.clear()
        self.front.update()

    # ----- the page's controls -----------------------------------------------------------
    def _acted(self, fn: Callable[..., Any], *args: Any) -> None:
        """A page action: do it, then the synced state follows (a page drawn later shows it)."""
        fn(*args)
        self.front.sync_state()

    def _turn_page(self, to: str) -> None:
        steps = {"first": -self.total, "prev": -self.page_size, "next": self.page_size}
        if to == "last":
            self.show_end()
        elif to in steps:
            self.show_start(0 if to == "first" else self.start + steps[to])

    def _go_to_asked(self, index: int) -> None:
        """The go-to box: a number past the branch's end is said, not raised."""
        count = len(self.branch.messages)
        if not 0 <= index < count:
            self.front.set_chrome(status_line=no_such_message_html(index, count))
            return
        self.go_to(index)

    def _read_prompt(self, content: dict[str, Any]) -> None:
        """The page asked what the model read for the expanded row ``content["key"]``
        (``d<position>``, its detail's part)."""
        key = str(content.get("key", ""))
        messages = self.branch.messages
        if not key.startswith("d") or not key[1:].isdigit() or int(key[1:]) >= len(messages):
            return
        index = int(key[1:])
        self._prompts.ask(key, messages[index].id, turn_messages(messages, index))

    def _prompt_failed(self, error: BaseException) -> None:
        self.front.set_chrome(
            status_line=status_html("failed", f"Could not read the prompt: {error}")
        )

    # ----- forking -----------------------------------------------------------------------
    def fork(self, index: int, *, name: str | None = None) -> Branch:
        """Fork the branch at message ``index`` (kept in the branch's session, linked to its
        origin through ``metadata["forked_from"]``) and show it."""
        origin = self.branch
        forked = origin.fork(index, name=name or f"{origin.name or 'branch'} @{index}")
        self.forks.append(forked)
        provenance_of(forked)  # its runs are timed from the start (compare shows latency)
        self.front.set_chrome(
            status_line=forked_html(index, forked.name, len(forked.messages), forked.id)
        )
        if self.on_fork is not None:
            self.on_fork(forked)
        else:
            panel = fork_panel(origin, forked)
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
            self.front.update_later()  # throttled by the channel
        elif isinstance(signal, MessageRetracted):
            self.refresh()  # positions after it moved: recompute rather than patch
        elif isinstance(signal, RunStart):
            self.front.update_later()
        elif isinstance(signal, RunEnd | RunFailed):
            self.front.update()
            self._schedule_next_turn()
            self.front.sync_state()
            self.refresh_static()

    def refresh(self) -> None:
        """Recompute everything from the branch now (e.g. after ``clear_messages``)."""
        self._pending_messages = False
        self._details.clear()
        self.timeline.set_filter(self.timeline.filter)
        self.front.update()
        self._schedule_next_turn()

    # ----- what the page shows -----------------------------------------------------------
    def _page(self) -> TimelinePage:
        """The timeline now (``TimelineFront`` sends what changed of it)."""
        if self._pending_messages:
            self._pending_messages = False
            self.timeline.grew()
        messages = self.branch.messages
        runs = len(self.provenance.runs) if self.provenance else 0
        untracked = self.timeline.untracked(self.provenance)
        rows = timeline_rows(messages, self.visible_indices(), self.provenance)
        return TimelinePage(
            head=tl.header_html(self.title, len(messages), self._totals.get(messages), runs),
            next_turn=self._next_html,
            runs_title=tl.runs_summary_html(runs, untracked),
            runs_body=tl.runs_frame_html(runs, untracked),
            runs=[
                (str(run.run_id), tl.run_row_html(run))
                for run in (self.provenance.runs[-tl.RUNS_LIMIT :] if self.provenance else [])
            ],
            rows=[(row.index, tl.row_summary_html(row), self._detail(row)) for row in rows],
            pager={
                "text": self.timeline.position_text(),
                "first": self.start == 0,
                "last": self.at_end,
                "max": max(0, len(messages) - 1),
                "filter": self.timeline.filter,
                "filters": list(ROLE_FILTERS),
            },
        )

    def _cli(self) -> bool:
        model = self.branch.chat_model_or_none
        return bool(model is not None and model.is_cli)

    def _detail(self, row: TimelineRow) -> str | None:
        """An expanded row's detail, compiled again only when what it shows changed (its
        payload compiles every message before it)."""
        if row.index not in self.expanded:
            self._details.pop(row.index, None)
            return None
        run = tl.run_label(row.run) if row.run is not None else None
        said = (row.message.id, run, row.cell, self._cli())
        cached = self._details.get(row.index)
        if cached is None or cached[0] != said:
            html_ = tl.row_detail_html(row, self.branch.messages, cli=said[-1])
            cached = self._details[row.index] = (said, html_)
        return cached[1]

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
        loop.call_soon(self.update_next_turn)

    def update_next_turn(self) -> NextTurn | None:
        """Compute what the next turn sends, now; returns it (also shown in the header).
        A closed inspector computes nothing and returns the last it computed (None if none)."""
        self._turn_pending = False
        if self.closed:
            return self._turn
        self._turn = nt.next_turn(self.branch.messages, self.branch.chat_model_or_none)
        self._next_html = turns.next_turn_html(self._turn)
        self.front.update()
        return self._turn

    def rows_html(self) -> list[str]:
        """The summary HTML of the visible rows, in order, as the page is given them (tests
        and debugging)."""
        return self.front.row_summaries()

    def detail_html(self, index: int) -> str:
        """The expanded HTML of message ``index`` (whether or not it is expanded)."""
        row = timeline_rows(self.branch.messages, [index], self.provenance)[0]
        return tl.row_detail_html(row, self.branch.messages, cli=self._cli())

    # ----- static fallback ---------------------------------------------------------------
    def _static_bounds(self) -> tuple[int, int]:
        return self.timeline.static_bounds()

    def static_html(self) -> str:
        """The timeline as HTML for a saved notebook: the rows shown (the newest page when a
        filter is on or the view shows the end), with the header and next-turn estimate."""
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
        """The same messages as plain text, under a line saying which are shown."""
        messages = self.branch.messages
        start, stop = self._static_bounds()
        head = f"{self.title}: {len(messages):,} messages"
        if stop - start < len(messages):
            head += f" (#{start}–#{stop - 1} shown)"
        return head + "\n\n" + transcript_plain(messages[start:stop])

    def refresh_static(self) -> bool:
        """Refresh the saved output at the end of the executing cell, else at the end of the
        next cell that runs or when the user leaves the view (never on a timer: the page
        draws the view anew, and the reader may be in its go-to box), as the front-end views
        do."""
        if not self.defer_to_cell_end():
            return False
        self._leave_pending = True
        return True

    def _left(self) -> None:
        if self._leave_pending:
            self.flush_static()

    def flush_static(self) -> bool:
        """Replace the saved output now, with the timeline's state sent to the pages first;
        returns whether an update was sent (``StaticFallback.flush_static``)."""
        self._leave_pending = False
        if not self.closed:
            self.front.sync_state(send=True)  # the view JupyterLab draws anew renders from it
        return super().flush_static()

    def _release(self) -> None:
        self._unsubscribe()

    def _owned_widgets(self) -> Iterable[Any]:
        return (self.front, self._forks_box)

    def __repr__(self) -> str:
        return f"<ProgressionInspector of {self.branch!r} rows from #{self.start}>"


def inspect(branch: Branch, **kwargs: Any) -> ProgressionInspector:
    """A ``ProgressionInspector`` of ``branch``: its timeline, paginated, with "Fork here".
    Keyword arguments go to ``ProgressionInspector``."""
    return ProgressionInspector(branch, **kwargs)
