"""``CompareView``: two branches side by side — the shared history once (collapsed), then the
turns aligned, differing ones highlighted, with tokens and latency per side.

    fork = branch.fork(3)              # or "Fork here" in the inspector
    await fork.communicate("Try it another way")
    CompareView(branch, fork)

It follows both branches: a new message or a finished run re-renders the comparison (at most
``1 / refresh_interval`` times a second). The alignment and figures come from ``viewmodels.compare``, the HTML from ``render.compare``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import ipywidgets

from lion_nb.provenance import provenance_of
from lion_nb.render.compare import compare_html
from lion_nb.signals import MessageAdded, RunEnd, RunFailed, Signal
from lion_nb.viewmodels.compare import Alignment, align, message_content, side_stats
from lion_nb.widgets.live import WidgetKit
from lion_nb.widgets.viewbase import StaticFallback, Throttle

if TYPE_CHECKING:
    from lion_nb.session.branch import Branch

__all__ = ["CompareView"]


def _title(branch: Branch) -> str:
    return branch.name or f"Branch {str(branch.id)[:8]}"


class CompareView(StaticFallback, ipywidgets.VBox):
    """``branch_a`` on the left, ``branch_b`` on the right."""

    def __init__(
        self, branch_a: Branch, branch_b: Branch, *, refresh_interval: float = 0.25
    ) -> None:
        self.branch_a = branch_a
        self.branch_b = branch_b
        self.closed = False
        # run durations make the latency figures exact; tables start recording now if new
        self._tables = (provenance_of(branch_a), provenance_of(branch_b))
        self._kit = WidgetKit()
        self._style = self._kit.html(self.style_html())
        self._body = self._kit.html("")
        super().__init__(
            children=(self._style, self._body), _dom_classes=("lion-view", "lion-compare-box")
        )
        self._refresh = Throttle(self._render, refresh_interval)
        self._unsubscribers: list[Callable[[], None]] = [
            b.subscribe((MessageAdded, RunEnd, RunFailed), self._on_signal)
            for b in (branch_a, branch_b)
        ]
        self._render()
        self._ready = True

    def alignment(self) -> Alignment:
        return align(self.branch_a, self.branch_b)

    def differing(self) -> list[int]:
        """Positions (after the shared history) of the turns that differ."""
        return [i for i, (_, _, kind) in enumerate(self.alignment().rows) if kind != "same"]

    def html(self) -> str:
        al = self.alignment()
        n = len(al.prefix)
        a_own = self.branch_a.messages[n:]
        b_own = self.branch_b.messages[n:]
        stats_a = side_stats(a_own, self.branch_a.messages, self._tables[0])
        stats_b = side_stats(b_own, self.branch_b.messages, self._tables[1])
        return compare_html(al, _title(self.branch_a), _title(self.branch_b), stats_a, stats_b)

    def on_redraw(self, handler: Callable[[str], Any]) -> None:
        """Call ``handler(html)`` each time the comparison is drawn anew (another view that
        shows this comparison, e.g. under a chat view, follows it this way)."""
        self._body.observe(lambda change: handler(change["new"]), names="value")

    def _on_signal(self, signal: Signal) -> None:
        if self.closed:
            return
        if isinstance(signal, MessageAdded):
            self._refresh.request()
        else:
            self._refresh.flush()
            self.refresh_static()

    def _render(self) -> None:
        if not self.closed:
            self._body.value = self.html()

    def static_html(self) -> str:
        return self.html()

    def static_text(self) -> str:
        al = self.alignment()
        lines = [
            f"{_title(self.branch_a)} | {_title(self.branch_b)}: {len(al.prefix)} shared "
            f"messages, {al.differing} differing turns"
        ]
        for x, y, kind in al.rows:
            left = " ".join(message_content(x)[1].split())[:60] if x is not None else "—"
            right = " ".join(message_content(y)[1].split())[:60] if y is not None else "—"
            lines.append(f"[{kind}] {left} | {right}")
        return "\n".join(lines)

    def _release(self) -> None:
        for unsubscribe in self._unsubscribers:
            unsubscribe()
        self._refresh.cancel()

    def _owned_widgets(self) -> Iterable[Any]:
        return (self._style, self._body, self._kit.layout, self._kit.style)

    def __repr__(self) -> str:
        return f"<CompareView {_title(self.branch_a)!r} vs {_title(self.branch_b)!r}>"
