"""ReAct rounds as a view model: signals (or recorded messages) -> runs -> rounds -> steps.

A round is: the instruction that opened it, then one step per assistant turn — the analysis
and the tool calls it asked for (side by side: they run concurrently), each with its response
once it arrives. Status, timing and usage per round come from ``RoundStart``/``RoundEnd`` and
the assistant messages' usage. ``RoundsModel.on_signal`` folds signals in as they happen and
says which rounds changed, so a live view re-renders only those; ``RoundsModel.from_messages``
rebuilds the same structure from a finished branch (rounds split at assistant turns that follow
tool results), so a view attached late still shows rounds.
"""

from __future__ import annotations

import asyncio
import html
import json
from dataclasses import dataclass, field
from typing import Any

from lion_nb.messages import (
    ActionRequest,
    ActionResponse,
    AssistantResponse,
    Instruction,
    RoledMessage,
)
from lion_nb.render.html import head_html, message_html, streaming_html
from lion_nb.render.markdown import render_markdown
from lion_nb.render.partial_json import PartialJSON, PartialJSONError
from lion_nb.render.text import format_usage, visible_controls
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

__all__ = [
    "ActionPair",
    "Round",
    "RoundsModel",
    "RunGroup",
    "Step",
    "analysis_text",
    "round_html",
    "rounds_html",
    "run_head_html",
]


def _e(value: Any) -> str:
    return html.escape(visible_controls(str(value)), quote=True)


class LiveReply:
    """A round's reply while it streams. ReAct replies are JSON; a person wants to read the
    ``analysis`` (or ``answer``) string growing, not the JSON around it, so the text is also
    fed to an incremental ``PartialJSON`` scanner (linear: each delta is scanned once)."""

    __slots__ = ("_pieces", "_scanner")

    def __init__(self) -> None:
        self._pieces: list[str] = []
        self._scanner: PartialJSON | None = PartialJSON()

    def feed(self, delta: str) -> None:
        self._pieces.append(delta)
        if self._scanner is not None:
            try:
                self._scanner.feed(delta)
            except PartialJSONError:
                self._scanner = None  # not JSON: show the text as it is

    @property
    def text(self) -> str:
        if len(self._pieces) > 1:
            self._pieces[:] = ["".join(self._pieces)]
        return self._pieces[0] if self._pieces else ""

    def display_text(self) -> str:
        scanner = self._scanner
        if scanner is not None and isinstance(scanner.value, dict):
            value = scanner.value
            partial = scanner.partial_string()
            for key in ("analysis", "answer"):
                if isinstance(value.get(key), str):
                    return value[key]
                if partial is not None and partial[0] == (key,):
                    return partial[1]
        return self.text


@dataclass(slots=True)
class ActionPair:
    request: ActionRequest
    response: ActionResponse | None = None


@dataclass(slots=True)
class Step:
    analysis: AssistantResponse | None = None
    actions: list[ActionPair] = field(default_factory=list)


@dataclass(slots=True)
class Round:
    number: int
    final: bool = False
    status: str = "running"  # running | done | failed | stopped
    started_at: float | None = None
    duration_ms: float | None = None
    extension_needed: bool | None = None
    error: str | None = None
    instructions: list[Instruction] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    live: dict[Any, LiveReply] = field(default_factory=dict)  # message id -> streamed reply
    live_thinking: dict[Any, list[str]] = field(default_factory=dict)

    @property
    def usage(self) -> dict[str, Any]:
        total: dict[str, Any] = {}
        for step in self.steps:
            if step.analysis is None:
                continue
            for key, value in step.analysis.usage.items():
                if isinstance(value, int | float) and not isinstance(value, bool):
                    total[key] = total.get(key, 0) + value
        return total

    @property
    def action_count(self) -> int:
        return sum(len(s.actions) for s in self.steps)

    def add(self, message: RoledMessage) -> None:
        if isinstance(message, Instruction):
            self.instructions.append(message)
        elif isinstance(message, AssistantResponse):
            self.live.pop(message.id, None)
            self.live_thinking.pop(message.id, None)
            self.steps.append(Step(analysis=message))
        elif isinstance(message, ActionRequest):
            if not self.steps:
                self.steps.append(Step())
            self.steps[-1].actions.append(ActionPair(message))
        elif isinstance(message, ActionResponse):
            pair = self._pair_for(message)
            if pair is not None:
                pair.response = message
            else:  # an answer to a call this view did not see: show it on its own
                if not self.steps:
                    self.steps.append(Step())
                self.steps[-1].actions.append(
                    ActionPair(
                        ActionRequest(
                            id=message.action_request_id or message.id,
                            function=message.function,
                            arguments=message.arguments,
                            call_id=message.call_id,
                            created_at=message.created_at,
                        ),
                        message,
                    )
                )

    def _pair_for(self, response: ActionResponse) -> ActionPair | None:
        for step in reversed(self.steps):
            for pair in step.actions:
                if pair.response is not None:
                    continue
                req = pair.request
                if response.action_request_id == req.id or req.action_response_id == response.id:
                    return pair
                if response.call_id and response.call_id == req.call_id:
                    return pair
        return None


