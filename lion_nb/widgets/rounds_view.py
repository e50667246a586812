"""``ReActRoundsView``: a ReAct / ReActStream run grouped into rounds as they happen.

    view = ReActRoundsView(branch)
    view                                   # then, in this or another cell:
    await branch.ReAct("...", tools=...)

Round N shows its analysis (streaming while the model writes it), the tool calls it asked for
side by side with their results as they arrive, and its status, duration and token usage. The
branch's earlier messages are shown as inferred rounds (``history=False`` hides them).

It runs on the same front end as the chat view (``widgets/lion_nb.js``), through the view's
channel (``widgets.channel``): a part per run head and per round box, and inside each box
(nested parts) its head, instructions, analyses, tool calls and the replies streaming. A change
re-sends only the piece that changed (a round's status: only its box's attributes); a reply
streams as the chat view's does (``widgets.live.LiveMessage``: finished Markdown blocks appended
once, the growing tail, at most ``1 / refresh_interval`` updates a second) and is sealed into
its recorded analysis card. The complete state is synced widget state too. The view model is
``viewmodels.rounds.RoundsModel``; this class only maps its objects to parts.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lion_nb.render.html import Status
from lion_nb.render.rounds_html import (
    actions_html,
    analysis_parts,
    analysis_text,
    call_preview_html,
    instruction_html,
    live_reply_status,
    round_attrs,
    round_classes,
    round_error_html,
    round_frame_html,
    round_head_html,
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
from lion_nb.viewmodels.rounds import LiveReply, Round, RoundsModel, RunGroup, shown
from lion_nb.viewmodels.stream import GrowingText
from lion_nb.widgets.channel import MAX_RATE, Channel, Op, in_order
from lion_nb.widgets.front import Front
from lion_nb.widgets.live import LiveMessage
from lion_nb.widgets.protocol import PutOp, attrs_op, drop_op, put_op

if TYPE_CHECKING:
    from lion_nb.session.branch import Branch

__all__ = ["ReActRoundsView"]

_SIGNALS = (RunStart, RunEnd, RunFailed, RoundStart, RoundEnd, MessageAdded, StreamDelta)

Piece = tuple[str, str | None]  # (name, HTML; None: a reply streaming)


class _Live:
    """A reply streaming in a round: its card (part ``key``), fed from the reply's analysis
    text, read when an update goes out; and, once the model writes its ``action_requests``,
    the tool calls forming (part ``key-calls``, after the card), re-sent when they change,
    dropped when the reply is recorded (its recorded calls take their place)."""

    def __init__(self, key: str, reply: LiveReply, channel: Channel) -> None:
        self.key = key
        self.reply = reply
        self._channel = channel
        self.shown = False  # its first text was sent
        self.text, self.message = self._start()
        self.calls_key = f"{key}-calls"
        self.calls: str | None = None  # the forming calls' HTML the page was sent

    def _start(self) -> tuple[GrowingText, LiveMessage]:
        text = GrowingText(self.reply.display_text)
        return text, LiveMessage(uuid.uuid4(), self._channel, key=self.key, text=text)

    def _restart(self) -> list[Op]:
        """The text was rewritten (the raw JSON shown before the analysis began): the card
        starts again."""
        self.text.refresh()
        if not self.text.rewritten:
            return []
        self.text, self.message = self._start()
        parent = self.key.split(".")[0]
        return [put_op(self.key, self.message.shell_html(), parent=parent)]

    def ops(self) -> list[Op]:
        """The ops of an update."""
        return [*self._restart(), *self.message.collect(), *self._calls_ops()]

    def _calls_ops(self) -> list[Op]:
        """The forming tool calls, when they changed since the page was sent them."""
        calls = self.reply.calls()
        value = call_preview_html(calls) if calls else None
        if value is None or value == self.calls:
            return []
        op: PutOp = put_op(self.calls_key, value)
        if self.calls is None:  # new: after the card, at the end of the round's box
            op["parent"] = self.key.split(".")[0]
        self.calls = value
        return [op]

    def drop_calls(self) -> list[Op]:
        """The forming calls go (the reply was recorded, or its round ended without it)."""
        if self.calls is None:
            return []
        self.calls = None
        return [drop_op(self.calls_key)]

    def finish(self, status: Status) -> None:
        """The round ended with the reply unrecorded: its card keeps its text, marked."""
        if not self.message.done:
            self._channel.queue(*self._restart())
            self.message.finish(status)  # queued on the channel
            self._channel.queue(*self.drop_calls())


@dataclass(slots=True)
class _Box:
    """What the page shows of one round: its box and its pieces, by name."""

    key: str
    cls: str
    attrs: dict[str, str]
    pieces: dict[str, str | None] = field(default_factory=dict)  # in order; None: live


class ReActRoundsView(Front):
    """The rounds of ReAct runs on ``branch``, live, as they happen.

    Round N shows its analysis (streaming while the model writes it), the tool calls it asked
    for side by side with their results as they arrive, and its status, duration and token
    usage; a round that should have answered and did not is marked "no answer". The
    branch's earlier messages are shown as inferred rounds.

    Args:
        branch: The branch whose ``ReAct`` / ``ReActStream`` runs to show.
        history: ``False`` hides the rounds inferred from messages recorded before the view
            was made.
        title: The heading; default: "ReAct rounds" and the branch's name.
        refresh_interval: Seconds between updates of a streaming reply at most.

    Example:
        ```python
        view = ReActRoundsView(branch)
        view
        await branch.ReAct("What is 12 * 34?", tools=[multiply])
        ```
    """

    def __init__(
        self,
        branch: Branch,
        *,
        history: bool = True,
        title: str | None = None,
        refresh_interval: float = 1 / MAX_RATE,
    ) -> None:
        super().__init__(kind="rounds")
        self.channel.interval = refresh_interval  # streamed text: one throttle, the channel's
        self.branch = branch
        self.title = title or f"ReAct rounds — {branch.name or str(branch.id)[:8]}"
        self.model = RoundsModel.from_messages(branch.messages) if history else RoundsModel()
        self._keys: dict[int, str] = {}  # id(Round | RunGroup) -> its part's key
        self._names: dict[Any, str] = {}  # message id -> its piece's name in its round
        self._heads: dict[str, str] = {}  # run head parts: key -> HTML
        self._boxes: dict[str, _Box] = {}  # round parts: key -> what the page shows
        self._lives: dict[str, _Live] = {}  # piece key -> a reply streaming
        self._header = ""
        self._unsubscribe: Callable[[], None] = branch.subscribe(_SIGNALS, self._on_signal)
        self._update(self._ordered())
        self.channel.flush()
        self.sync_state(send=True)  # the comm opened with empty parts (as ParseView)
        self._ready = True

    # ----- keys ------------------------------------------------------------------------------
    def _key(self, obj: Round | RunGroup) -> str:
        if id(obj) not in self._keys:
            self._keys[id(obj)] = f"{'r' if isinstance(obj, Round) else 'g'}{len(self._keys)}"
        return self._keys[id(obj)]

    def _name(self, message_id: Any) -> str:
        if message_id not in self._names:
            self._names[message_id] = f"m{len(self._names)}"
        return self._names[message_id]

    # ----- live ------------------------------------------------------------------------------
    def _on_signal(self, signal: Signal) -> None:
        if self.closed:
            return
        changed = self.model.on_signal(signal)
        if not changed:
            return
        if isinstance(signal, StreamDelta):
            for obj in changed:
                if isinstance(obj, Round):
                    self._stream(obj)
            return
        self._update(changed)  # structure changed: show it now
        if isinstance(signal, RunEnd | RunFailed):
            self.sync_state()
            self.refresh_static()

    def _stream(self, rnd: Round) -> None:
        """A reply of ``rnd`` grew: a new one gets its card, every one streams (throttled)."""
        box = self._boxes.get(self._key(rnd))
        if box is None or any(f"{box.key}.{self._name(m)}" not in self._lives for m in rnd.live):
            self._update([rnd])
        for mid in rnd.live:
            live = self._lives.get(f"{self._key(rnd)}.{self._name(mid)}")
            if live is not None:
                live.message.follow_thinking(rnd.live_thinking.get(mid))
                first = not live.shown
                live.shown = True
                self.channel.stream(live.key, live.ops, now=first)

    def _update(self, changed: list[Round | RunGroup]) -> None:
        """Send what changed of ``changed`` (and the header), each piece on its own."""
        if self.closed:
            return
        ops: list[Op] = []
        header = rounds_header_html(self.title, self.model.all_rounds())
        if header != self._header:
            self._header = header
            ops.append(put_op("header", header, before=None))
        order = [self._key(obj) for obj in self._ordered()]
        shown_keys = set(self._heads) | set(self._boxes)
        for obj in changed:
            if isinstance(obj, RunGroup) and not shown(obj):
                continue  # a plain run (communicate) on the branch: not a ReAct round
            key = self._key(obj)
            later = (
                [k for k in order[order.index(key) + 1 :] if k in shown_keys]
                if key in order
                else []
            )
            before = later[0] if later else None
            if isinstance(obj, RunGroup):
                value = run_head_html(obj)
                if self._heads.get(key) != value:
                    self._heads[key] = value
                    ops.append(put_op(key, value, before=before))
            else:
                ops.extend(self._round_ops(obj, key, before))
            shown_keys.add(key)
        if ops:
            self.channel.push(*ops)

    def _pieces(self, rnd: Round) -> list[Piece]:
        pieces: list[Piece] = [("h", round_head_html(rnd))]
        pieces += [(self._name(i.id), instruction_html(i)) for i in rnd.instructions]
        for n, step in enumerate(rnd.steps):
            if step.analysis is not None:
                pieces.append((self._name(step.analysis.id), None))  # a recorded analysis
            if step.actions:
                pieces.append((f"x{n}", actions_html(step)))
        pieces += [(self._name(mid), None) for mid in rnd.live]
        if rnd.error:
            pieces.append(("e", round_error_html(rnd)))
        return pieces

    def _round_ops(self, rnd: Round, key: str, before: str | None) -> list[Op]:
        ops: list[Op] = []
        box = self._boxes.get(key)
        cls, attrs = round_classes(rnd), round_attrs(rnd)
        if box is None:
            box = self._boxes[key] = _Box(key, cls, attrs)
            html_ = round_frame_html(rnd, parts=True)
            ops.append(put_op(key, html_, before=before))
        elif (cls, attrs) != (box.cls, box.attrs):
            box.cls, box.attrs = cls, attrs
            ops.append(attrs_op(key, cls, attrs))
        analyses = {self._name(s.analysis.id): s.analysis for s in rnd.steps if s.analysis}
        lives = {self._name(mid): reply for mid, reply in rnd.live.items()}
        pieces = self._pieces(rnd)
        names = [name for name, _ in pieces]
        for name in [n for n in box.pieces if n not in names]:
            ops.extend(self._drop_piece(box, name))
        for at, (name, value) in enumerate(pieces):
            pkey = f"{key}.{name}"
            if name in analyses:
                value = analysis_parts(analyses[name]).html()
            if value is None:  # a reply streaming
                if pkey not in self._lives:
                    live = self._lives[pkey] = _Live(pkey, lives[name], self.channel)
                    op = put_op(pkey, live.message.shell_html())
                    ops.append(self._placed(op, box, names[at + 1 :]))
                    box.pieces[name] = None  # the page's card is the live message's
                    continue
                else:
                    status = live_reply_status(rnd)
                    if status != "streaming":
                        self._lives[pkey].finish(status)
                    continue
            elif name in analyses and pkey in self._lives:  # recorded: seal its card
                live = self._lives.pop(pkey)
                ops.append(live.message.seal_op(analysis_parts(analyses[name]), pkey))
                ops.extend(live.drop_calls())
                box.pieces[name] = value
                continue
            if box.pieces.get(name) == value:
                continue
            op = put_op(pkey, value)
            ops.append(self._placed(op, box, names[at + 1 :]) if name not in box.pieces else op)
            box.pieces[name] = value
        box.pieces = in_order(box.pieces, names)
        return ops

    @staticmethod
    def _placed(op: PutOp, box: _Box, later: list[str]) -> PutOp:
        """``op`` puts a new piece in ``box``, before the first of ``later`` it shows."""
        shown = [n for n in later if n in box.pieces]
        placed = op.copy()
        placed["parent"] = box.key
        if shown:  # else at the end
            placed["before"] = f"{box.key}.{shown[0]}"
        return placed

    def _drop_piece(self, box: _Box, name: str) -> list[Op]:
        pkey = f"{box.key}.{name}"
        live = self._lives.pop(pkey, None)
        if live is not None:
            live.message.cancel()
        del box.pieces[name]
        return [drop_op(pkey), *(live.drop_calls() if live else [])]

    def state_parts(self) -> list[list[str]]:
        """The parts as the page holds them: the header, a head per run, a box per round with
        its pieces inside (``[key, html, round key]``), a reply streaming as it is now."""
        parts = [["header", self._header]]
        for obj in self._ordered():
            key = self._key(obj)
            if isinstance(obj, RunGroup):
                if key in self._heads:
                    parts.append([key, self._heads[key]])
                continue
            box = self._boxes.get(key)
            if box is None:
                continue
            parts.append([key, round_frame_html(obj, parts=True)])
            for name, value in box.pieces.items():
                pkey = f"{key}.{name}"
                live = self._lives.get(pkey)
                html_ = live.message.html() if live is not None and value is None else value
                parts.append([pkey, html_ or "", key])
                if live is not None and live.calls is not None:
                    parts.append([live.calls_key, live.calls, key])
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
        """Every round shown, of every run, in order (status, steps, usage, duration)."""
        return self.model.all_rounds()

    def static_html(self) -> str:
        """The runs and their rounds as HTML for a saved notebook."""
        return rounds_html(self.model, header=self._header_html())

    def static_text(self) -> str:
        """The runs as plain text: a line per run, then a line per round (its status, the
        start of its analysis, the tools it called)."""
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
        for live in self._lives.values():
            live.message.cancel()

    def __repr__(self) -> str:
        return f"<ReActRoundsView of {self.branch!r} rounds={len(self.rounds)}>"
