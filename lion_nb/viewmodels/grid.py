"""What ``GridView`` shows of a ``lion_nb.Grid``, as plain data: each cell's status, its text
so far, tokens, cost, time to first token and tokens per second; a summary per row and per
column (mean latency, total cost, failures); and, on demand, a word-level diff of a cell
against the baseline column's cell of its row.

``GridViewModel(grid)`` follows the grid (``grid.subscribe``: a cell's status changed, or a
re-run gave it a new branch) and, while a cell runs, its branch's ``StreamDelta`` signals (the
running ``snapshot`` of the reply's text), so a cell shows its reply as it is written. It holds
no widgets and builds no HTML: ``cell_view`` / ``snapshot()`` give frozen values for
``lion_nb.render.grid_html`` and the view, tested without ipywidgets. ``on_change(keys)`` (set
by the view) is called with the cells that changed, as ``(row, column)``.
"""

from __future__ import annotations

import difflib
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from lion_nb.signals import Signal, StreamDelta

__all__ = [
    "CellView",
    "Grid",
    "GridSnapshot",
    "GridViewModel",
    "Summary",
    "cell_view",
    "summarize",
    "word_diff",
]

Status = Literal["pending", "running", "done", "failed", "stopped"]
DiffOp = Literal["same", "added", "removed"]


class GridCell(Protocol):
    """What the view model reads of a cell (``lion_nb.flow.grid.GridCell``)."""

    row: int
    column: int
    label: str
    prompt: str
    status: Status
    text: str | None
    branch: Any
    usage: Any
    cost_usd: float | None
    latency_ms: float | None
    first_token_ms: float | None
    tokens_per_s: float | None
    error: str | None
    attempt: int


