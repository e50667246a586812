"""The ``%%lion`` cell magic: exploratory prompting from a notebook cell.

    %load_ext lion_nb

    %%lion --model openai/gpt-4.1-mini
    Summarise {report} in three bullet points.

The cell body is sent to a branch - ``communicate`` by default, ``--run`` streams a CLI agent,
``--react`` reasons and acts over rounds - and a live view of the exchange appears under the cell
(with Send/Stop for follow-ups). ``{name}`` (also ``{name.attr}``) is replaced by that variable
of the notebook; ``{{`` and ``}}`` are literal braces; anything else in braces (JSON, say) is left
alone. The branch lives in the notebook as a variable: ``--branch NAME`` (default
``lion_branch``) picks it, or creates it with ``--model`` and ``--system``.

The run is a background task owned by the view, so the cell returns at once and Stop works;
``--wait`` blocks until the reply is complete (for "Run All" notebooks whose next cells read it).

``%%lion --grid`` sends every line of the cell (one prompt a line) to every ``--model``
(repeat it, one per column: a spec such as ``openai/gpt-4.1-mini``, or the name of a notebook
variable holding an ``iModel``) as a ``lion_nb.Grid``, shows the grid's view and runs it in the
background (``--wait`` blocks); the grid is the cell's result (``_``), or the variable
``--name NAME``.

``--cassette PATH`` records the cell's model calls into a cassette, or replays them from it
(mode "auto", see ``lion_nb.cassette``). The line magic ``%lion_cassette PATH [--mode MODE]
[--speed SPEED]`` switches a cassette on for the rest of the notebook (``use_cassette``);
``%lion_cassette --off`` switches it off, ``%lion_cassette`` alone shows the one in force.
"""

from __future__ import annotations

import argparse
import re
import shlex
from contextlib import nullcontext
from typing import Any

from lion_nb.cassettes import active
from lion_nb.cassettes.cassette import MODES, Cassette, use_cassette
from lion_nb.models.imodel import iModel
from lion_nb.session.branch import Branch
from lion_nb.sync import run_sync
from lion_nb.tracebacks import mark_stopped

__all__ = ["DEFAULT_BRANCH", "interpolate", "lion_cassette", "register"]

DEFAULT_BRANCH = "lion_branch"

_FIELD = re.compile(r"\{\{|\}\}|\{([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\}")


class MagicUsageError(ValueError):
    """Bad ``%%lion`` options or an unknown ``{name}`` (shown without a traceback)."""


def interpolate(text: str, namespace: dict[str, Any]) -> str:
    """Replace ``{name}`` / ``{name.attr}`` with values from ``namespace``.

    Only identifiers in braces are fields, so JSON or code in a prompt passes through;
    ``{{``/``}}`` give literal braces. An unknown name is an error rather than a silent literal,
    because a prompt missing its data is worse than a prompt that does not run."""

    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        if token == "{{":
            return "{"
        if token == "}}":
            return "}"
        path = match.group(1).split(".")
        if path[0] not in namespace:
            raise MagicUsageError(
                f"{{{match.group(1)}}} in the cell: no variable {path[0]!r} in the notebook "
                "(write {{ and }} for literal braces)"
            )
        value = namespace[path[0]]
        for attr in path[1:]:
            try:
                value = getattr(value, attr)
            except AttributeError:
                raise MagicUsageError(
                    f"{{{match.group(1)}}}: {type(value).__name__} has no attribute {attr!r}"
                ) from None
        return value if isinstance(value, str) else str(value)

    return _FIELD.sub(replace, text)


