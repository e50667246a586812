"""The inspector's two halves: its timeline on the front end (``TimelineFront``, kind
``inspector``) and the panel a fork is shown in (``fork_panel``).

The timeline is a list of parts on the view's channel: the heading (``head``), what the next
turn sends (``next``), the run log (``runs``: a ``<details>`` whose title and table are nested
parts, so an open log stays open while they change) and the rows' box (``rows``), in which each
visible row is a nested part keyed by its message's position (``r12``) and an expanded row's
detail a part nested in it (``d12``). An update sends only the parts that changed: a row that
scrolled out is dropped, one that scrolled in is put, a row expanded or collapsed changes its
classes (an ``attrs`` op) and puts or drops its detail. The page draws the pager (from the chrome
trait ``pager``), each row's expand control and "Fork here", and sends their actions
(``protocol.ACTIONS``: open, fork, page, goto, filter, collapse), which the inspector handles.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import ipywidgets

from lion_nb.render import timeline as tl
from lion_nb.render.chrome import fork_note_html
from lion_nb.widgets.channel import AnyOp, Op, in_order
from lion_nb.widgets.chat_view import BranchView
from lion_nb.widgets.compare_view import CompareView
from lion_nb.widgets.front import Front
from lion_nb.widgets.protocol import PutOp, attrs_op, chrome_op, drop_op, put_op

if TYPE_CHECKING:
    from lion_nb.session.branch import Branch

__all__ = ["TimelineFront", "TimelinePage", "fork_panel"]


@dataclass(slots=True)
class TimelinePage:
    """What the inspector shows now: the heading, the next turn, the run log (its title, its
    body and its runs: run id, table row HTML), the visible rows (position, summary HTML, detail
    HTML when expanded) and the pager (the chrome trait ``pager``)."""

    head: str
    next_turn: str
    runs_title: str
    runs_body: str
    runs: list[tuple[str, str]]
    rows: list[tuple[int, str, str | None]]
    pager: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class _Row:
    """What the page shows of one row."""

    summary: str
    expanded: bool
    detail: str | None = None


class TimelineFront(Front):
    """The inspector's timeline on the front end. ``page()`` gives what to show (the
    inspector's state); ``actions`` maps a page action's name to the inspector's handler."""

    def __init__(
        self,
        page: Callable[[], TimelinePage],
        actions: dict[str, Callable[[dict[str, Any]], None]],
        *,
        refresh_interval: float,
    ) -> None:
        super().__init__(kind="inspector")
        self.channel.interval = refresh_interval  # one throttle: the channel's
        self._page = page
        self._actions = actions
        self._top: dict[str, str] = {}  # top-level parts: key -> HTML
        self._runs: dict[str, str] = {}  # the run log's title and body
        self._run_rows: dict[str, str] = {}  # "u:<run id>" -> its table row, in order
        self._rows: dict[str, _Row] = {}  # "r<position>" -> the row, in order
        self._ready = True

    # ----- updates -----------------------------------------------------------------------------
    def update(self) -> None:
        """Send what changed now."""
        self.channel.forget("timeline")
        ops = self.ops()
        if ops:
            self.channel.push(*ops)

    def update_later(self) -> None:
        """Send what changed with the next throttled update (messages arriving in a run)."""
        self.channel.stream("timeline", self.ops)

    def ops(self) -> list[AnyOp]:
        """The ops that bring the page from what it shows to ``page()``: the parts that
        changed, the pager's state with them."""
        if self.closed:
            return []
        page = self._page()
        ops: list[AnyOp] = self._pager_ops(page.pager)
        top = {
            "head": page.head,
            "next": page.next_turn,
            "runs": tl.RUNS_FRAME_HTML,
            "rows": tl.ROWS_FRAME_HTML,
        }
        ops += [put_op(key, value) for key, value in top.items() if self._top.get(key) != value]
        self._top = top
        for key, value in (("runs.t", page.runs_title), ("runs.b", page.runs_body)):
            if self._runs.get(key) != value:
                ops.append(put_op(key, value, parent="runs"))
                self._runs[key] = value
                if key == "runs.b":
                    self._run_rows = {}  # they went with the body they were in
        return ops + self._run_ops(page.runs) + self._row_ops(page.rows)

    def _run_ops(self, runs: list[tuple[str, str]]) -> list[Op]:
        """The run log's rows that changed: a new run appended, a run that ended re-put."""
        keys = [f"u:{run_id}" for run_id, _ in runs]
        wanted = set(keys)
        ops: list[Op] = [drop_op(k) for k in self._run_rows if k not in wanted]
        for key, (_, value) in zip(keys, runs, strict=True):
            if self._run_rows.get(key) != value:
                ops.append(put_op(key, value, parent="runs.b"))
                self._run_rows[key] = value
        self._run_rows = in_order(self._run_rows, keys)
        return ops

    def _pager_ops(self, pager: dict[str, Any]) -> list[AnyOp]:
        """The pager's new state, in the message of the rows it pages (not one of its own)."""
        if pager == self.pager:
            return []
        self.set_quietly(pager=pager)  # the pages get it as this op
        return [chrome_op({"pager": pager})]

    def _row_ops(self, rows: list[tuple[int, str, str | None]]) -> list[Op]:
        keys = [f"r{index}" for index, _, _ in rows]
        wanted = set(keys)
        gone = [k for k in self._rows if k not in wanted]
        for k in gone:
            del self._rows[k]
        ops: list[Op] = [drop_op(k) for k in gone]
        for at, (index, summary, detail) in enumerate(rows):
            key = keys[at]
            row = self._rows.get(key)
            expanded = detail is not None
            if row is None or row.summary != summary:
                html_ = tl.row_item_html(index, summary, expanded=expanded)
                op: PutOp = put_op(key, html_, parent="rows")
                later = next((k for k in keys[at + 1 :] if k in self._rows), None)
                if row is None and later is not None:
                    op["before"] = later
                ops.append(op)
                row = self._rows[key] = _Row(summary, expanded)  # its detail went with it
            elif row.expanded != expanded:
                ops.append(attrs_op(key, tl.row_classes(expanded)))
                row.expanded = expanded
            if detail != row.detail:
                dkey = f"d{index}"
                if detail is None:
                    ops.append(drop_op(dkey))
                else:
                    ops.append(put_op(dkey, detail, parent=key))
                row.detail = detail
        self._rows = in_order(self._rows, keys)
        return ops

    # ----- state -------------------------------------------------------------------------------
    def row_summaries(self) -> list[str]:
        """The summary HTML of the rows the page is given, in order."""
        return [row.summary for row in self._rows.values()]

    def state_parts(self) -> list[list[str]]:
        parts = [[key, value] for key, value in self._top.items() if key != "rows"]
        parts += [[key, value, "runs"] for key, value in self._runs.items()]
        parts += [[key, value, "runs.b"] for key, value in self._run_rows.items()]
        if "rows" in self._top:
            parts.append(["rows", self._top["rows"]])
        for key, row in self._rows.items():
            index = int(key[1:])
            parts.append([key, tl.row_item_html(index, row.summary, expanded=row.expanded), "rows"])
            if row.detail is not None:
                parts.append([f"d{index}", row.detail, key])
        return parts

    # ----- page actions ----------------------------------------------------------------------
    def _act(self, name: str, content: dict[str, Any]) -> None:
        handler = self._actions.get(name)
        if handler is not None:
            handler(content)

    def _action_open(self, content: dict[str, Any]) -> None:
        self._act("open", content)

    def _action_fork(self, content: dict[str, Any]) -> None:
        self._act("fork", content)

    def _action_page(self, content: dict[str, Any]) -> None:
        self._act("page", content)

    def _action_goto(self, content: dict[str, Any]) -> None:
        self._act("goto", content)

    def _action_filter(self, content: dict[str, Any]) -> None:
        self._act("filter", content)

    def _action_collapse(self, content: dict[str, Any]) -> None:
        self._act("collapse", content)

    def _action_leave(self, content: dict[str, Any]) -> None:
        self._act("leave", content)

    def _action_prompt_tokens(self, content: dict[str, Any]) -> None:
        self._act("prompt_tokens", content)

    # the inspector that holds this timeline is what a notebook displays and saves
    def static_html(self) -> str:
        return ""

    def static_text(self) -> str:
        return ""


def fork_panel(origin: Branch, forked: Branch) -> Any:
    """A fork, shown to be continued: its chat view, and a button to compare it with its
    origin side by side."""
    w = ipywidgets
    compare = w.Button(
        description="Compare with origin",
        icon="columns",
        tooltip=f"Compare {forked.name or 'the fork'} with its origin side by side",
        layout=w.Layout(width="auto"),
        _dom_classes=("lion-tl-compare",),
    )
    panel = w.VBox(
        [
            w.HTML(fork_note_html(forked.name, len(forked.messages))),
            # only what is added from now on: a long history is in the timeline already
            BranchView(forked, height="320px", history=False),
            compare,
        ],
        _dom_classes=("lion-tl-fork-panel",),
    )

    def show_compare(_b: Any) -> None:
        compare.disabled = True
        panel.children = (*panel.children, CompareView(origin, forked))

    compare.on_click(show_compare)
    return panel
