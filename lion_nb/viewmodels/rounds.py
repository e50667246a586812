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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lion_nb.errors import ReActError
from lion_nb.incremental.partial_json import PartialJSON, PartialJSONError
from lion_nb.messages import (
    ActionRequest,
    ActionResponse,
    AssistantResponse,
    Instruction,
    RoledMessage,
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
from lion_nb.viewmodels.stream import StreamText

__all__ = [
    "REACT_OPERATIONS",
    "ActionPair",
    "FormingCall",
    "LiveReply",
    "Round",
    "RoundsModel",
    "RunGroup",
    "Step",
    "outcome_of",
    "shown",
]

REACT_OPERATIONS = ("ReAct", "ReActStream")


@dataclass(frozen=True, slots=True)
class FormingCall:
    """A tool call the model is writing in its reply's ``action_requests``: its function name
    as far as it is known (None: not yet begun), the arguments complete so far (in order),
    and whether the call is complete."""

    name: str | None
    arguments: tuple[tuple[str, Any], ...] = ()
    done: bool = False


_CALLS = "action_requests"


class LiveReply:
    """A round's reply while it streams, read from its ``StreamDelta`` snapshots. ReAct
    replies are JSON; a person wants to read the ``analysis`` (or ``answer``) string growing,
    not the JSON around it, so the text is also fed to an incremental ``PartialJSON`` scanner
    (linear: each character is scanned once, when the reply is shown). The same scan tells
    which tool calls (``calls``) and which of their arguments are complete."""

    __slots__ = ("_args_done", "_calls_done", "_scanner", "_stream")

    def __init__(self) -> None:
        self._stream = StreamText()
        self._scanner: PartialJSON | None = PartialJSON()
        self._calls_done: set[int] = set()  # indexes in action_requests that closed
        self._args_done: dict[int, list[str]] = {}  # call index -> argument names that closed

    def update(self, signal: StreamDelta) -> None:
        self._stream.update(signal)

    def _catch_up(self) -> None:
        if self._stream.pending <= 0:
            return
        new = self._stream.take()
        if self._scanner is not None:
            try:
                completed = self._scanner.feed(new)
            except PartialJSONError:
                self._scanner = None  # not JSON: show the text as it is
                return
            for event in completed:
                self._note(event.path)

    def _note(self, path: tuple[str | int, ...]) -> None:
        """A value at ``path`` closed: remember it when it is a tool call or an argument."""
        if len(path) < 2 or path[0] != _CALLS or not isinstance(path[1], int):
            return
        if len(path) == 2:
            self._calls_done.add(path[1])
        elif len(path) == 4 and path[2] == "arguments" and isinstance(path[3], str):
            self._args_done.setdefault(path[1], []).append(path[3])

    def calls(self) -> list[FormingCall]:
        """The tool calls written so far (complete or forming), from the scan: no re-parse."""
        self._catch_up()
        scanner = self._scanner
        if scanner is None or not isinstance(scanner.value, dict):
            return []
        requests = scanner.value.get(_CALLS)
        if not isinstance(requests, list):  # begun when its key is read, before its "["
            return [FormingCall(None)] if scanner.path[:1] == (_CALLS,) else []
        partial = scanner.partial_string()
        out: list[FormingCall] = []
        for i, request in enumerate(requests):
            if not isinstance(request, dict):
                continue
            name = request.get("function")
            if not isinstance(name, str):
                name = partial[1] if partial and partial[0] == (_CALLS, i, "function") else None
            args = request.get("arguments")
            if not isinstance(args, dict):
                args = {}
            shown = tuple((k, args[k]) for k in self._args_done.get(i, []) if k in args)
            out.append(FormingCall(name or None, shown, i in self._calls_done))
        return out

    @property
    def text(self) -> str:
        return self._stream.text()

    def display_text(self) -> str:
        self._catch_up()
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
    status: str = "running"  # running | done | failed | stopped | no-answer
    started_at: float | None = None
    duration_ms: float | None = None
    extension_needed: bool | None = None
    error: str | None = None
    instructions: list[Instruction] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    live: dict[Any, LiveReply] = field(default_factory=dict)  # message id -> streamed reply
    live_thinking: dict[Any, StreamText] = field(default_factory=dict)

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

    def all_rounds(self) -> list[Round]:
        """Every round of every run, in order."""
        return [r for g in self.runs for r in g.rounds]

    # ----- live --------------------------------------------------------------------------
    def _group(self) -> RunGroup:
        if self._current is None:  # attached mid-run, or rounds outside a lifecycle
            self._current = RunGroup(run_id=None, operation="ReAct")
            self.runs.append(self._current)
        return self._current

    def on_signal(self, signal: Signal) -> list[Round | RunGroup]:
        """Fold ``signal`` in; returns the rounds and runs it changed."""
        for kind in type(signal).__mro__:
            handler = self._HANDLERS.get(kind)
            if handler is not None:
                return handler(self, signal)
        return []

    def _on_run_start(self, signal: RunStart) -> list[Round | RunGroup]:
        self._current = RunGroup(run_id=signal.run_id, operation=signal.operation)
        self._round = None
        self.runs.append(self._current)
        return [self._current]

    def _on_round_start(self, signal: RoundStart) -> list[Round | RunGroup]:
        group = self._group()
        self._round = Round(number=signal.round, final=signal.final, started_at=signal.at)
        group.rounds.append(self._round)
        return [group, self._round]

    def _on_round_end(self, signal: RoundEnd) -> list[Round | RunGroup]:
        rnd = self._find_round(signal.round, signal.final)
        if rnd is None:
            return []
        rnd.duration_ms = signal.duration_ms
        rnd.extension_needed = signal.extension_needed
        if isinstance(signal.error, asyncio.CancelledError):
            rnd.status = "stopped"  # Stop, not a failure
        elif isinstance(signal.error, ReActError):  # the model sent no answer (or no call)
            rnd.status, rnd.error = outcome_of(signal.error)
            rnd.live.clear()  # its reply was recorded
            rnd.live_thinking.clear()
        elif signal.error is not None:
            rnd.status = "failed"
            rnd.error = f"{type(signal.error).__name__}: {signal.error}"
        else:
            rnd.status = "done"
            rnd.live.clear()  # replies streamed but not recorded (parse repairs)
            rnd.live_thinking.clear()
        if rnd is self._round:
            self._round = None
        return [rnd]

    def _on_message(self, signal: MessageAdded) -> list[Round | RunGroup]:
        if self._round is not None:
            self._round.add(signal.message)
            return [self._round]
        current = self._current
        if current is None or current.status != "running":
            return []
        if not current.rounds:
            current.preamble.append(signal.message)
            return [current]
        current.rounds[-1].add(signal.message)  # recorded between rounds (a late tool result)
        return [current.rounds[-1]]

    def _on_delta(self, signal: StreamDelta) -> list[Round | RunGroup]:
        rnd = self._round
        if rnd is None or signal.kind in ("tool_args", "tokens"):
            return []
        if signal.kind == "text":
            reply = rnd.live.get(signal.message_id)
            if reply is None:
                reply = rnd.live[signal.message_id] = LiveReply()
            reply.update(signal)
        else:
            thinking = rnd.live_thinking.get(signal.message_id)
            if thinking is None:
                thinking = rnd.live_thinking[signal.message_id] = StreamText()
            thinking.update(signal)
        return [rnd]

    def _on_run_end(self, signal: RunEnd | RunFailed) -> list[Round | RunGroup]:
        ending = self._current
        if ending is None or (ending.run_id is not None and ending.run_id != signal.run_id):
            return []
        ending.duration_ms = signal.duration_ms
        changed: list[Round | RunGroup] = [ending]
        if isinstance(signal, RunFailed) and isinstance(signal.error, ReActError):
            ending.status, ending.error = outcome_of(signal.error)
        elif isinstance(signal, RunFailed):
            ending.status = "failed"
            ending.error = f"{type(signal.error).__name__}: {signal.error}"
        else:
            ending.status = "stopped" if signal.stopped else "done"
            ending.usage = _run_usage(signal)
        for rnd in ending.rounds:  # a round still open when its run ended did not finish
            if rnd.status == "running":  # its partial text stays, marked
                rnd.status = "failed" if ending.status == "failed" else "stopped"
                changed.append(rnd)
        self._current = None
        self._round = None
        return changed

    _HANDLERS: dict[type, Callable[[RoundsModel, Any], list[Round | RunGroup]]] = {
        RunStart: _on_run_start,
        RoundStart: _on_round_start,
        RoundEnd: _on_round_end,
        MessageAdded: _on_message,
        StreamDelta: _on_delta,
        RunEnd: _on_run_end,
        RunFailed: _on_run_end,
    }

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
        for rnd in group.rounds:
            _recorded_outcome(rnd, group)
        if group.rounds:
            model.runs.append(group)
        return model


def _recorded_outcome(rnd: Round, group: RunGroup) -> None:
    """A round whose reply ReAct marked as lacking what it needed (``metadata
    ["react_outcome"]``, written by ``operations/react.py``) ends as the live view ended it."""
    for step in reversed(rnd.steps):
        mark = step.analysis.metadata.get("react_outcome") if step.analysis else None
        if isinstance(mark, dict):
            error = ReActError("", round=rnd.number, **_outcome_fields(mark))
            rnd.status, rnd.error = outcome_of(error)
            group.status, group.error = rnd.status, rnd.error
            return


def _outcome_fields(mark: dict[str, Any]) -> dict[str, str]:
    return {"sent": str(mark.get("sent") or ""), "missing": str(mark.get("missing") or "answer")}


def outcome_of(error: ReActError) -> tuple[str, str]:
    """``(status, words)`` of a ReAct round or run that ended without what it needed:
    ``("no-answer", "no answer: the model sent …")``, or a failed round that called no tool."""
    sent = f"the model sent {error.sent!r}" if error.sent else "the model sent nothing"
    if error.missing == "answer":
        return "no-answer", f"no answer: {sent}"
    return "failed", f"no {error.missing}: {sent}"


def _run_usage(signal: RunEnd) -> dict[str, Any]:
    return {
        k: v
        for k, v in (
            ("input_tokens", signal.input_tokens),
            ("output_tokens", signal.output_tokens),
            ("total_cost_usd", signal.total_cost_usd),
        )
        if v is not None
    }


def shown(group: RunGroup) -> bool:
    """Runs worth a place in a rounds view: those with rounds, and ReAct runs before their
    first round. A plain ``communicate`` on the same branch is not a round."""
    return bool(group.rounds) or group.operation in REACT_OPERATIONS