def _parser() -> Any:
    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> Any:  # raise instead of exiting the kernel
            raise MagicUsageError(f"%%lion: {message}\n{self.format_usage()}")

    p = Parser(
        prog="%%lion",
        add_help=False,
        description="Send the cell to a branch and show a live view of the reply.",
    )
    verb = p.add_mutually_exclusive_group()
    verb.add_argument(
        "--run",
        action="store_const",
        dest="verb",
        const="run",
        help="stream a CLI agent's turn (branch.run)",
    )
    verb.add_argument(
        "--react",
        action="store_const",
        dest="verb",
        const="ReAct",
        help="reason and act over rounds (branch.ReAct)",
    )
    verb.add_argument(
        "--operate",
        action="store_const",
        dest="verb",
        const="operate",
        help="one structured turn with tools (branch.operate)",
    )
    p.add_argument(
        "--branch",
        default=DEFAULT_BRANCH,
        metavar="NAME",
        help=f"notebook variable holding the Branch (default {DEFAULT_BRANCH})",
    )
    p.add_argument(
        "--model",
        metavar="SPEC",
        action="append",
        help='e.g. "openai/gpt-4.1-mini", "local"; with --grid once per column (or a variable)',
    )
    p.add_argument(
        "--grid",
        action="store_true",
        help="one prompt per line, run on every --model: a lion_nb.Grid and its view",
    )
    p.add_argument("--name", metavar="NAME", help="with --grid: the variable holding the grid")
    p.add_argument(
        "--max-concurrent",
        type=int,
        default=8,
        metavar="N",
        help="with --grid: at most N cells at once (default 8)",
    )
    p.add_argument("--system", metavar="TEXT", help="system message of a new branch")
    p.add_argument("--wait", action="store_true", help="block until the reply is complete")
    p.add_argument("--height", default="420px", help="height of the view")
    p.add_argument(
        "--cassette",
        metavar="PATH",
        help="record this cell's model calls into PATH, or replay them from it (mode auto)",
    )
    p.set_defaults(verb="communicate")
    return p


def _cassette_parser() -> Any:
    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> Any:
            raise MagicUsageError(f"%lion_cassette: {message}\n{self.format_usage()}")

    p = Parser(
        prog="%lion_cassette",
        add_help=False,
        description="Record or replay every model call of the notebook from now on.",
    )
    p.add_argument("path", nargs="?", metavar="PATH", help="the cassette file (.jsonl)")
    p.add_argument("--mode", default="auto", choices=MODES, help="auto, record, replay or off")
    p.add_argument(
        "--speed",
        default="1",
        metavar="SPEED",
        help="1 = the recorded pace, 10 = ten times faster, 0 or none = at once",
    )
    p.add_argument("--off", action="store_true", help="switch the notebook's cassette off")
    return p


def _speed(text: str) -> float | None:
    if text.strip().lower() in ("none", "0", "instant"):
        return None
    try:
        value = float(text)
    except ValueError:
        raise MagicUsageError(
            f"%lion_cassette: --speed must be a number or 'none', not {text!r}"
        ) from None
    if value < 0:
        raise MagicUsageError(f"%lion_cassette: --speed must not be negative, not {text!r}")
    return value


def lion_cassette(line: str) -> Any:
    """The line magic's body, independent of IPython: installs (or removes) the notebook-wide
    cassette and returns it (None when switched off)."""
    args = _cassette_parser().parse_args(shlex.split(line))
    if args.off:
        if args.path:
            raise MagicUsageError("%lion_cassette: give a PATH or --off, not both")
        return use_cassette(None)
    if not args.path:
        return active.current()
    return use_cassette(args.path, mode=args.mode, speed=_speed(args.speed))


def _branch_for(ns: dict[str, Any], args: Any) -> Any:
    if not args.branch.isidentifier():
        raise MagicUsageError(f"%%lion: --branch must be a variable name, not {args.branch!r}")
    specs = args.model or []
    if len(specs) > 1:
        raise MagicUsageError("%%lion: one --model for a branch (several need --grid)")
    model = iModel.from_spec(specs[0]) if specs else None
    existing = ns.get(args.branch)
    if existing is None:
        branch = Branch(system=args.system, chat_model=model, name=args.branch)
        ns[args.branch] = branch
        return branch, None
    if not isinstance(existing, Branch):
        raise MagicUsageError(f"%%lion: {args.branch} is a {type(existing).__name__}, not a Branch")
    if args.system is not None:
        current = existing.system.system if existing.system is not None else None
        if current != args.system:
            raise MagicUsageError(
                f"%%lion: {args.branch} already exists; --system only applies when the branch "
                "is created (use another --branch name, or del the variable)"
            )
    return existing, model