@dataclass(slots=True)
class RunGroup:
    run_id: Any
    operation: str
    status: str = "running"
    duration_ms: float | None = None
    error: str | None = None
    preamble: list[RoledMessage] = field(default_factory=list)  # before the first round
    rounds: list[Round] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)


class RoundsModel:
    """Runs and their rounds, folded from signals. ``on_signal`` returns the objects that
    changed (a ``Round`` or a ``RunGroup``) so a view updates only those."""

    def __init__(self) -> None:
        self.runs: list[RunGroup] = []
        self._current: RunGroup | None = None
        self._round: Round | None = None

    # ----- live --------------------------------------------------------------------------
    def _group(self) -> RunGroup:
        if self._current is None:  # attached mid-run, or rounds outside a lifecycle
            self._current = RunGroup(run_id=None, operation="ReAct")
            self.runs.append(self._current)
        return self._current

    def on_signal(self, signal: Signal) -> list[Round | RunGroup]:
        if isinstance(signal, RunStart):
            self._current = RunGroup(run_id=signal.run_id, operation=signal.operation)
            self._round = None
            self.runs.append(self._current)
            return [self._current]
        if isinstance(signal, RoundStart):
            group = self._group()
            self._round = Round(number=signal.round, final=signal.final, started_at=signal.at)
            group.rounds.append(self._round)
            return [group, self._round]
        if isinstance(signal, RoundEnd):
            rnd = self._find_round(signal.round, signal.final)
            if rnd is None:
                return []
            rnd.duration_ms = signal.duration_ms
            rnd.extension_needed = signal.extension_needed
            if isinstance(signal.error, asyncio.CancelledError):
                rnd.status = "stopped"  # Stop, not a failure
            elif signal.error is not None:
                rnd.status = "failed"
                rnd.error = f"{type(signal.error).__name__}: {signal.error}"
            else:
                rnd.status = "done"
            if rnd.status == "done":  # replies streamed but not recorded (parse repairs)
                rnd.live.clear()
                rnd.live_thinking.clear()
            if rnd is self._round:
                self._round = None
            return [rnd]
        if isinstance(signal, MessageAdded):
            if self._round is not None:
                self._round.add(signal.message)
                return [self._round]
            if self._current is not None and self._current.status == "running":
                target = self._current.rounds[-1] if self._current.rounds else None
                if target is None:
                    self._current.preamble.append(signal.message)
                    return [self._current]
                target.add(signal.message)  # recorded between rounds (a late tool result)
                return [target]
            return []
        if isinstance(signal, StreamDelta):
            if self._round is None or signal.kind == "tool_args":
                return []
            if signal.kind == "text":
                reply = self._round.live.get(signal.message_id)
                if reply is None:
                    reply = self._round.live[signal.message_id] = LiveReply()
                reply.feed(signal.delta)
            else:
                self._round.live_thinking.setdefault(signal.message_id, []).append(signal.delta)
            return [self._round]
        if isinstance(signal, RunEnd | RunFailed):
            group = self._current
            if group is None or (group.run_id is not None and group.run_id != signal.run_id):
                return []
            group.duration_ms = signal.duration_ms
            changed: list[Round | RunGroup] = [group]
            if isinstance(signal, RunFailed):
                group.status = "failed"
                group.error = f"{type(signal.error).__name__}: {signal.error}"
            else:
                group.status = "stopped" if signal.stopped else "done"
                group.usage = {
                    k: v
                    for k, v in (
                        ("input_tokens", signal.input_tokens),
                        ("output_tokens", signal.output_tokens),
                        ("total_cost_usd", signal.total_cost_usd),
                    )
                    if v is not None
                }
            for rnd in group.rounds:  # a round still open when its run ended did not finish
                if rnd.status == "running":  # its partial text stays, marked
                    rnd.status = "failed" if group.status == "failed" else "stopped"
                    changed.append(rnd)
            self._current = None
            self._round = None
            return changed
        return []

    def _find_round(self, number: int, final: bool) -> Round | None:
        if self._round is not None and self._round.number == number:
            return self._round
        group = self._current
        for rnd in reversed(group.rounds if group else []):
            if rnd.number == number and rnd.final == final:
                return rnd
        return None

    # ----- rebuilt -----------------------------------------------------------------------
    @classmethod
    def from_messages(cls, messages: list[RoledMessage] | Any) -> RoundsModel:
        """Rounds inferred from recorded messages: a new round starts at an instruction, or
        at an assistant turn that follows tool results; a round with no tool call that ends
        the history is the answer. Timing is unknown (not recorded in the messages)."""
        model = cls()
        group = RunGroup(run_id=None, operation="history", status="done")
        current: Round | None = None
        for message in messages:
            if message.role == "system":
                continue
            starts = isinstance(message, Instruction) and (current is None or current.steps)
            if (
                isinstance(message, AssistantResponse)
                and current is not None
                and current.action_count
            ):
                starts = True
            if current is None or starts:
                current = Round(number=len(group.rounds) + 1, status="done")
                group.rounds.append(current)
            current.add(message)
        if group.rounds and not group.rounds[-1].action_count:
            group.rounds[-1].final = True
        if group.rounds:
            model.runs.append(group)
        return model


