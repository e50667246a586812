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

import types
import warnings
from importlib import import_module
from typing import TYPE_CHECKING, Any

from lion_nb import tokens  # the token values (light: json, dataclasses), made callable below

__version__ = "0.2.0"

_LAZY = {
    "Branch": "lion_nb.session.branch",
    "Session": "lion_nb.session.session",
    "iModel": "lion_nb.models.imodel",
    "Operation": "lion_nb.flow.node",
    "Grid": "lion_nb.flow.grid",
    "BranchView": "lion_nb.widgets.chat_view",
    "view": "lion_nb.widgets.views",
    "recover_branch": "lion_nb.session.recover",
    "ProgressionInspector": "lion_nb.widgets.inspector",
    "inspect": "lion_nb.widgets.inspector",
    "ReActRoundsView": "lion_nb.widgets.rounds_view",
    "ParseView": "lion_nb.widgets.parse_view",
    "CompareView": "lion_nb.widgets.compare_view",
    "FlowView": "lion_nb.widgets.flow_view",
    "GridView": "lion_nb.widgets.grid_view",
    "PromptView": "lion_nb.widgets.prompt_view",
    "prompt_view": "lion_nb.widgets.prompt_view",
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
    "Grid",
    "GridView",
    "Operation",
    "ParseView",
    "ProgressionInspector",
    "PromptView",
    "ReActRoundsView",
    "Session",
    "__version__",
    "cassette",
    "debug",
    "errors",
    "iModel",
    "inspect",
    "load_ipython_extension",
    "prompt_view",
    "recover_branch",
    "tokens",
    "use_cassette",
    "view",
]

if TYPE_CHECKING:
    from lion_nb import errors
    from lion_nb.cassettes.cassette import Cassette, cassette, use_cassette
    from lion_nb.flow.grid import Grid
    from lion_nb.flow.node import Operation
    from lion_nb.models.imodel import iModel
    from lion_nb.render.tokens_html import TokenView
    from lion_nb.session.branch import Branch
    from lion_nb.session.recover import recover_branch
    from lion_nb.session.session import Session
    from lion_nb.tracebacks import debug
    from lion_nb.widgets.chat_view import BranchView
    from lion_nb.widgets.compare_view import CompareView
    from lion_nb.widgets.flow_view import FlowView
    from lion_nb.widgets.grid_view import GridView
    from lion_nb.widgets.inspector import ProgressionInspector, inspect
    from lion_nb.widgets.parse_view import ParseView
    from lion_nb.widgets.prompt_view import PromptView, prompt_view
    from lion_nb.widgets.rounds_view import ReActRoundsView
    from lion_nb.widgets.views import view


def __getattr__(name: str) -> Any:
    if name == "errors":  # ``lion_nb.errors.CassetteMiss`` after a bare ``import lion_nb``
        return import_module("lion_nb.errors")
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
    # lazy: the magics import IPython, which ``import lion_nb`` never loads
    from lion_nb.magics import register

    register(ipython)


# ----- lion_nb.tokens(message): the token view --------------------------------------------

_MOVED_FROM_TOKENS = {  # deprecated old paths (one release): name -> (its module, its name)
    "TokenView": ("lion_nb.render.tokens_html", "TokenView"),
    "token_view": ("lion_nb.render.tokens_html", "TokenView"),
    "check_logprobs": ("lion_nb.models.logprobs", "check_logprobs"),
    "MAX_LOGPROBS": ("lion_nb.models.logprobs", "MAX_LOGPROBS"),
    "TokenDecoder": ("lion_nb.models.logprobs", "TokenDecoder"),
    "tokens_from_bytes": ("lion_nb.models.logprobs", "tokens_from_bytes"),
    "fit_tokens": ("lion_nb.models.logprobs", "fit_tokens"),
}


class _TokensModule(types.ModuleType):
    """``lion_nb.tokens``: the token values (``lion_nb/tokens.py``), callable as the token view.

    The call draws, so it belongs up here with the other views, not in a module of values.
    Names that moved up a layer (the view; the providers' log-probability helpers) still
    resolve for one release, with a ``DeprecationWarning`` naming their new path."""

    def __call__(self, message: Any) -> TokenView:
        """The token view of ``message`` (an ``AssistantResponse`` recorded with
        ``logprobs=K``): ``.rendered_html()`` draws each token tinted by its probability."""
        from lion_nb.render.tokens_html import TokenView  # lazy: import lion_nb loads no view

        return TokenView(message)

    def __getattr__(self, name: str) -> Any:
        if name not in _MOVED_FROM_TOKENS:
            raise AttributeError(f"module 'lion_nb.tokens' has no attribute {name!r}")
        module, new_name = _MOVED_FROM_TOKENS[name]
        use = "lion_nb.tokens(message)" if name == "token_view" else f"{module}.{new_name}"
        warnings.warn(
            f"lion_nb.tokens.{name} moved: use {use} (the old name goes in the next release)",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(import_module(module), new_name)


tokens.__class__ = _TokensModule