class Grid(Protocol):
    """What the view model reads of a ``lion_nb.Grid`` (the contract in
    ``lion_nb.flow.grid``): a protocol, so the view model never loads the flow engine."""

    labels: list[str]
    shape: tuple[int, int]
    baseline: int
    name: str | None

    def prompt_text(self, i: int) -> str: ...

    def cell(self, i: int, j: int) -> Any: ...

    def subscribe(self, handler: Callable[[Any], Any]) -> Callable[[], None]: ...

    @property
    def is_running(self) -> bool: ...

    async def run(
        self,
        max_concurrent: int = ...,
        engine: str = ...,
        *,
        cells: Any = ...,
        rows: Any = ...,
        columns: Any = ...,
    ) -> Any: ...

    def stop(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class CellView:
    row: int
    column: int
    label: str  # the column's label
    status: Status
    text: str  # the reply so far ("" before its first text)
    output_tokens: int | None
    cost_usd: float | None
    latency_ms: float | None  # so far, while it runs
    first_token_ms: float | None
    tokens_per_s: float | None
    error: str | None
    attempt: int

    @property
    def key(self) -> str:
        return cell_key(self.row, self.column)

    @property
    def settled(self) -> bool:
        return self.status in ("done", "failed", "stopped")


@dataclass(frozen=True, slots=True)
class Summary:
    """A row's or a column's cells summed up."""

    cells: int
    done: int
    running: int
    failed: int
    stopped: int
    mean_latency_ms: float | None  # over the cells that are done
    cost_usd: float | None  # over the priced cells (None: none is priced)
    unpriced: int  # done cells whose cost is not known


@dataclass(frozen=True, slots=True)
class GridSnapshot:
    title: str
    labels: tuple[str, ...]
    prompts: tuple[str, ...]
    baseline: int
    cells: tuple[tuple[CellView, ...], ...]  # rows of cells
    rows: tuple[Summary, ...]
    columns: tuple[Summary, ...]
    total: Summary
    running: bool


def cell_key(row: int, column: int) -> str:
    """The page's key of a cell: ``c<row>-<column>``."""
    return f"c{row}-{column}"


def parse_key(key: str) -> tuple[int, int] | None:
    """``(row, column)`` of a cell's key, None when ``key`` is not one."""
    found = re.fullmatch(r"c(\d+)-(\d+)", key)
    return (int(found.group(1)), int(found.group(2))) if found else None


def _output_tokens(usage: Any) -> int | None:
    return getattr(usage, "output_tokens", None) if usage is not None else None


def cell_view(cell: Any, *, text: str | None = None, elapsed_ms: float | None = None) -> CellView:
    """A frozen view of ``cell``; ``text``: its reply so far while it runs (the stream's
    snapshot), ``elapsed_ms``: its run time so far."""
    shown = text if text is not None else (cell.text or "")
    latency = cell.latency_ms if cell.latency_ms is not None else elapsed_ms
    return CellView(
        row=cell.row,
        column=cell.column,
        label=cell.label,
        status=cell.status,
        text=shown,
        output_tokens=_output_tokens(cell.usage),
        cost_usd=cell.cost_usd,
        latency_ms=latency,
        first_token_ms=cell.first_token_ms,
        tokens_per_s=cell.tokens_per_s,
        error=cell.error,
        attempt=cell.attempt,
    )


def summarize(cells: Iterable[CellView]) -> Summary:
    """Counts, the mean latency of the cells that are done and their total cost."""
    cells = list(cells)
    done = [c for c in cells if c.status == "done"]
    latencies = [c.latency_ms for c in done if c.latency_ms is not None]
    costs = [c.cost_usd for c in done if c.cost_usd is not None]
    return Summary(
        cells=len(cells),
        done=len(done),
        running=sum(c.status == "running" for c in cells),
        failed=sum(c.status == "failed" for c in cells),
        stopped=sum(c.status == "stopped" for c in cells),
        mean_latency_ms=sum(latencies) / len(latencies) if latencies else None,
        cost_usd=sum(costs) if costs else None,
        unpriced=len(done) - len(costs),
    )


_WORDS = re.compile(r"\s+|[^\s]+")


def word_diff(baseline: str, text: str) -> list[tuple[DiffOp, str]]:
    """``text`` against ``baseline``, word by word: ``[(op, words), ...]`` in reading order,
    ``op`` "same", "added" (in ``text`` only) or "removed" (in ``baseline`` only). Whitespace
    travels with the words around it; joining the "same" and "added" pieces gives ``text``."""
    a, b = _WORDS.findall(baseline), _WORDS.findall(text)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    out: list[tuple[DiffOp, str]] = []

    def put(op: DiffOp, words: Sequence[str]) -> None:
        piece = "".join(words)
        if not piece:
            return
        if out and out[-1][0] == op:
            out[-1] = (op, out[-1][1] + piece)
        else:
            out.append((op, piece))

    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            put("same", b[j1:j2])
            continue
        put("removed", a[i1:i2])
        put("added", b[j1:j2])
    return out


class GridViewModel:
    """Follows ``grid`` and the branches of its running cells; ``attach()`` / ``detach()``."""

    def __init__(self, grid: Grid, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.grid = grid
        self._clock = clock
        self._live: dict[tuple[int, int], str] = {}  # running cells: their text so far
        self._started: dict[tuple[int, int], float] = {}  # running cells: when they started
        self._following: dict[tuple[int, int], tuple[Any, Callable[[], None]]] = {}
        self._unsubscribe: Callable[[], None] | None = None
        self.on_change: Callable[[list[tuple[int, int]]], None] | None = None

    @property
    def shape(self) -> tuple[int, int]:
        return self.grid.shape

    def attach(self) -> None:
        if self._unsubscribe is not None:
            return
        self._unsubscribe = self.grid.subscribe(self._on_cell)
        rows, columns = self.grid.shape
        for i in range(rows):
            for j in range(columns):
                self._follow(self.grid.cell(i, j))

    def detach(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        for _branch, stop in self._following.values():
            stop()
        self._following.clear()

    # ----- following -------------------------------------------------------------------------
    def _on_cell(self, cell: Any) -> None:
        self._follow(cell)
        self._changed([(cell.row, cell.column)])

    def _follow(self, cell: Any) -> None:
        """Follow the stream of a running cell's branch (its current one: a re-run gives the
        cell a new branch); stop following a settled one."""
        at = (cell.row, cell.column)
        following = self._following.get(at)
        branch = cell.branch if cell.status == "running" else None
        if following is not None and following[0] is not branch:
            following[1]()  # settled, or re-run on a new branch: its text starts afresh
            del self._following[at]
            self._live.pop(at, None)
            self._started.pop(at, None)
        if cell.status == "running":
            self._started.setdefault(at, self._clock())
            if branch is not None and at not in self._following:
                stop = branch.subscribe((StreamDelta,), lambda s, at=at: self._on_delta(at, s))
                self._following[at] = (branch, stop)
        else:
            self._live.pop(at, None)
            self._started.pop(at, None)

    def _on_delta(self, at: tuple[int, int], signal: Signal) -> None:
        if not isinstance(signal, StreamDelta) or signal.kind != "text":
            return
        self._live[at] = signal.snapshot
        self._changed([at])

    def _changed(self, keys: list[tuple[int, int]]) -> None:
        if self.on_change is not None:
            self.on_change(keys)

    # ----- reading ---------------------------------------------------------------------------
    def cell(self, i: int, j: int) -> CellView:
        cell = self.grid.cell(i, j)
        at = (i, j)
        elapsed = None
        if cell.status == "running" and at in self._started:
            elapsed = (self._clock() - self._started[at]) * 1000
        live = self._live.get(at) if cell.status == "running" else None
        return cell_view(cell, text=live, elapsed_ms=elapsed)

    def row(self, i: int) -> tuple[CellView, ...]:
        return tuple(self.cell(i, j) for j in range(self.grid.shape[1]))

    def diff(self, i: int, j: int) -> list[tuple[DiffOp, str]]:
        """Cell ``(i, j)``'s text against the baseline column's cell of row ``i``."""
        base = self.cell(i, self.grid.baseline).text
        return word_diff(base, self.cell(i, j).text)

    def title(self) -> str:
        rows, columns = self.grid.shape
        name = self.grid.name or "Grid"
        return f"{name} · {rows} prompt{'' if rows == 1 else 's'} × {columns} column" + (
            "" if columns == 1 else "s"
        )

    def snapshot(self) -> GridSnapshot:
        rows, columns = self.grid.shape
        cells = tuple(self.row(i) for i in range(rows))
        return GridSnapshot(
            title=self.title(),
            labels=tuple(self.grid.labels),
            prompts=tuple(self.grid.prompt_text(i) for i in range(rows)),
            baseline=self.grid.baseline,
            cells=cells,
            rows=tuple(summarize(row) for row in cells),
            columns=tuple(summarize(row[j] for row in cells) for j in range(columns)),
            total=summarize(c for row in cells for c in row),
            running=bool(self.grid.is_running),
        )