# ----- HTML ------------------------------------------------------------------------------------
def _duration(ms: float | None) -> str:
    if ms is None:
        return ""
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.2f} s"


def reply_fields(message: AssistantResponse) -> dict[str, Any] | None:
    """A ReAct reply's structured fields (its parsed result, or its JSON text), if it has
    an ``analysis`` or ``answer``."""
    data = message.metadata.get("result")
    if data is None:
        try:
            data = json.loads(message.response)
        except (ValueError, TypeError):
            data = None
    if hasattr(data, "model_dump"):
        data = data.model_dump(mode="json")
    if not isinstance(data, dict) or not any(k in data for k in ("analysis", "answer")):
        return None
    return data


def analysis_text(message: AssistantResponse) -> str:
    """What a person reads of a round's reply: its analysis or answer, else the text."""
    data = reply_fields(message)
    if data is None:
        return message.response
    text = data.get("analysis") or data.get("answer") or ""
    return text if isinstance(text, str) else json.dumps(text, default=str)


def _analysis(message: AssistantResponse) -> str:
    """The analysis card: a ReAct reply is JSON; its ``analysis`` (or ``answer``) text is
    what a person wants to read, with the rest of the fields under it."""
    data = reply_fields(message)
    if data is None:
        return message_html(message)
    text = data.get("analysis") or data.get("answer") or ""
    rest = {
        k: v
        for k, v in data.items()
        if k not in ("analysis", "answer") and v not in (None, [], {}, "")
    }
    meta = message.metadata
    head = head_html(
        "assistant",
        created_at=message.created_at,
        model=str(meta["model"]) if meta.get("model") else None,
        usage=meta.get("usage"),
    )
    extra = ""
    if rest:
        extra = (
            '<details class="lion-result"><summary>Fields</summary>'
            f'<pre class="lion-json">{_e(json.dumps(rest, indent=2, default=str))}</pre>'
            "</details>"
        )
    body = render_markdown(text if isinstance(text, str) else json.dumps(text, default=str))
    return (
        f'<div class="lion-msg lion-assistant lion-analysis" data-id="{_e(message.id)}" '
        f'data-role="assistant">{head}<div class="lion-body lion-md">{body}</div>{extra}'
        "</div>"
    )


