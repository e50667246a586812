"""``ReActRoundsView``: a ReAct / ReActStream run grouped into rounds as they happen.

    view = ReActRoundsView(branch)
    view                                   # then, in this or another cell:
    await branch.ReAct("...", tools=...)

Round N shows its analysis (streaming while the model writes it), the tool calls it asked for
side by side with their results as they arrive, and its status, duration and token usage. The
branch's earlier messages are shown as inferred rounds (``history=False`` hides them).

One HTML widget per round: a change re-sends only the round that changed, and streamed text is
re-rendered at most ``1 / refresh_interval`` times a second. The view model is
``viewmodels.rounds.RoundsModel``; this class only maps its objects to widgets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import ipywidgets

from lion_nb.render.rounds_html import (
    analysis_text,
    round_html,
    rounds_header_html,
    rounds_html,
    run_head_html,
)
from lion_nb.signals import (
    MessageAdded,
    RoundEnd,
    RoundStart,
    RunEnd,
    RunFailed,
    RunStart,
    Signal,
    StreamDelta,
)
from lion_nb.viewmodels.rounds import Round, RoundsModel, RunGroup, shown
from lion_nb.widgets.live import WidgetKit
from lion_nb.widgets.viewbase import StaticFallback, Throttle

if TYPE_CHECKING:
    from lion_nb.session.branch import Branch

__all__ = ["ReActRoundsView"]

_SIGNALS = (RunStart, RunEnd, RunFailed, RoundStart, RoundEnd, MessageAdded, StreamDelta)


class ReActRoundsView(StaticFallback, ipywidgets.VBox):
    """The rounds of ReAct runs on ``branch``, live. ``history=False`` hides the rounds
    inferred from messages recorded before the view was made."""

    def __init__(
        self,
        branch: Branch,
        *,
        history: bool = True,
        title: str | None = None,
        refresh_interval: float = 0.1,
    ) -> None:
        self.branch = branch
        self.title = title or f"ReAct rounds — {branch.name or str(branch.id)[:8]}"
        self.model = RoundsModel.from_messages(branch.messages) if history else RoundsModel()
        self.closed = False
        self._kit = WidgetKit()
        self._style = self._kit.html(self.style_html())
        self._header = self._kit.html("")
        self._box = ipywidgets.VBox(_dom_classes=("lion-rounds-list",))
        self._widgets: dict[int, Any] = {}  # id(Round | RunGroup) -> HTML widget
        self._dirty: dict[int, Round | RunGroup] = {}
        super().__init__(
            children=(self._style, self._header, self._box),
            _dom_classes=("lion-view", "lion-rounds"),
        )
        self._refresh = Throttle(self._flush, refresh_interval)
        for group in self.model.runs:
            self._mark(group)
            for rnd in group.rounds:
                self._mark(rnd)
        self._unsubscribe: Callable[[], None] = branch.subscribe(_SIGNALS, self._on_signal)
        self._refresh.flush()
        self._ready = True

    # ----- live --------------------------------------------------------------------------
    def _mark(self, obj: Round | RunGroup) -> None:
        self._dirty[id(obj)] = obj

    def _on_signal(self, signal: Signal) -> None:
        if self.closed:
            return
        changed = self.model.on_signal(signal)
        if not changed:
            return
        for obj in changed:
            self._mark(obj)
        if isinstance(signal, StreamDelta):
            self._refresh.request()  # throttled: streamed analysis text
        else:
            self._refresh.flush()  # structure changed: show it now
            if isinstance(signal, RunEnd | RunFailed):
                self.refresh_static()

    def _flush(self) -> None:
        if self.closed:
            return
        dirty, self._dirty = self._dirty, {}
        new = False
        for key, obj in dirty.items():
            if isinstance(obj, RunGroup) and not shown(obj):
                continue  # a plain run (communicate) on the branch: not a ReAct round
            value = run_head_html(obj) if isinstance(obj, RunGroup) else round_html(obj)
            widget = self._widgets.get(key)
            if widget is None:
                self._widgets[key] = self._kit.html(value)
                new = True
            elif widget.value != value:
                widget.value = value
        if new:
            self._box.children = tuple(
                self._widgets[id(obj)] for obj in self._ordered() if id(obj) in self._widgets
            )
        self._header.value = self._header_html()

    def _ordered(self) -> list[Round | RunGroup]:
        out: list[Round | RunGroup] = []
        for group in self.model.runs:
            if shown(group):
                out.append(group)
                out.extend(group.rounds)
        return out

    def _header_html(self) -> str:
        return rounds_header_html(self.title, self.model.all_rounds())

    # ----- reading -----------------------------------------------------------------------
    @property
    def rounds(self) -> list[Round]:
        return self.model.all_rounds()

    def static_html(self) -> str:
        return rounds_html(self.model, header=self._header_html())

    def static_text(self) -> str:
        lines = [self.title]
        for group in filter(shown, self.model.runs):
            lines.append(f"{group.operation}: {group.status}")
            for rnd in group.rounds:
                title = "Answer" if rnd.final else f"Round {rnd.number}"
                actions = ", ".join(p.request.function for s in rnd.steps for p in s.actions)
                text = " ".join(analysis_text(s.analysis) for s in rnd.steps if s.analysis)
                lines.append(
                    f"  {title} [{rnd.status}] {text[:200]}" + (f" -> {actions}" if actions else "")
                )
        return "\n".join(lines)

    def _release(self) -> None:
        self._unsubscribe()
        self._refresh.cancel()

    def _owned_widgets(self) -> Iterable[Any]:
        return (
            *self._widgets.values(),
            self._style,
            self._header,
            self._box,
            self._kit.layout,
            self._kit.style,
        )

    def __repr__(self) -> str:
        return f"<ReActRoundsView of {self.branch!r} rounds={len(self.rounds)}>"
