"""``Grid``: many prompts x many models, each cell a real conversation, run like ``Session.map``.

    grid = lion_nb.Grid(
        ["Name a colour.", "Name a fish."],
        {"cold": iModel(..., temperature=0.2), "warm": iModel(..., temperature=0.9),
         "terse": (iModel(...), "Answer in one word.")},
    )
    await grid.run(max_concurrent=8)          # or engine="ray"
    grid[1, 2].text, grid[1, 2].first_token_ms, grid[1, 2].branch
    await grid.run(columns=[2])               # the "terse" column again, each cell on a new fork
    pandas.DataFrame(grid.to_records())

A row is a prompt (text, or a dict of the verb's arguments); a column a model, the same model
with other settings, or a model with its own system prompt. Every cell runs on its own branch
in ``grid.session``: a fork of ``template``, or a new branch with the column's (else the
grid's) ``system``, whose model is the column's. The cells of one ``run()`` are the nodes of a
``Flow`` (``lion_nb.flow``), so they run as a flow's nodes do: at most ``max_concurrent`` at
once, in this kernel or on Ray, and a stop keeps what each running cell streamed (the flow's
verbs record a stopped turn: ``on_stop="record"``).

``run()`` with no selection runs the cells that have not run (all of them the first time, and
those a stop caught before they started); ``run(cells=[(i, j)] | rows=[i] | columns=[j])``
runs those afresh. Afresh means on a new fork of the cell's first branch before its prompt, so
the earlier reply is not sent again; it stays in the session, in ``cell.attempts``, and is one
of ``cell.conversation().alternatives(k)``. ``stop()`` stops every run in progress; the
``run()`` it stopped returns the grid (a stop is an outcome here; the cell says "stopped").

A failed cell never fails the others (its ``error`` says what happened, in words); a ``run()``
whose every cell failed raises ``GridFailed`` saying why, after they all settled.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from lion_nb.flow.grid_cell import GridCell
from lion_nb.flow.grid_shape import (
    GridFailed,
    GridIndexError,
    check_baseline,
    check_prompts,
    check_run,
    check_template,
    check_verb,
    columns_of,
    prompt_line,
)
from lion_nb.flow.node import Operation, Status
from lion_nb.tracebacks import flow_stop_line, mark_stopped

if TYPE_CHECKING:
    from lion_nb.models.imodel import iModel
    from lion_nb.session.branch import Branch
    from lion_nb.session.session import Session

__all__ = ["Grid", "GridCell", "GridFailed", "GridIndexError"]


class Grid:
    """Many prompts × many models: each cell (a prompt on a model) a real conversation.

    A row is a prompt; a column a model, the same model with other settings, or a model with
    its own system prompt. Every cell runs on its own branch in ``session`` (a fork of
    ``template``, or a new branch with the column's system prompt, else ``system``), so any
    cell can be opened and continued. The cells of one ``run()`` are the nodes of a ``Flow``:
    at most ``max_concurrent`` at once, in this kernel or on Ray. A failed cell never fails
    the others; its ``error`` says what happened. ``GridView`` shows a grid live.

    Args:
        prompts: One per row: text, or a dict of the verb's arguments
            (``{"instruction": ..., "context": ...}``).
        models: One per column: a list of ``iModel``s (labelled by their model names), or a
            dict ``{label: iModel}`` / ``{label: (iModel, system)}``.
        system: The system prompt of every column that gives none.
        template: A branch each cell forks (its history and system message); not together
            with a system prompt.
        verb: What each cell runs: ``"communicate"``, ``"run"``, ``"operate"`` or
            ``"ReAct"``.
        response_format: A pydantic model each cell's reply is parsed into (``cell.parsed``).
        baseline: The column (index or label) the others are compared with ("Diff").
        name: Names the grid's session and its cells' branches.

    Raises:
        GridShapeError: A shape that cannot run (no prompts, one model instead of a list, an
            unknown verb, a row argument the verb does not take, ``template`` with a system
            prompt, a baseline that is no column); raised here, before anything runs. It is
            a ``ConfigurationError`` and a ``ValueError``.

    Example:
        ```python
        grid = Grid(
            ["Name a colour.", "Name a fish."],
            {"cold": iModel(provider="local", temperature=0.2),
             "warm": iModel(provider="local", temperature=0.9)},
        )
        await grid.run(max_concurrent=4)
        grid[1, 0].text, grid[1, 0].first_token_ms
        pandas.DataFrame(grid.to_records())
        ```
    """

    def __init__(
        self,
        prompts: Iterable[str | Mapping[str, Any]],
        models: Any,
        *,
        system: str | None = None,
        template: Branch | None = None,
        verb: str = "communicate",
        response_format: Any = None,
        baseline: int | str = 0,
        name: str | None = None,
    ) -> None:
        self.verb = check_verb(verb)
        self.prompts: list[str | dict[str, Any]] = check_prompts(prompts, self.verb)
        columns = columns_of(models)
        check_template(template, system, columns)
        self.labels: list[str] = [c.label for c in columns]
        self.models: list[iModel] = [c.model for c in columns]
        self.systems: list[str | None] = [c.system or system for c in columns]
        self.baseline: int = check_baseline(baseline, self.labels)
        self.system = system
        self.template = template
        self.response_format = response_format
        self.name = name
        self.session: Session = _session_for(template, name)
        self._cells = [
            [GridCell(i, j, label, self.prompt_text(i)) for j, label in enumerate(self.labels)]
            for i in range(len(self.prompts))
        ]
        self._listeners: list[Callable[[GridCell], Any]] = []
        self._runs: set[asyncio.Task[Any]] = set()
        self._in_flight: set[GridCell] = set()  # the cells of the runs in progress

    # ----- shape and cells ----------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, int]:
        """``(rows, columns)``: prompts by models."""
        return len(self.prompts), len(self.labels)

    def prompt_text(self, i: int) -> str:
        """Row ``i``'s prompt as one line of text (its instruction)."""
        self._check_row(i)
        return prompt_line(self.prompts[i])

    def cell(self, i: int, j: int) -> GridCell:
        """The cell of row ``i`` (a prompt) and column ``j`` (a model); ``grid[i, j]`` too.

        Raises:
            GridIndexError: No such row or column (an ``IndexError``, saying the grid's shape).
        """
        self._check_row(i)
        if isinstance(j, bool) or not isinstance(j, int) or not 0 <= j < self.shape[1]:
            raise GridIndexError(
                f"no column {j!r}: this grid has {self.shape[1]} (0 to {self.shape[1] - 1}: "
                f"{', '.join(self.labels)})"
            )
        return self._cells[i][j]

    def __getitem__(self, ij: tuple[int, int]) -> GridCell:
        if not isinstance(ij, tuple) or len(ij) != 2:
            raise GridIndexError(f"index a grid's cell as grid[row, column], not grid[{ij!r}]")
        return self.cell(*ij)

    def cells(self) -> list[GridCell]:
        """Every cell, row by row."""
        return [c for row in self._cells for c in row]

    def row(self, i: int) -> list[GridCell]:
        """Row ``i``'s cells: one prompt on every model, left to right."""
        self._check_row(i)
        return list(self._cells[i])

    def column(self, j: int | str) -> list[GridCell]:
        """Column ``j``'s cells (by index or label): one model on every prompt, top to bottom."""
        j = self._column_index(j)
        return [row[j] for row in self._cells]

    def _check_row(self, i: int) -> None:
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(self.prompts):
            raise GridIndexError(
                f"no row {i!r}: this grid has {len(self.prompts)} prompt(s) "
                f"(rows 0 to {len(self.prompts) - 1})"
            )

    def _column_index(self, j: int | str) -> int:
        if isinstance(j, str) and j in self.labels:
            return self.labels.index(j)
        return self.cell(0, j).column  # type: ignore[arg-type]  # cell() says what is wrong

    # ----- watching -----------------------------------------------------------------------
    def subscribe(self, handler: Callable[[GridCell], Any]) -> Callable[[], None]:
        """Call ``handler(cell)`` whenever a cell's status changes or a re-run gives it a new
        branch; returns the function that ends the subscription. Streaming text is not sent
        here: follow ``cell.branch``'s ``StreamDelta`` while the cell runs."""
        self._listeners.append(handler)

        def unsubscribe() -> None:
            if handler in self._listeners:
                self._listeners.remove(handler)

        return unsubscribe

    def _notify(self, cell: GridCell) -> None:
        for handler in list(self._listeners):
            try:
                handler(cell)
            except Exception:  # a failing subscriber never changes the grid
                import logging  # lazy: only on a subscriber's failure

                logging.getLogger("lion_nb").exception("grid subscriber %r failed", handler)

    # ----- running ------------------------------------------------------------------------
    @property
    def is_running(self) -> bool:
        """Whether a ``run()`` of this grid is in progress."""
        return any(not t.done() for t in self._runs)

    async def run(
        self,
        max_concurrent: int = 8,
        engine: str = "local",
        *,
        cells: Iterable[tuple[int, int]] | None = None,
        rows: Iterable[int] | None = None,
        columns: Iterable[int | str] | None = None,
        ray_options: dict[str, Any] | None = None,
    ) -> Grid:
        """Run the cells that have not run, or afresh the ``cells`` / ``rows`` / ``columns``
        given (their union), at most ``max_concurrent`` at once, in this kernel
        (``engine="local"``) or on Ray (``"ray"``; ``ray_options`` as ``Flow.run``'s).
        Returns the grid once they settled, also when ``stop()`` stopped them."""
        check_run(max_concurrent, engine)
        chosen = self._chosen(cells, rows, columns)
        if not chosen:
            return self
        flow = self._flow_for(chosen)
        self._in_flight.update(chosen)
        task = asyncio.ensure_future(
            flow.run(max_concurrent=max_concurrent, engine=engine, ray_options=ray_options)
        )
        self._runs.add(task)
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError as stop:  # the caller was cancelled: Kernel -> Interrupt
            task.cancel()
            await asyncio.wait({task})
            mark_stopped(stop, flow_stop_line([c.node.status.value for c in chosen if c.node]))
            raise
        finally:
            self._runs.discard(task)
            self._in_flight.difference_update(chosen)
            for cell in chosen:
                cell.unwatch()
        if not task.cancelled():
            task.result()  # a bug in the flow itself surfaces here, never silently
        failed = [c for c in chosen if c.status == "failed"]
        if failed and len(failed) == len(chosen):
            raise GridFailed(failed)
        return self

    def stop(self) -> bool:
        """Stop every run in progress: running cells settle "stopped" keeping what they
        streamed, cells not started yet are run by the next ``run()``. False if none ran."""
        running = [t for t in self._runs if not t.done()]
        for task in running:
            task.cancel()
        return bool(running)

    def _chosen(self, cells: Any, rows: Any, columns: Any) -> list[GridCell]:
        """The cells a run runs (checked before anything changes)."""
        if cells is None and rows is None and columns is None:
            return [c for c in self.cells() if not c.ran and c not in self._in_flight]
        picked: dict[tuple[int, int], GridCell] = {}
        for ij in cells or ():
            if not isinstance(ij, tuple | list) or len(ij) != 2:
                raise GridIndexError(f"cells= takes (row, column) pairs, not {ij!r}")
            picked[tuple(ij)] = self.cell(*ij)
        for i in rows or ():
            picked.update({(c.row, c.column): c for c in self.row(i)})
        for j in columns or ():
            picked.update({(c.row, c.column): c for c in self.column(j)})
        busy = [c.name() for c in picked.values() if c in self._in_flight]
        if busy:
            raise ValueError(
                f"{', '.join(busy)}: running now (or about to); wait for it or grid.stop() "
                "before running it again"
            )
        return sorted(picked.values(), key=lambda c: (c.row, c.column))

    def _flow_for(self, chosen: list[GridCell]) -> Any:
        from lion_nb.flow.graph import Flow  # lazy: the flow loads the verbs' table

        flow = Flow(self.session, name=self.name)
        by_node: dict[Any, GridCell] = {}
        for cell in chosen:
            new_branch = self._branch_for(cell)
            changed = new_branch or cell.status != "pending"
            cell.reset()
            cell.status = "pending"
            node = flow.add(
                self.verb, branch=cell.branch, node_name=cell.name(), **self._arguments(cell.row)
            )
            cell.node = node
            by_node[node.id] = cell
            cell.watch_first_delta()
            if changed:
                self._notify(cell)
        flow.subscribe(lambda node: self._on_node(by_node[node.id], node))
        return flow

    def _branch_for(self, cell: GridCell) -> bool:
        """Give ``cell`` the branch its run runs on: its first, or a new fork for a cell that
        has run (see the module); True when the branch is new."""
        if cell.branch is not None and not cell.ran:
            return False  # it never ran there (a stop came first): run it there now
        if cell.branch is None:
            branch = self._first_branch(cell)
        else:
            branch = _fork_before(cell.attempts[0], cell.base_length, self._branch_name(cell, 1))
            branch.chat_model = self.models[cell.column]
            cell.attempt += 1
        cell.branch = branch
        cell.attempts.append(branch)
        cell.base_length = len(branch.messages)
        return True

    def _first_branch(self, cell: GridCell) -> Branch:
        name = self._branch_name(cell, 0)
        model = self.models[cell.column]
        if self.template is not None:
            branch = self.template.fork(name=name)
            branch.chat_model = model
            return branch
        return self.session.new_branch(
            system=self.systems[cell.column], chat_model=model, name=name
        )

    def _branch_name(self, cell: GridCell, more: int) -> str:
        title = prompt_line(self.prompts[cell.row], limit=40)
        again = f" (run {cell.attempt + 1 + more})" if more else ""
        return f"{self.name + ': ' if self.name else ''}{cell.label} · {title}{again}"

    def _arguments(self, i: int) -> dict[str, Any]:
        prompt = self.prompts[i]
        arguments = dict(prompt) if isinstance(prompt, dict) else {"instruction": prompt}
        if self.response_format is not None:
            arguments.setdefault("response_format", self.response_format)
        return arguments

    def _on_node(self, cell: GridCell, node: Operation) -> None:
        if node.status is Status.RUNNING and cell.status != "running":
            cell.started()
            cell.status = "running"
            self._notify(cell)
        elif node.status.settled:
            cell.unwatch()
            cell.settle(node)
            self._notify(cell)

    # ----- reading ------------------------------------------------------------------------
    def to_records(self) -> list[dict[str, Any]]:
        """One flat dict per cell, row by row (``pandas.DataFrame(grid.to_records())``)."""
        return [c.record() for c in self.cells()]

    def __repr__(self) -> str:
        counts: dict[str, int] = {}
        for cell in self.cells():
            counts[cell.status] = counts.get(cell.status, 0) + 1
        summary = ", ".join(f"{n} {s}" for s, n in counts.items())
        rows, cols = self.shape
        return f"<Grid{' ' + self.name if self.name else ''} {rows}×{cols}: {summary}>"


def _session_for(template: Branch | None, name: str | None) -> Session:
    from lion_nb.session.session import Session  # lazy: as the flow's own modules do

    if template is not None and template.session is not None:
        return template.session
    session = Session(name=name)
    if template is not None:
        session.include_branches(template)
    return session


def _fork_before(first: Branch, base_length: int, name: str) -> Branch:
    """A new branch holding ``first``'s first ``base_length`` messages (the template's, the
    system message): a fork of it before the cell's prompt, linked to it (``forked_from``), so
    ``Conversation`` finds it among ``first``'s alternatives."""
    if base_length:
        return first.fork(base_length - 1, name=name)
    fork = first.fork(name=name)  # nothing before the prompt: keep no message
    fork.clear_messages()
    fork.metadata["forked_from"] = {"branch_id": str(first.id), "at": None, "index": -1}
    return fork
