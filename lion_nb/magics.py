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
"""

from __future__ import annotations

import re
import shlex
from typing import Any

__all__ = ["DEFAULT_BRANCH", "interpolate", "register"]

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
    import argparse

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
    p.add_argument("--model", metavar="SPEC", help='e.g. "openai/gpt-4.1-mini", "local"')
    p.add_argument("--system", metavar="TEXT", help="system message of a new branch")
    p.add_argument("--wait", action="store_true", help="block until the reply is complete")
    p.add_argument("--height", default="420px", help="height of the view")
    p.set_defaults(verb="communicate")
    return p


def _branch_for(ns: dict[str, Any], args: Any) -> Any:
    from lion_nb.models.imodel import iModel
    from lion_nb.session.branch import Branch

    if not args.branch.isidentifier():
        raise MagicUsageError(f"%%lion: --branch must be a variable name, not {args.branch!r}")
    model = iModel.from_spec(args.model) if args.model else None
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
    args = _parser().parse_args(shlex.split(line))
    text = interpolate(cell, ns).strip()
    if not text:
        raise MagicUsageError("%%lion: the cell is empty; write the prompt below the magic line")
    branch, model = _branch_for(ns, args)
    from lion_nb.widgets.chat_view import BranchView

    kwargs = {"chat_model": model} if model is not None else {}
    view = BranchView(branch, verb=args.verb, verb_kwargs=kwargs, height=args.height, history=False)
    return view, text, args.wait


def register(ipython: Any) -> None:
    """Register ``%%lion`` on an IPython shell (``%load_ext lion_nb`` calls this)."""
    from IPython.core.error import UsageError
    from IPython.display import display

    from lion_nb.sync import run_sync

    def lion_magic(line: str, cell: str) -> None:
        try:
            view, text, wait = lion(line, cell, ipython.user_ns)
        except MagicUsageError as exc:
            raise UsageError(str(exc)) from None
        display(view)
        try:
            # Running the cell again while its reply streams: stop that run, then this one.
            view.send(text, stop_others=True)
        except RuntimeError:  # no running loop (terminal IPython): run it to the end here
            run_sync(view.asend(text))
            return
        if wait:
            run_sync(view.wait())

    lion_magic.__doc__ = _parser().format_help()
    ipython.register_magic_function(lion_magic, magic_kind="cell", magic_name="lion")
