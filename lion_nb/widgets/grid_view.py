"""``GridView``: a ``lion_nb.Grid`` live — prompts down, columns across, every cell streaming
as it runs, its figures underneath, a summary per row and per column.

    grid = lion_nb.Grid(prompts, models)
    view = lion_nb.view(grid)            # a GridView; then, in this or another cell:
    await grid.run()

It runs on the front-end module (kind ``grid``; ``widgets/grid.js`` draws its controls: Stop,
each row's and column's "Run again", the chosen cell's Open / Full text / Diff / Run again,
and moves between cells with the arrow keys, Enter opening one). The table is a part
(``render.grid_html.frame_html``) holding one nested part per row on the page, each holding
one part per cell and its summary; a running cell's reply streams into its cell with ``tail``
ops at the channel's rate (``channel.MAX_RATE``, the chat view's smoothness: the page reveals
each update over the frames), its figures line with ``slot`` ops, and a cell is put whole again
only when its status changes. A cell shows the start of its reply (``cell_chars``); "Full
text" and "Diff" (against the baseline column) put a panel under the grid; "Open" shows the
cell's conversation in a chat view below (``BranchView`` on ``cell.branch``, the synced trait
``chat``: the page draws it with the same module), where the user can continue it.

A large grid has only the rows in view on the page: the page says which rows it shows
(``grid_window``), the kernel puts those (and a few around) and drops the rest, keeping the
table's height with gap rows.

Run again and Stop are the grid's own calls (``grid.run(cells=...)``, ``grid.stop()``), the run
a background task the view owns (a click reaches the kernel while it runs). The state is
``viewmodels.grid.GridViewModel``; every piece of HTML comes from ``render.grid_html``.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import traitlets
from ipywidgets import widget_serialization

from lion_nb.render import grid_html as gh
from lion_nb.render.chrome import error_html, status_html
from lion_nb.viewmodels.grid import CellView, GridSnapshot, GridViewModel, cell_key, parse_key
from lion_nb.widgets.channel import Op
from lion_nb.widgets.front import Front
from lion_nb.widgets.marimo_cell import current_cell, in_cell
from lion_nb.widgets.protocol import attrs_op, drop_op, put_op, slot_op, tail_op

if TYPE_CHECKING:
    from lion_nb.viewmodels.grid import Grid

__all__ = ["GridView"]

logger = logging.getLogger(__name__)

MARGIN_ROWS = 5  # rows put beyond those in view, so a short scroll shows no gap
RECHECK_S = 0.05  # a run with no cell running yet (or any more) is looked at again this soon


@dataclass(slots=True)
class _Sent:
    """What the page shows of a cell: its status and run, its text, its figures, its name."""

    status: str
    attempt: int
    text: str
    figures: str
    name: str


class GridView(Front):
    """A ``Grid`` live: prompts down, columns across, every cell streaming as it runs, its
    figures underneath, a summary per row and per column.

    Choose a cell (click, or the arrow keys) for its controls: Open shows its conversation in
    a chat view under the grid, where it can be continued; Full text and Diff (against the
    baseline column) put a panel under the grid; Run again runs it afresh on a new fork.
    Rows and columns have Run again too, and Stop stops the grid's run wherever it was
    started. Each control is a method here. A saved notebook keeps the grid as an HTML table.

    Args:
        grid: The grid to show.
        cell_chars: How much of a reply a cell shows (the rest: Full text).
        page_rows: At most this many rows are on the page at once; a larger grid shows the
            rows in view as the reader scrolls.
        title: The heading; default: the grid's name and shape.

    Example:
        ```python
        grid = Grid(prompts, models)
        lion_nb.view(grid)  # a GridView; then, in this or another cell:
        await grid.run()
        ```
    """

    # the chat view "Open" shows under the grid (the page draws it with the same module)
    chat = traitlets.Instance(Front, allow_none=True).tag(sync=True, **widget_serialization)

    def __init__(
        self,
        grid: Grid,
        *,
        cell_chars: int = gh.CELL_CHARS,
        page_rows: int = 40,
        title: str | None = None,
    ) -> None:
        self.grid = grid
        self.model = GridViewModel(grid)
        super().__init__(kind="grid", title=title or self.model.title())
        self.cell_chars = cell_chars
        self.page_rows = page_rows
        rows, _columns = grid.shape
        self._window = (0, min(rows, page_rows + MARGIN_ROWS))
        self._shown: dict[str, tuple[str, str | None]] = {}  # key -> (html, parent), in order
        self._sent: dict[str, _Sent] = {}  # cells on the page
        self._statuses: dict[str, tuple[str, int]] = {}  # every cell: (status, attempt) seen
        self._dirty: set[tuple[int, int]] = set()
        self._tasks: set[asyncio.Task[Any]] = set()  # runs started from the view
        self._recheck: asyncio.TimerHandle | None = None
        self._detail: tuple[str, str] | None = None  # (cell key, "text" | "diff")
        self.opened: str | None = None  # the key of the cell whose conversation is open
        self._cell = current_cell()  # marimo: the cell the chat view "Open" makes belongs to
        self.model.on_change = self._on_change
        self.model.attach()
        self.channel.push(*self._ops(full=True))
        self.channel.flush()
        self.sync_state(send=True)  # the comm opened with empty parts
        self._ready = True

    # ----- live ------------------------------------------------------------------------------
    def _on_change(self, keys: list[tuple[int, int]]) -> None:
        if self.closed:
            return
        first = any(self._first_text(at) for at in keys)
        self._dirty.update(keys)
        self.channel.stream("grid", self._update_ops, now=first)

    def _first_text(self, at: tuple[int, int]) -> bool:
        """A running cell's first text goes out at once (as the chat view's first token)."""
        sent = self._sent.get(cell_key(*at))
        return sent is not None and sent.status == "running" and not sent.text

    def _update_ops(self) -> list[Op]:
        dirty, self._dirty = self._dirty, set()
        return self._ops(dirty=dirty)

    def _ops(self, *, full: bool = False, dirty: set[tuple[int, int]] | None = None) -> list[Op]:
        if self.closed:
            return []
        dirty = dirty or set()
        first, end = self._window
        cells = [self.model.cell(i, j) for i, j in sorted(dirty)]
        moved = [c for c in cells if self._statuses.get(c.key) != (c.status, c.attempt)]
        for cell in moved:
            self._statuses[cell.key] = (cell.status, cell.attempt)
        ops: list[Op] = []
        if full or moved:  # a status changed: the summaries and the chrome too
            snapshot = self.model.snapshot()
            ops += self._board_ops(snapshot)
            self._chrome(snapshot)
        else:
            for cell in cells:
                if first <= cell.row < end:
                    ops += self._cell_ops(cell)
        if self._detail is not None and self._detail_dirty(dirty):
            ops += self._detail_ops()
        return ops

    def _changed_status(self, cell: CellView) -> bool:
        sent = self._sent.get(cell.key)
        return sent is None or (sent.status, sent.attempt) != (cell.status, cell.attempt)

    def _chrome(self, snapshot: GridSnapshot) -> None:
        running = snapshot.running or self._running()
        state = "running" if running else "failed" if snapshot.total.failed else "done"
        if not running and snapshot.total.done == 0 and not snapshot.total.failed:
            state = "idle"
        if running and not snapshot.total.running:
            self._recheck_soon()
        if not running:  # the saved output: at rest (a bundle saved already is not re-sent)
            self.refresh_static()
        self.set_chrome(
            busy=running,
            can_stop=running,
            status_line=status_html(state, gh.summary_text(snapshot.total)),
        )

    def _recheck_soon(self) -> None:
        """The grid says it runs but no cell does (its last cell settled a moment before its
        run returns, or the next cells have not started): look again shortly, so Stop and
        the status line follow the run's end."""
        if self._recheck is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._recheck = loop.call_later(RECHECK_S, self._rechecked)

    def _rechecked(self) -> None:
        self._recheck = None
        if not self.closed:
            self.channel.push(*self._ops(full=True))

    def _running(self) -> bool:
        return any(not task.done() for task in self._tasks)

    # ----- the table -------------------------------------------------------------------------
    def _pieces(self, snapshot: GridSnapshot) -> dict[str, tuple[str, str | None]]:
        """Every part the page should show now, in order: key -> (html, parent)."""
        rows, columns = self.grid.shape
        first, end = self._window
        pieces: dict[str, tuple[str, str | None]] = {
            "frame": (gh.frame_html(snapshot.title, rows, columns), None),
            "cols": (gh.columns_html(snapshot.labels, snapshot.baseline), "frame"),
        }
        if first > 0:
            pieces["gt"] = (gh.gap_html(first, columns), "frame")
        for i in range(first, end):
            row = f"r{i}"
            pieces[row] = (
                gh.row_html(i, snapshot.prompts[i], (), snapshot.rows[i], nested=True),
                "frame",
            )
            pieces[f"h{i}"] = (gh.row_head_html(i, snapshot.prompts[i]), row)
            for cell in snapshot.cells[i]:
                pieces[cell.key] = ("", row)  # cells: put by _cell_ops
            pieces[f"s{i}"] = (gh.sum_cell_html(snapshot.rows[i]), row)
        if end < rows:
            pieces["gb"] = (gh.gap_html(rows - end, columns), "frame")
        pieces["sums"] = (gh.sums_html(snapshot.columns, snapshot.total), "frame")
        return pieces

    def _board_ops(self, snapshot: GridSnapshot) -> list[Op]:
        """The parts that changed since the last board: rows that left the window dropped,
        new ones put in order, cells put whole or brought up to date, summaries re-put."""
        pieces = self._pieces(snapshot)
        ops: list[Op] = []
        for key in [k for k in self._shown if k not in pieces and k != "detail"]:
            if self._shown[key][1] in (None, "frame"):  # a row's cells go with it
                ops.append(drop_op(key))
            self._sent.pop(key, None)
            del self._shown[key]
        cells = {c.key: c for row in snapshot.cells for c in row}
        keys = list(pieces)
        kept = self._shown  # what the page shows and keeps: where new parts go before
        for at, (key, (html_, parent)) in enumerate(pieces.items()):
            new = key not in kept
            if key in cells:
                part_ops = self._cell_ops(cells[key], new=new)
            elif new or kept[key][0] != html_:
                part_ops = [put_op(key, html_)]
            else:
                continue
            for op in part_ops:
                if new and op["op"] == "put":
                    _place(op, keys[at + 1 :], parent, kept)
            ops += part_ops
        self._statuses = {c.key: (c.status, c.attempt) for c in cells.values()}
        detail = self._shown.pop("detail", None)
        self._shown = dict(pieces)
        if detail is not None:
            self._shown["detail"] = detail
        return ops

    def _cell_ops(self, cell: CellView, *, new: bool = False) -> list[Op]:
        """The ops that bring cell ``cell`` on the page up to date: put whole when new or its
        status changed, else its text's growth (``tail``) and its figures (``slot``)."""
        key = cell.key
        limit = self.cell_chars
        shown = gh.cell_text(cell, limit)
        figures = gh.figures_html(cell, limit=limit)
        name = gh.cell_name(cell)
        sent = self._sent.get(key)
        base = cell.column == self.grid.baseline
        if new or sent is None or self._changed_status(cell) or not shown.startswith(sent.text):
            self._sent[key] = _Sent(cell.status, cell.attempt, shown, figures, name)
            return [put_op(key, gh.cell_html(cell, limit=limit, baseline=base))]
        ops: list[Op] = []
        if shown != sent.text:
            ops.append(tail_op(key, text=shown[len(sent.text) :], add=True))
            sent.text = shown
        if figures != sent.figures:
            ops.append(slot_op(key, "tools", figures))
            sent.figures = figures
        if name != sent.name:
            cls = f"lion-grid-cell lion-grid-{cell.status}" + (" lion-grid-base" if base else "")
            ops.append(attrs_op(key, cls, {"aria-label": name}))
            sent.name = name
        return ops

    # ----- the detail panel: a cell's full text or its diff ---------------------------------
    def _detail_dirty(self, dirty: set[tuple[int, int]]) -> bool:
        if self._detail is None:
            return False
        at = parse_key(self._detail[0])
        return at is not None and (at in dirty or (at[0], self.grid.baseline) in dirty)

    def _detail_ops(self) -> list[Op]:
        if self._detail is None:
            if "detail" in self._shown:
                del self._shown["detail"]
                return [drop_op("detail")]
            return []
        key, what = self._detail
        at = parse_key(key)
        if at is None:
            return []
        cell = self.model.cell(*at)
        diff = self.model.diff(*at) if what == "diff" else None
        html_ = gh.detail_html(
            cell,
            self.grid.prompt_text(at[0]),
            what=what,
            diff=diff,
            baseline_label=self.grid.labels[self.grid.baseline],
        )
        if self._shown.get("detail", ("", None))[0] == html_:
            return []
        self._shown["detail"] = (html_, None)
        return [put_op("detail", html_)]

    def show(self, i: int, j: int, what: str = "text") -> None:
        """Show cell ``(i, j)``'s full text (``what="text"``) or its diff against the baseline
        column (``"diff"``) under the grid; ``what=""`` closes the panel."""
        self._detail = (cell_key(i, j), what) if what in ("text", "diff") else None
        self.channel.push(*self._detail_ops())

    # ----- page actions ----------------------------------------------------------------------
    def _action_stop(self, _content: dict[str, Any]) -> None:
        self.stop()

    def _action_grid_run(self, content: dict[str, Any]) -> None:
        self.run_again(
            cells=[tuple(c) for c in content.get("cells") or []] or None,
            rows=list(content.get("rows") or []) or None,
            columns=list(content.get("columns") or []) or None,
        )

    def _action_grid_show(self, content: dict[str, Any]) -> None:
        at = parse_key(str(content.get("key", "")))
        if at is not None:
            self.show(*at, str(content.get("what", "")))

    def _action_grid_window(self, content: dict[str, Any]) -> None:
        self.show_rows(int(content.get("first", 0)), int(content.get("count", self.page_rows)))

    def _action_open(self, content: dict[str, Any]) -> None:
        at = parse_key(str(content.get("key", "")))
        if at is not None:
            self.open_cell(*at)

    def stop(self) -> bool:
        """Stop the grid's run (wherever it was started); False when nothing runs."""
        stopped = bool(self.grid.stop())
        if stopped:
            self.set_chrome(can_stop=False)
        return stopped

    def run_again(
        self,
        *,
        cells: list[Any] | None = None,
        rows: list[int] | None = None,
        columns: list[int] | None = None,
    ) -> asyncio.Task[Any]:
        """Run cells, rows or columns again, afresh (``grid.run(cells=..., rows=...,
        columns=...)``), as a task the view owns: a click returns at once and Stop reaches the
        kernel while it runs. What the grid refuses (a cell running now) is said in the view."""
        self.set_chrome(error_box="", busy=True, can_stop=True)

        async def go() -> None:
            try:
                await self.grid.run(cells=cells, rows=rows, columns=columns)
            except asyncio.CancelledError:
                pass  # stopped: the cells say so
            except Exception as error:  # shown in the view; a click never raises
                self.set_chrome(error_box=error_html(error))
            finally:
                self._tasks.discard(task)
                self.channel.push(*self._ops(full=True))

        task = asyncio.get_running_loop().create_task(go())
        self._tasks.add(task)
        return task

    def open_cell(self, i: int, j: int) -> Any:
        """Show cell ``(i, j)``'s conversation in a chat view under the grid, where it can be
        continued (again: close it). Returns the chat view, or None when closed or the cell
        has no conversation yet."""
        key = cell_key(i, j)
        branch = self.grid.cell(i, j).branch
        old = self.chat
        if self.opened == key or branch is None:
            self.opened, self.chat = None, None
        else:
            # lazy: a grid never opened needs no chat view (nor the verbs it loads)
            from lion_nb.widgets.chat_view import BranchView

            self.opened = key
            with in_cell(self._cell):  # a click in marimo: no cell runs
                self.chat = BranchView(branch, title=f"Row {i + 1}, {self.grid.labels[j]}")
        if old is not None:
            old.close()
        return self.chat

    def show_rows(self, first: int, count: int) -> None:
        """Put rows ``first`` .. ``first + count`` (and a few around) on the page, drop the
        others (the page asks as it scrolls)."""
        rows = self.grid.shape[0]
        count = max(1, min(count, self.page_rows))
        start = max(0, min(first, rows - 1) - MARGIN_ROWS)
        window = (start, min(rows, first + count + MARGIN_ROWS))
        if window == self._window:
            return
        self._window = window
        self.channel.push(*self._ops(full=True))

    # ----- reading ---------------------------------------------------------------------------
    def state_parts(self) -> list[list[str]]:
        """The parts on the page: the table's frame, a part per row in view, a part per cell
        inside its row (``[key, html, parent]``), each cell as it is now."""
        parts: list[list[str]] = []
        for key, (html_, parent) in self._shown.items():
            at = parse_key(key) if key in self._sent else None
            if at is not None:  # a cell: as it is now (the channel was flushed)
                base = at[1] == self.grid.baseline
                html_ = gh.cell_html(self.model.cell(*at), limit=self.cell_chars, baseline=base)
            parts.append([key, html_] if parent is None else [key, html_, parent])
        return parts

    def static_html(self) -> str:
        """The whole grid as an HTML table for a saved notebook (every row, not just those
        in view)."""
        return gh.grid_html(self.model.snapshot(), limit=self.cell_chars)

    def static_text(self) -> str:
        """The grid as plain text: a block per prompt, a line per column, then the totals."""
        return gh.grid_text(self.model.snapshot())

    def rendered_html(self) -> str:
        """The grid as a static HTML table (what a saved notebook shows, without the
        stylesheet ``_repr_mimebundle_`` adds)."""
        return self.static_html()

    def _release(self) -> None:
        self.model.detach()
        if self._recheck is not None:
            self._recheck.cancel()
        if self.chat is not None:
            self.chat.close()

    def __repr__(self) -> str:
        rows, columns = self.grid.shape
        return f"<GridView {rows}×{columns}>"


def _place(op: Any, later: list[str], parent: str | None, kept: dict[str, Any]) -> None:
    """A new part goes in ``parent`` before the first of ``later`` the page keeps there."""
    if parent is not None:
        op["parent"] = parent
    op["before"] = next((k for k in later if k in kept and kept[k][1] == parent), None)
