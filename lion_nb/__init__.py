"""lion_nb: a Jupyter-first toolkit for conversations with language models.

    from lion_nb import Branch, iModel
    branch = Branch(system="Be brief.", chat_model=iModel(provider="scripted", replies=["Hi!"]))
    await branch.communicate("Hello")

Public names resolve lazily so ``import lion_nb`` loads no operation, provider, widget, rich or
IPython module.

In IPython and Jupyter a lion_nb error prints a few lines (what happened, the fix, your line) and
a stopped call one line; ``lion_nb.debug()`` (or ``%xmode Verbose``) shows full tracebacks,
``lion_nb.debug(False)`` the short ones again.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.2.0"

_LAZY = {
    "Branch": "lion_nb.session.branch",
    "Session": "lion_nb.session.session",
    "iModel": "lion_nb.models.imodel",
    "Operation": "lion_nb.flow.node",
    "BranchView": "lion_nb.widgets.chat_view",
    "view": "lion_nb.widgets.chat_view",
    "recover_branch": "lion_nb.persist",
    "ProgressionInspector": "lion_nb.widgets.inspector",
    "inspect": "lion_nb.widgets.inspector",
    "ReActRoundsView": "lion_nb.widgets.rounds_view",
    "ParseView": "lion_nb.widgets.parse_view",
    "CompareView": "lion_nb.widgets.compare_view",
    "FlowView": "lion_nb.widgets.flow_view",
    "cassette": "lion_nb.cassettes.cassette",
    "use_cassette": "lion_nb.cassettes.cassette",
    "Cassette": "lion_nb.cassettes.cassette",
    "debug": "lion_nb.tracebacks",
}

__all__ = [
    "Branch",
    "BranchView",
    "Cassette",
    "CompareView",
    "FlowView",
    "Operation",
    "ParseView",
    "ProgressionInspector",
    "ReActRoundsView",
    "Session",
    "__version__",
    "cassette",
    "debug",
    "errors",
    "iModel",
    "inspect",
    "load_ipython_extension",
    "recover_branch",
    "tokens",
    "use_cassette",
    "view",
]

if TYPE_CHECKING:
    from lion_nb import errors, tokens
    from lion_nb.cassettes.cassette import Cassette, cassette, use_cassette
    from lion_nb.flow.node import Operation
    from lion_nb.models.imodel import iModel
    from lion_nb.persist import recover_branch
    from lion_nb.session.branch import Branch
    from lion_nb.session.session import Session
    from lion_nb.tracebacks import debug
    from lion_nb.widgets.chat_view import BranchView, view
    from lion_nb.widgets.compare_view import CompareView
    from lion_nb.widgets.flow_view import FlowView
    from lion_nb.widgets.inspector import ProgressionInspector, inspect
    from lion_nb.widgets.parse_view import ParseView
    from lion_nb.widgets.rounds_view import ReActRoundsView


def __getattr__(name: str) -> Any:
    if name in ("errors", "tokens"):  # ``lion_nb.errors.CassetteMiss`` after a bare ``import
        # lion_nb``; ``lion_nb.tokens(message)``: the token view (the module is callable)
        return import_module(f"lion_nb.{name}")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'lion_nb' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext lion_nb`` registers the ``%%lion`` cell magic and ``%lion_cassette``."""
    from lion_nb.magics import register

    register(ipython)