def _pair_html(pair: ActionPair) -> str:
    parts = [message_html(pair.request)]
    if pair.response is not None:
        parts.append(message_html(pair.response))
    else:
        parts.append(
            '<div class="lion-msg lion-action_response lion-pending">'
            f"{head_html('action_response', function=pair.request.function)}"
            '<div class="lion-body lion-empty">running…</div></div>'
        )
    return f'<div class="lion-action">{"".join(parts)}</div>'


def round_title(rnd: Round) -> str:
    return "Answer" if rnd.final else f"Round {rnd.number}"


def round_html(rnd: Round) -> str:
    """One round: head (title, status, time, usage), instruction, analysis, actions."""
    cls = f"lion-round lion-round-{_e(rnd.status)}" + (" lion-round-final" if rnd.final else "")
    head = [
        f'<span class="lion-round-title">{_e(round_title(rnd))}</span>',
        f'<span class="lion-status lion-{_e(rnd.status)}">{_e(rnd.status)}</span>',
    ]
    if rnd.duration_ms is not None:
        head.append(f'<span class="lion-round-time">{_e(_duration(rnd.duration_ms))}</span>')
    usage = format_usage(rnd.usage)
    if usage:
        head.append(f'<span class="lion-usage">{_e(usage)}</span>')
    if rnd.action_count:
        n = rnd.action_count
        head.append(f'<span class="lion-round-actions">{n} action{"s" if n != 1 else ""}</span>')
    if rnd.extension_needed:
        head.append('<span class="lion-meta">continues</span>')
    parts = [f'<div class="lion-round-head">{"".join(head)}</div>']
    for ins in rnd.instructions:
        parts.append(
            '<details class="lion-round-instruction"><summary>Instruction</summary>'
            f"{message_html(ins)}</details>"
        )
    for step in rnd.steps:
        if step.analysis is not None:
            parts.append(_analysis(step.analysis))
        if step.actions:
            parts.append(
                '<div class="lion-parallel">'
                + "".join(_pair_html(p) for p in step.actions)
                + "</div>"
            )
    for mid, reply in rnd.live.items():
        thinking = "".join(rnd.live_thinking.get(mid, ()))
        status = "streaming" if rnd.status == "running" else rnd.status
        parts.append(streaming_html(mid, reply.display_text(), thinking, status=status))
    if rnd.error:
        parts.append(f'<div class="lion-field-error">{_e(rnd.error)}</div>')
    return (
        f'<div class="{cls}" data-round="{rnd.number}" data-status="{_e(rnd.status)}">'
        f"{''.join(parts)}</div>"
    )


def run_head_html(group: RunGroup) -> str:
    bits = [
        f'<span class="lion-round-title">{_e(group.operation)}</span>',
        f'<span class="lion-status lion-{_e(group.status)}">{_e(group.status)}</span>',
    ]
    if group.duration_ms is not None:
        bits.append(f"<span>{_e(_duration(group.duration_ms))}</span>")
    n = len(group.rounds)
    bits.append(f"<span>{n} round{'s' if n != 1 else ''}</span>")
    usage = format_usage(group.usage)
    if usage:
        bits.append(f'<span class="lion-usage">{_e(usage)}</span>')
    if group.error:
        bits.append(f'<span class="lion-field-error">{_e(group.error)}</span>')
    preamble = "".join(message_html(m) for m in group.preamble)
    if preamble:
        preamble = f'<div class="lion-run-preamble">{preamble}</div>'
    return f'<div class="lion-run-head lion-round-head">{"".join(bits)}</div>{preamble}'


def rounds_html(model: RoundsModel) -> str:
    """Everything, as one fragment (the static fallback and export)."""
    parts = []
    for group in model.runs:
        parts.append(run_head_html(group))
        parts.extend(round_html(r) for r in group.rounds)
    if not parts:
        parts.append('<div class="lion-meta">No ReAct rounds yet.</div>')
    return f'<div class="lion-view lion-rounds">{"".join(parts)}</div>'
