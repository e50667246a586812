"""The inspector's widget pieces: shared chrome, one timeline row, the pager, the fork panel.

Every widget of a kind shares one ``Layout`` and one style (a fresh ``Layout`` is ~1 KB of
comm state per widget, and an inspector page has 50 rows of buttons).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import ipywidgets

from lion_nb.render.chrome import fork_note_html, meta_html
from lion_nb.widgets.live import WidgetKit

if TYPE_CHECKING:
    from lion_nb.session.branch import Branch

__all__ = ["Chrome", "Pager", "Row", "fork_panel"]


class Chrome(WidgetKit):
    """``WidgetKit`` plus shared button styling."""

    def __init__(self) -> None:
        super().__init__()
        w = ipywidgets
        self.button_style = w.ButtonStyle()
        self.square = w.Layout(width="2.4em", min_width="2.4em", padding="0")
        self.auto = w.Layout(width="auto", flex="0 0 auto")
        self.row = w.Layout(width="100%", align_items="center")

    def button(self, *, square: bool = False, **kw: Any) -> Any:
        return ipywidgets.Button(
            layout=self.square if square else self.auto, style=self.button_style, **kw
        )

    def widgets(self) -> tuple[Any, ...]:
        return (self.button_style, self.square, self.auto, self.row, self.layout, self.style)

    def close(self) -> None:
        for widget in self.widgets():
            widget.close()


class Row:
    """The widgets of one visible row, reused across pages: expand toggle, summary, "Fork
    here" (a fixed column at the right), and the detail (made on first expansion; most rows
    are never expanded).

    The row is one box (``cell``) whose children change when it expands; the page's list of
    rows stays the same, so expanding one row re-renders no other row (an open "What the model
    saw" elsewhere stays open)."""

    __slots__ = ("box", "cell", "chrome", "detail", "fork", "index", "summary", "toggle")

    def __init__(
        self, chrome: Chrome, on_toggle: Callable[[int], Any], on_fork: Callable[[int], Any]
    ) -> None:
        self.chrome = chrome
        self.index = -1
        self.toggle = chrome.button(
            square=True, description="▸", tooltip="Expand", _dom_classes=("lion-tl-toggle",)
        )
        self.summary = chrome.html("", ("lion-tl-summary",))
        self.fork = chrome.button(
            description="Fork here",
            icon="code-fork",
            tooltip="Fork the branch at this message",
            _dom_classes=("lion-tl-fork",),
        )
        self.detail: Any = None
        self.box = ipywidgets.HBox(
            [self.toggle, self.summary, self.fork],
            layout=chrome.row,
            _dom_classes=("lion-tl-line",),
        )
        self.cell = chrome.vbox([self.box], ("lion-tl-item",))
        self.toggle.on_click(lambda _b: on_toggle(self.index))
        self.fork.on_click(lambda _b: on_fork(self.index))

    def show(self, index: int, summary: str, detail: str | None) -> Any:
        """Fill the row (the detail only when expanded); returns its box to place."""
        self.index = index
        if self.summary.value != summary:
            self.summary.value = summary
        description = "▸" if detail is None else "▾"
        if self.toggle.description != description:
            self.toggle.description = description
        children: tuple[Any, ...] = (self.box,)
        if detail is not None:
            if self.detail is None:
                self.detail = self.chrome.html("", ("lion-tl-detail-w",))
            if self.detail.value != detail:
                self.detail.value = detail
            children = (self.box, self.detail)
        if self.cell.children != children:
            self.cell.children = children
        return self.cell

    def close(self) -> None:
        for w in (self.toggle, self.summary, self.fork, self.detail, self.box, self.cell):
            if w is not None:
                w.close()


class Pager:
    """First / previous / position / next / last, go to message #, role filter, collapse."""

    def __init__(self, chrome: Chrome, filters: Iterable[str]) -> None:
        w = ipywidgets
        self.first = chrome.button(square=True, icon="angle-double-left", tooltip="First page")
        self.prev = chrome.button(square=True, icon="angle-left", tooltip="Previous page")
        self.next = chrome.button(square=True, icon="angle-right", tooltip="Next page")
        self.last = chrome.button(square=True, icon="angle-double-right", tooltip="Last page")
        self.label = chrome.html("", ("lion-tl-page",))
        self.goto = w.BoundedIntText(
            value=0,
            min=0,
            max=0,
            description="#",
            tooltip="Message number to show",
            style={"description_width": "1.2em"},
            layout=w.Layout(width="7em"),
        )
        self.go = chrome.button(description="Go", tooltip="Show and expand this message")
        self.filter = w.Dropdown(options=list(filters), value="all", layout=w.Layout(width="8em"))
        self.collapse = chrome.button(description="Collapse all")
        self.box = w.HBox(
            [
                self.first,
                self.prev,
                self.label,
                self.next,
                self.last,
                self.goto,
                self.go,
                self.filter,
                self.collapse,
            ],
            layout=w.Layout(align_items="center", flex_flow="row nowrap"),
            _dom_classes=("lion-tl-pager",),
        )

    def update(self, text: str, *, at_start: bool, at_end: bool, last_index: int) -> None:
        self.label.value = meta_html(text, inline=True)
        self.first.disabled = self.prev.disabled = at_start
        self.next.disabled = self.last.disabled = at_end
        self.goto.max = max(0, last_index)

    def close(self) -> None:
        for widget in (
            self.first,
            self.prev,
            self.next,
            self.last,
            self.label,
            self.goto,
            self.go,
            self.filter,
            self.collapse,
            self.box,
        ):
            widget.close()


def fork_panel(origin: Branch, forked: Branch, chrome: Chrome) -> Any:
    """A fork, shown to be continued: its chat view, and a button to compare it with its
    origin side by side."""
    from lion_nb.widgets.chat_view import BranchView

    compare = chrome.button(
        description="Compare with origin", icon="columns", _dom_classes=("lion-tl-compare",)
    )
    panel = ipywidgets.VBox(
        [
            chrome.html(fork_note_html(forked.name, len(forked.messages))),
            # only what is added from now on: a long history is in the timeline already
            BranchView(forked, height="320px", history=False),
            compare,
        ],
        _dom_classes=("lion-tl-fork-panel",),
    )

    def show_compare(_b: Any) -> None:
        from lion_nb.widgets.compare_view import CompareView

        compare.disabled = True
        panel.children = (*panel.children, CompareView(origin, forked))

    compare.on_click(show_compare)
    return panel
