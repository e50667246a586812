"""``ReActRoundsView``: a ReAct / ReActStream run grouped into rounds as they happen.

    view = ReActRoundsView(branch)
    view                                   # then, in this or another cell:
    await branch.ReAct("...", tools=...)

Round N shows its analysis (streaming while the model writes it), the tool calls it asked for
side by side with their results as they arrive, and its status, duration and token usage. The
branch's earlier messages are shown as inferred rounds (``history=False`` hides them).

It runs on the same front end as the chat view (``widgets/lion_nb.js``): one part per run head
and per round, sent as ordered ops (``widgets.channel``); a change re-sends only the round that
changed, and streamed text is re-rendered at most ``1 / refresh_interval`` times a second. The
complete state is synced widget state too. The view model is ``viewmodels.rounds.RoundsModel``;
this class only maps its objects to parts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

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
from lion_nb.widgets.front import Front
from lion_nb.widgets.viewbase import Throttle

if TYPE_CHECKING:
    from lion_nb.session.branch import Branch

__all__ = ["ReActRoundsView"]

_SIGNALS = (RunStart, RunEnd, RunFailed, RoundStart, RoundEnd, MessageAdded, StreamDelta)


class ReActRoundsView(Front):
    """The rounds of ReAct runs on ``branch``, live. ``history=False`` hides the rounds
    inferred from messages recorded before the view was made."""

    def __init__(
        self,
        branch: Branch,
        *,
        history: bool = True,
        title: str | None = None,
        refresh_interval: float = 1 / 15,
    ) -> None:
        super().__init__(kind="rounds")
        self.branch = branch
        self.title = title or f"ReAct rounds — {branch.name or str(branch.id)[:8]}"
        self.model = RoundsModel.from_messages(branch.messages) if history else RoundsModel()
        self._html: dict[int, str] = {}  # id(Round | RunGroup) -> its part's HTML
        self._header = ""
        self._dirty: dict[int, Round | RunGroup] = {}
        self._refresh = Throttle(self._flush, refresh_interval)
        for group in self.model.runs:
            self._mark(group)
            for rnd in group.rounds:
                self._mark(rnd)
        self._unsubscribe: Callable[[], None] = branch.subscribe(_SIGNALS, self._on_signal)
        self._refresh.flush()
        self.sync_state(send=True)  # the comm opened with empty parts (as ParseView)
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
                self.sync_state()
                self.refresh_static()

    def _flush(self) -> None:
        if self.closed:
            return
        dirty, self._dirty = self._dirty, {}
        ops: list[dict[str, Any]] = []
        header = self._header_html()
        if header != self._header:
            self._header = header
            ops.append({"op": "put", "key": "header", "html": header, "before": None})
        order = [id(obj) for obj in self._ordered()]
        for key, obj in dirty.items():
            if isinstance(obj, RunGroup) and not shown(obj):
                continue  # a plain run (communicate) on the branch: not a ReAct round
            value = run_head_html(obj) if isinstance(obj, RunGroup) else round_html(obj)
            if self._html.get(key) == value:
                continue
            self._html[key] = value
            at = order.index(key) if key in order else len(order)
            later = [k for k in order[at + 1 :] if k in self._html]
            before = f"r{later[0]}" if later else None
            ops.append({"op": "put", "key": f"r{key}", "html": value, "before": before})
        if ops:
            self.channel.push(*ops)

    def state_parts(self) -> list[list[str]]:
        parts = [["header", self._header]]
        parts += [[f"r{id(o)}", self._html[id(o)]] for o in self._ordered() if id(o) in self._html]
        return parts

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

    def __repr__(self) -> str:
        return f"<ReActRoundsView of {self.branch!r} rounds={len(self.rounds)}>"