def lion(line: str, cell: str, ns: dict[str, Any]) -> Any:
    """The magic's body, independent of IPython (tests call it directly)."""
    view, text, args = _prepare(line, cell, ns)
    return view, text, args.wait


def _prepare(line: str, cell: str, ns: dict[str, Any]) -> Any:
    args = _parser().parse_args(shlex.split(line))
    if args.grid:
        return _prepare_grid(args, cell, ns)
    if args.name is not None:
        raise MagicUsageError("%%lion: --name names a grid; use it with --grid")
    text = interpolate(cell, ns).strip()
    if not text:
        raise MagicUsageError("%%lion: the cell is empty; write the prompt below the magic line")
    branch, model = _branch_for(ns, args)
    # lazy: the chat view, ipywidgets and anywidget (~300 ms), not needed by %lion_cassette
    from lion_nb.widgets.chat_view import BranchView

    kwargs = {"chat_model": model} if model is not None else {}
    view = BranchView(branch, verb=args.verb, verb_kwargs=kwargs, height=args.height, history=False)
    return view, text, args


def _prepare_grid(args: Any, cell: str, ns: dict[str, Any]) -> Any:
    """The ``--grid`` form: the grid (made, not run yet) and what shows it."""
    from lion_nb.flow.grid import Grid  # lazy: the flow engine, only for --grid

    prompts = [interpolate(line, ns).strip() for line in cell.splitlines()]
    prompts = [p for p in prompts if p]
    if not prompts:
        raise MagicUsageError("%%lion --grid: the cell is empty; write one prompt per line")
    if not args.model:
        raise MagicUsageError(
            "%%lion --grid: give the columns' models with --model, once per column "
            "(e.g. --model openai/gpt-4.1-mini --model local)"
        )
    if args.name is not None and not args.name.isidentifier():
        raise MagicUsageError(f"%%lion: --name must be a variable name, not {args.name!r}")
    if args.max_concurrent < 1:
        raise MagicUsageError("%%lion: --max-concurrent must be at least 1")
    columns: dict[str, iModel] = {}
    for spec in args.model:
        label = spec if spec not in columns else f"{spec} ({len(columns) + 1})"
        columns[label] = _model_of(spec, ns)
    try:
        grid = Grid(prompts, columns, system=args.system, verb=args.verb, name=args.name)
    except ValueError as exc:  # a grid's shape, said in words
        raise MagicUsageError(f"%%lion --grid: {exc}") from None
    return grid, _grid_display(grid), args


def _model_of(spec: str, ns: dict[str, Any]) -> iModel:
    """A notebook variable holding an ``iModel``, else a spec (``provider/model``)."""
    value = ns.get(spec) if spec.isidentifier() else None
    return value if isinstance(value, iModel) else iModel.from_spec(spec)


def _grid_display(grid: Any) -> Any:
    """The grid's view; a text table of its cells, updated as they settle, where this
    installation has no grid view."""
    try:
        # lazy: the views and ipywidgets (~300 ms)
        from lion_nb.widgets.grid_view import GridView  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return GridTable(grid)
    return GridView(grid)


class GridTable:
    """A grid's cells as a plain text table (prompt, column, status, text, figures)."""

    def __init__(self, grid: Any) -> None:
        self.grid = grid

    def follow(self, handle: Any) -> None:
        """Redraw through ``handle`` (IPython's ``DisplayHandle``) whenever a cell settles."""

        def redraw(cell: Any) -> None:
            if cell.status not in ("pending", "running"):
                handle.update(self)

        self.grid.subscribe(redraw)

    def __repr__(self) -> str:
        return records_table(self.grid.to_records())

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


def records_table(records: list[dict[str, Any]], width: int = 40) -> str:
    """``Grid.to_records()`` as aligned text, one line per cell."""

    def cut(value: Any) -> str:
        text = " ".join(str(value).split()) if value is not None else ""
        return text if len(text) <= width else text[: width - 1] + "…"

    def ms(value: Any) -> str:
        return f"{value:.0f} ms" if value is not None else ""

    head = ("prompt", "column", "status", "text", "latency", "first token", "error")
    rows = [head] + [
        (
            cut(r["prompt"]),
            cut(r["label"]),
            r["status"],
            cut(r["text"]),
            ms(r["latency_ms"]),
            ms(r["first_token_ms"]),
            cut(r["error"]),
        )
        for r in records
    ]
    widths = [max(len(row[k]) for row in rows) for k in range(len(head))]
    return "\n".join(
        "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in rows
    )


