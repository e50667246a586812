"""Live notebook views. The chat, ReAct-rounds, parse, flow and compare views and the
progression inspector's timeline run on one front-end module (``widgets/lion_nb.js``, through
anywidget: no build step); the inspector holds its timeline and its fork panels in an
ipywidgets 8 box. They work in JupyterLab 4, Notebook 7, VS Code and Colab. Thin:
each view's state is a view model in ``lion_nb.viewmodels`` and its HTML comes from
``lion_nb.render``; a widget only maps the one to the other. Names resolve lazily so importing
the package loads no ipywidgets until a view is used."""

from __future__ import annotations

from importlib import import_module
from typing import Any

__all__ = [
    "BranchView",
    "CompareView",
    "LiveConfig",
    "LiveMessage",
    "ParseView",
    "ProgressionInspector",
    "ReActRoundsView",
    "inspect",
    "view",
]

_LAZY = {
    "BranchView": "lion_nb.widgets.chat_view",
    "view": "lion_nb.widgets.chat_view",
    "LiveConfig": "lion_nb.widgets.live",
    "LiveMessage": "lion_nb.widgets.live",
    "ProgressionInspector": "lion_nb.widgets.inspector",
    "inspect": "lion_nb.widgets.inspector",
    "ReActRoundsView": "lion_nb.widgets.rounds_view",
    "ParseView": "lion_nb.widgets.parse_view",
    "CompareView": "lion_nb.widgets.compare_view",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'lion_nb.widgets' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
