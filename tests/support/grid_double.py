"""A small grid on real branches and the scripted model, to the contract of ``lion_nb.Grid``
(``/work/shared``'s GRID_CONTRACT: cells, subscribe, run, stop), for the view's tests where
the grid's own scheduling is beside the point: each cell's run is a real
``Branch.communicate`` streaming real ``StreamDelta`` signals."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lion_nb import Branch, iModel


@dataclass
class DoubleCell:
    row: int
    column: int
    label: str
    prompt: str
    status: str = "pending"
    text: str | None = None
    parsed: Any = None
    branch: Any = None
    usage: Any = None
    cost_usd: float | None = None
    latency_ms: float | None = None
    first_token_ms: float | None = None
    tokens_per_s: float | None = None
    error: str | None = None
    attempt: int = 0


class DoubleGrid:
    def __init__(
        self,
        prompts: list[str],
        labels: list[str],
        reply: Callable[[int, int, int], str],
        *,
        delay: float = 0.0,
        baseline: int = 0,
        name: str | None = None,
    ) -> None:
        self.prompts = prompts
        self.labels = labels
        self.shape = (len(prompts), len(labels))
        self.baseline = baseline
        self.name = name
        self._reply = reply
        self._delay = delay
        self._cells = [
            [DoubleCell(i, j, labels[j], prompts[i]) for j in range(len(labels))]
            for i in range(len(prompts))
        ]
        self._handlers: list[Callable[[Any], Any]] = []
        self._task: asyncio.Task[Any] | None = None

    def prompt_text(self, i: int) -> str:
        return self.prompts[i]

    def cell(self, i: int, j: int) -> DoubleCell:
        return self._cells[i][j]

    def __getitem__(self, ij: tuple[int, int]) -> DoubleCell:
        return self.cell(*ij)

    def cells(self) -> list[DoubleCell]:
        return [c for row in self._cells for c in row]

    def subscribe(self, handler: Callable[[Any], Any]) -> Callable[[], None]:
        self._handlers.append(handler)
        return lambda: self._handlers.remove(handler)

    def _notify(self, cell: DoubleCell) -> None:
        for handler in list(self._handlers):
            handler(cell)

    @property
    def is_running(self) -> bool:
        return self._task is not None and not self._task.done()

    def set(self, i: int, j: int, **fields: Any) -> DoubleCell:
        """Change a cell by hand and tell the subscribers (a status change)."""
        cell = self.cell(i, j)
        for name, value in fields.items():
            setattr(cell, name, value)
        self._notify(cell)
        return cell

    async def _run_cell(self, cell: DoubleCell, rerun: bool) -> None:
        if rerun:
            cell.attempt += 1
        reply = self._reply(cell.row, cell.column, cell.attempt)
        model = iModel(provider="scripted", replies=[reply], delay=self._delay)
        cell.branch = Branch(chat_model=model)
        cell.status, cell.text, cell.error = "running", None, None
        started = time.monotonic()
        self._notify(cell)
        try:
            await cell.branch.communicate(cell.prompt)
        except asyncio.CancelledError:
            cell.status = "stopped"
            self._notify(cell)
            raise
        cell.text = reply
        cell.latency_ms = (time.monotonic() - started) * 1000
        cell.status = "done"
        self._notify(cell)

    async def run(
        self,
        max_concurrent: int = 8,
        engine: str = "local",
        *,
        cells: list[Any] | None = None,
        rows: list[int] | None = None,
        columns: list[int] | None = None,
    ) -> DoubleGrid:
        chosen = [
            c
            for c in self.cells()
            if (cells is None and rows is None and columns is None)
            or (cells and (c.row, c.column) in {tuple(x) for x in cells})
            or (rows and c.row in rows)
            or (columns and c.column in columns)
        ]
        rerun = any(c.status != "pending" for c in chosen)

        async def go() -> None:
            await asyncio.gather(*(self._run_cell(c, rerun) for c in chosen))

        self._task = asyncio.get_running_loop().create_task(go())
        try:
            await self._task
        except asyncio.CancelledError:
            pass
        return self

    def stop(self) -> bool:
        if not self.is_running:
            return False
        assert self._task is not None
        self._task.cancel()
        return True
