"""``CompareView``: two branches side by side — the shared history once (collapsed), then the
turns aligned, differing ones highlighted, with tokens and latency per side.

    fork = branch.fork(3)              # or "Fork here" in the inspector
    await fork.communicate("Try it another way")
    CompareView(branch, fork)

It follows both branches: a new message or a finished run re-renders the comparison (at most
``1 / refresh_interval`` times a second), sent to the front end (``widgets/lion_nb.js``, kind
``compare``) as one part on the view's channel when it changed. It does not stream: it changes
only when a message is recorded. The alignment and figures come from ``viewmodels.compare``, the
HTML from ``render.compare``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lion_nb.provenance import provenance_of
from lion_nb.render.compare import compare_html
from lion_nb.signals import MessageAdded, RunEnd, RunFailed, Signal
from lion_nb.viewmodels.compare import Alignment, align, message_content, side_stats
from lion_nb.widgets.channel import Op
from lion_nb.widgets.front import Front
from lion_nb.widgets.protocol import put_op

if TYPE_CHECKING:
    from lion_nb.session.branch import Branch

__all__ = ["CompareView"]


def _title(branch: Branch) -> str:
    return branch.name or f"Branch {str(branch.id)[:8]}"


class CompareView(Front):
    """Two branches side by side: ``branch_a`` on the left, ``branch_b`` on the right.

    The shared history is shown once (collapsed), then the turns aligned, the differing ones
    highlighted, with tokens and latency per side. It follows both branches and redraws when
    a message is recorded or a run ends (it does not stream).

    Example:
        ```python
        fork = branch.fork(3)
        await fork.communicate("Try it another way")
        CompareView(branch, fork)
        ```
    """

    def __init__(
        self,
        branch_a: Branch,
        branch_b: Branch,
        *,
        # 4 a second, not MAX_RATE: each update re-renders and re-aligns the whole
        # comparison, and it changes only when a message is recorded (it does not stream)
        refresh_interval: float = 0.25,
        titles: tuple[str, str] | None = None,
    ) -> None:
        """``titles``: what the two columns are called (default: each branch's name, else
        "Branch <id>"; a chat view names them "Alternative 1", "Alternative 2")."""
        super().__init__(kind="compare-box")
        self.titles = titles or (_title(branch_a), _title(branch_b))
        self.channel.interval = refresh_interval  # one throttle: the channel's
        self.branch_a = branch_a
        self.branch_b = branch_b
        # run durations make the latency figures exact; tables start recording now if new
        self._tables = (provenance_of(branch_a), provenance_of(branch_b))
        self._shown = ""
        self._redraw: list[Callable[[str], Any]] = []
        self._unsubscribers: list[Callable[[], None]] = [
            b.subscribe((MessageAdded, RunEnd, RunFailed), self._on_signal)
            for b in (branch_a, branch_b)
        ]
        self._render()
        self.sync_state(send=True)  # the comm opened with empty parts
        self._ready = True

    def alignment(self) -> Alignment:
        """The two branches aligned now: the shared prefix, then a row per position marked
        ``"same"``, ``"changed"``, ``"added"`` or ``"missing"``."""
        return align(self.branch_a, self.branch_b)

    def differing(self) -> list[int]:
        """Positions (after the shared history) of the turns that differ."""
        return [i for i, (_, _, kind) in enumerate(self.alignment().rows) if kind != "same"]

    def html(self) -> str:
        """The comparison as HTML (sanitized, from ``render.compare``), with each side's
        token and latency figures."""
        al = self.alignment()
        n = len(al.prefix)
        a_own = self.branch_a.messages[n:]
        b_own = self.branch_b.messages[n:]
        stats_a = side_stats(a_own, self.branch_a.messages, self._tables[0])
        stats_b = side_stats(b_own, self.branch_b.messages, self._tables[1])
        return compare_html(al, *self.titles, stats_a, stats_b)

    def on_redraw(self, handler: Callable[[str], Any]) -> None:
        """Call ``handler(html)`` each time the comparison is drawn anew (another view that
        shows this comparison, e.g. under a chat view, follows it this way)."""
        self._redraw.append(handler)

    def _on_signal(self, signal: Signal) -> None:
        if self.closed:
            return
        if isinstance(signal, MessageAdded):
            self.channel.stream("compare", self._ops)  # throttled by the channel
        else:
            self._render()
            self.refresh_static()

    def _render(self) -> None:
        self.channel.forget("compare")
        ops = self._ops()
        if ops:
            self.channel.push(*ops)
        self.sync_state()

    def _ops(self) -> list[Op]:
        if self.closed:
            return []
        html_ = self.html()
        if html_ == self._shown:
            return []
        self._shown = html_
        for handler in self._redraw:
            handler(html_)
        return [put_op("compare", html_)]

    def state_parts(self) -> list[list[str]]:
        """The one part the page shows: ``[["compare", html]]``."""
        return [["compare", self._shown]]

    def static_html(self) -> str:
        """The comparison as HTML for a saved notebook (``html()``)."""
        return self.html()

    def static_text(self) -> str:
        """The comparison as plain text: a summary line, then a line per aligned turn."""
        al = self.alignment()
        lines = [
            f"{self.titles[0]} | {self.titles[1]}: {len(al.prefix)} shared "
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
        self.channel.forget("compare")

    def __repr__(self) -> str:
        return f"<CompareView {self.titles[0]!r} vs {self.titles[1]!r}>"