# What Kernel -> Interrupt prints in a ``%%lion --wait`` cell: the wait ends, not the reply
WAIT_INTERRUPTED = "stopped waiting — the reply goes on in the view (its Stop ends it)"
GRID_WAIT_INTERRUPTED = "stopped waiting — the grid goes on (grid.stop() or its view's Stop)"
_GRID_RUNS: set[Any] = set()  # the grids' background runs, held until they end


def run_grid(grid: Any, args: Any, tape: Any) -> Any:
    """Start the grid's run under ``tape`` (a background task, so the cell returns and Stop
    works; to the end with ``--wait``, or where no loop runs) and return the grid."""
    import asyncio  # lazy: as the module's other kernel-only imports

    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # no running loop (terminal IPython): run it to the end here
        with tape:
            run_sync(grid.run(max_concurrent=args.max_concurrent))
        return grid
    with tape:  # the task copies the context: the cassette stays in force for its calls
        task = loop.create_task(grid.run(max_concurrent=args.max_concurrent))
    _GRID_RUNS.add(task)
    task.add_done_callback(_grid_run_ended)
    if args.wait:
        try:
            run_sync(asyncio.wait({task}))
        except KeyboardInterrupt as stop:  # the wait ends; the grid's run goes on
            mark_stopped(stop, GRID_WAIT_INTERRUPTED)
            raise
        task.result()  # every cell failed: GridFailed says why, here
    return grid


def _grid_run_ended(task: Any) -> None:
    _GRID_RUNS.discard(task)
    if not task.cancelled():
        task.exception()  # retrieved: a grid whose every cell failed shows it in its cells


def register(ipython: Any) -> None:
    """Register ``%%lion`` and ``%lion_cassette`` on an IPython shell (``%load_ext lion_nb``
    calls this)."""
    # lazy: IPython (~45 ms in a plain process): the magics' bodies run without it (tests)
    from IPython.core.error import UsageError
    from IPython.display import display  # lazy: as the line above

    def lion_magic(line: str, cell: str) -> Any:
        try:
            view, text, args = _prepare(line, cell, ipython.user_ns)
        except MagicUsageError as exc:
            raise UsageError(str(exc)) from None
        # The view's run task is created inside the block, so it keeps the cassette (a task
        # copies the context it was created in) however long it streams after the cell returns.
        tape = Cassette(args.cassette) if args.cassette else nullcontext()
        if args.grid:
            grid, shown = view, text
            if isinstance(shown, GridTable):  # no grid view here: a table redrawn as cells end
                shown.follow(display(shown, display_id=True))
            else:
                display(shown)
            run_grid(grid, args, tape)
            if args.name:
                ipython.user_ns[args.name] = grid
                return None
            return grid  # the cell's result: ``_``
        display(view)
        with tape:
            try:
                # Running the cell again while its reply streams: stop that run, then this one.
                view.send(text, stop_others=True)
            except RuntimeError:  # no running loop (terminal IPython): run it to the end here
                run_sync(view.asend(text))
                return
            if args.wait:
                try:
                    run_sync(view.wait())
                except KeyboardInterrupt as stop:  # the wait ends; the view's run goes on
                    mark_stopped(stop, WAIT_INTERRUPTED)
                    raise

    def lion_cassette_magic(line: str) -> Any:
        try:
            return lion_cassette(line)
        except MagicUsageError as exc:
            raise UsageError(str(exc)) from None

    lion_magic.__doc__ = _parser().format_help()
    lion_cassette_magic.__doc__ = _cassette_parser().format_help()
    ipython.register_magic_function(lion_magic, magic_kind="cell", magic_name="lion")
    ipython.register_magic_function(
        lion_cassette_magic, magic_kind="line", magic_name="lion_cassette"
    )
