"""Test doubles of the chat view's old ipywidgets handles: ``view.status.value``,
``view.cassette_badge.value``, ``view._error.value`` (the chrome traits, counting a value set
but not sent yet) and ``view.send_button`` / ``view.stop_button`` (``disabled`` from the
view's state, ``click()`` doing what the page's click does).

They are test-side only: the view has no such widgets (the page draws its buttons and status
line from the chrome traits). ``install()`` puts them on ``BranchView`` for the test process
(a plugin of ``tests/conftest.py``); a test kernel calls it in its setup code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from lion_nb.widgets.chat_view import BranchView

__all__ = ["Button", "Value", "install"]


class Value:
    """``.value`` of one chrome trait of the view (``view.status.value``, ...)."""

    def __init__(self, view: BranchView, trait: str) -> None:
        self._view, self._trait = view, trait

    @property
    def value(self) -> Any:
        return self._view.chrome_value(self._trait)


class Button:
    """Send / Stop as a test drives them: ``disabled`` (from the view's state), ``click()``."""

    def __init__(self, view: BranchView, action: Callable[[], None], enabled: str) -> None:
        self._view, self._action, self._enabled = view, action, enabled

    @property
    def disabled(self) -> bool:
        if self._enabled == "send":
            return self._view.running
        return not self._view.runs.driving

    def click(self) -> None:
        self._action()


def _value(trait: str) -> property:
    return property(lambda view: Value(view, trait))


DOUBLES: dict[str, property] = {
    "status": _value("status_line"),
    "cassette_badge": _value("cassette"),
    "_error": _value("error_box"),
    "send_button": property(lambda view: Button(view, lambda: view.send(), "send")),
    "stop_button": property(lambda view: Button(view, view.stop, "stop")),
}


def install() -> None:
    """Give ``BranchView`` the doubles (idempotent)."""
    from lion_nb.widgets.chat_view import BranchView  # lazy: ipywidgets and anywidget, ~0.5 s

    for name, double in DOUBLES.items():
        if name in vars(BranchView) and vars(BranchView)[name] is not double:
            raise RuntimeError(f"BranchView has its own {name!r}: a double would shadow it")
        setattr(BranchView, name, double)


@pytest.hookimpl
def pytest_configure(config: pytest.Config) -> None:
    install()
