"""``FlowView``: a flow's nodes, live. One row per node (status, run time, tokens, cost); a row's
open control shows that node's transcript (its branch, with the reply being written: only the
open node's stream is followed, so on Ray the others send no per-token deltas); a time
strip shows which node ran when, where and for how long; **Stop** cancels the flow's ``run()``
wherever it was started (``flow.cancel()``): running nodes settle as "stopped" (keeping what
they streamed), unstarted ones as "cancelled". Stop is enabled only while something can stop.

    view = FlowView(flow)
    view                                   # then, in this or another cell:
    await flow.run()                       # or flow.run(engine="ray")

It runs on the front-end module (``widgets/lion_nb.js``, kind ``flow-view``: the page draws
the Stop button and each row's open control, ``open`` and ``stop`` actions), through the view's
channel: the heading, one part per row, the strip and the transcript of the selected node, whose
cards are nested parts and whose reply being written streams as the chat view's does
(``widgets.live.LiveMessage``). A part is re-sent only when it changed, at most
``1 / refresh_interval`` times a second; run times of running nodes (and the strip) tick every
``tick`` seconds while the flow runs. The state is ``lion_nb.viewmodels.flow.FlowViewModel``;
every piece of HTML comes from ``lion_nb.render.flow`` and ``render.html``.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import TYPE_CHECKING, Any

from lion_nb.render.flow import (
    detail_frame_html,
    detail_title_html,
    flow_error_html,
    flow_header_html,
    flow_html,
    flow_text,
    row_part_html,
    strip_box_html,
    strip_html,
)
from lion_nb.render.html import assistant_parts, transcript_cards
from lion_nb.turns import continuations
from lion_nb.viewmodels.flow import FlowSnapshot, FlowViewModel, NodeRow
from lion_nb.viewmodels.stream import GrowingText
from lion_nb.widgets.channel import Op, in_order
from lion_nb.widgets.front import Front
from lion_nb.widgets.live import LiveMessage
from lion_nb.widgets.protocol import PutOp, drop_op, put_op

if TYPE_CHECKING:
    from lion_nb.flow.graph import Flow

__all__ = ["FlowView"]


def _settled_part(row: NodeRow) -> tuple[Any, ...]:
    """What a row says but for the times that tick while it runs."""
    return (row.id, row.status, row.error, row.branch, row.input_tokens, row.output_tokens)


class FlowView(Front):
    """A flow's nodes, live: one row per node (status, run time, tokens, cost), a time strip
    of which node ran when and where, and Stop.

    A row's open control shows that node's transcript, with the reply being written (only the
    open node's stream is followed, so on Ray the other nodes send no per-token deltas). Stop
    cancels the flow's ``run()`` wherever it was started: running nodes settle as "stopped"
    (keeping what they streamed), unstarted ones as "cancelled". The view can be made before,
    during or after the run.

    Args:
        flow: The flow to show.
        refresh_interval: Seconds between updates of the page at most.
        tick: Seconds between ticks of the running nodes' run times and the strip.

    Example:
        ```python
        view = FlowView(flow)
        view
        await flow.run()  # or flow.run(engine="ray")
        ```
    """

    # 10 updates a second, not MAX_RATE: an update re-renders every changed row of a flow of
    # hundreds of nodes, and a node's row changes at most with its status and run time
    def __init__(self, flow: Flow, *, refresh_interval: float = 0.1, tick: float = 0.5) -> None:
        super().__init__(kind="flow-view")
        self.channel.interval = refresh_interval  # one throttle: the channel's
        self.flow = flow
        self.model = FlowViewModel(flow)
        self.tick = tick
        self._stopping = False  # Stop was asked; the run has not settled yet
        self._shown: dict[str, str] = {}  # top-level parts: key -> HTML, in order
        self._strip = ""  # the time strip (part "ss" in the strip's box)
        self._board: tuple[Any, ...] = ()  # what the rows said when last sent, but times
        self._board_at = 0.0
        self._detail_of: uuid.UUID | None = None  # the node whose transcript is shown
        self._pieces: dict[str, str | None] = {}  # the transcript's cards (None: streaming)
        self._lives: dict[str, LiveMessage] = {}
        self._names: dict[Any, str] = {}  # message id -> its card's part key
        self._recorded: dict[str, str] = {}  # message id -> the text recorded
        self._cards_of: tuple[tuple[Any, ...], list[tuple[str, str | None]]] = ((None,), [])
        self._ticker: asyncio.TimerHandle | None = None
        self.model.on_change = self._on_change
        self.model.attach()
        self._update()
        self.channel.flush()
        self.sync_state(send=True)  # the comm opened with empty parts
        self._ready = True

    # ----- live --------------------------------------------------------------------------
    def _on_change(self, node_id: uuid.UUID | None) -> None:
        if self.closed:
            return
        self._update_later()
        node = next((n for n in self.flow.nodes if n.id == node_id), None)
        # the saved output follows the end of the run, not each pause between nodes (each
        # refresh makes Lab draw the view anew)
        if node is not None and node.status.settled and not self.model.stoppable:
            self.refresh_static()

    def _update_later(self) -> None:
        # throttled by the channel; but the open node's reply starting goes out at once (the
        # chat view's first token), not after the interval of the row update sent before it
        _messages, writing = self.model.transcript()
        starting = any(self._name(mid) not in self._lives for mid, _ in writing)
        self.channel.stream("flow", self._ops, now=starting)

    def _update(self) -> None:
        self.channel.forget("flow")
        ops = self._ops()
        if ops:
            self.channel.push(*ops)

    def _action_open(self, content: dict[str, Any]) -> None:
        self.model.select(uuid.UUID(str(content.get("key"))))
        self._update()

    def _action_stop(self, _content: dict[str, Any]) -> None:
        self.stop()

    def stop(self) -> bool:
        """Cancel the flow's run in progress; False if it is not running."""
        stopped = self.flow.cancel()
        if stopped:
            self._stopping = True
            self.set_chrome(can_stop=False)
        return stopped

    def _ops(self) -> list[Op]:
        if self.closed:
            return []
        snapshot = self.model.snapshot()
        if not snapshot.stoppable:
            self._stopping = False
        self.set_chrome(busy=snapshot.stoppable, can_stop=snapshot.stoppable and not self._stopping)
        ops = self._board_ops(snapshot) + self._detail_ops(snapshot)
        self._schedule_tick()
        return ops

    def _board_ops(self, snapshot: FlowSnapshot) -> list[Op]:
        """The heading, rows and strip that changed. Run times tick every ``tick`` seconds, not
        with every update of a reply being written (those only stream the transcript)."""
        now = time.monotonic()
        state = (snapshot.selected, *(_settled_part(row) for row in snapshot.rows))
        if state == self._board and now - self._board_at < self.tick:
            return []
        self._board, self._board_at = state, now
        pieces = {"head": flow_header_html(snapshot)}
        for row in snapshot.rows:
            pieces[f"n{row.index}"] = row_part_html(row, selected=row.id == snapshot.selected)
        pieces["strip"] = strip_box_html()
        selected = snapshot.selected
        pieces["detail"] = detail_frame_html() if selected is not None else ""
        ops: list[Op] = []
        keys = list(pieces)
        for at, (key, value) in enumerate(pieces.items()):
            reframe = key == "detail" and selected != self._detail_of
            if self._shown.get(key) == value and not reframe:
                continue
            op: PutOp = put_op(key, value)
            later = next((k for k in keys[at + 1 :] if k in self._shown), None)
            if key not in self._shown and later is not None:
                op["before"] = later
            ops.append(op)
        self._shown = pieces
        strip = strip_html(snapshot)
        if strip != self._strip:
            self._strip = strip
            ops.append(put_op("ss", strip, parent="strip"))
        return ops

    # ----- the selected node's transcript ----------------------------------------------------
    def _detail_ops(self, snapshot: FlowSnapshot) -> list[Op]:
        """The transcript's cards that changed (all of them when another node was opened), its
        reply being written streamed."""
        if snapshot.selected != self._detail_of:
            for stale in self._lives.values():
                stale.cancel()
            self._lives, self._pieces, self._names, self._recorded = {}, {}, {}, {}
            self._cards_of = ((None,), [])
            self._detail_of = snapshot.selected
        row = next((r for r in snapshot.rows if r.id == snapshot.selected), None)
        if row is None:
            return []
        messages, writing = self.model.transcript()
        pieces: list[tuple[str, str | None]] = [("dh", detail_title_html(row))]
        pieces += self._cards(messages)
        pieces += [(self._name(mid), None) for mid, _ in writing]
        if row.error:
            pieces.append(("de", flow_error_html(row)))
        names = [name for name, _ in pieces]
        ops: list[Op] = []
        for name in [n for n in self._pieces if n not in names]:
            ops.extend(self._drop_piece(name))
        mids = {self._name(mid): mid for mid, _ in writing}
        for at, (name, value) in enumerate(pieces):
            if value is None:
                ops.extend(self._writing_ops(name, mids[name], names[at + 1 :]))
            elif name in self._lives and (op := self._sealed(name, value, messages)):
                ops.append(op)
            elif self._pieces.get(name) != value:
                ops.append(self._placed(put_op(name, value), names[at + 1 :]))
                self._pieces[name] = value
        self._pieces = in_order(self._pieces, names)
        return ops

    def _placed(self, op: PutOp, later: list[str]) -> PutOp:
        """``op`` puts a piece: a new one in the transcript's box, before the first of
        ``later`` the page shows."""
        if op["key"] in self._pieces:
            return op
        op["parent"] = "detail"
        before = next((n for n in later if n in self._pieces), None)
        if before is not None:
            op["before"] = before
        return op

    def _writing_ops(self, name: str, mid: Any, later: list[str]) -> list[Op]:
        """A reply being written: its card first, then what streamed."""
        ops: list[Op] = []
        if name not in self._lives:
            self._lives[name] = self._live(name, mid)
            html_ = self._lives[name].shell_html()
            ops.append(self._placed(put_op(name, html_), later))
            self._pieces[name] = None
        return ops + self._lives[name].collect()

    def _sealed(self, name: str, value: str, messages: list[Any]) -> Op | None:
        """The reply was recorded: its live card becomes the recorded card (None: put it)."""
        live = self._lives.pop(name)
        message = next((m for m in messages if self._name(m.id) == name), None)
        if message is None or message.role != "assistant":
            live.cancel()
            return None
        self._recorded[str(message.id)] = message.response  # what the live card catches up to
        card = assistant_parts(message, continuations(messages).get(str(message.id)))
        self._pieces[name] = value
        return live.seal_op(card, name)

    def _drop_piece(self, name: str) -> list[Op]:
        stale = self._lives.pop(name, None)
        if stale is not None:
            stale.cancel()
        return [drop_op(name)]

    def _cards(self, messages: list[Any]) -> list[tuple[str, str | None]]:
        """The recorded cards, rendered again only when the messages changed."""
        ids = tuple(m.id for m in messages)
        if self._cards_of[0] != ids:
            cards: list[tuple[str, str | None]] = [
                (self._name(mid), html_) for mid, html_ in transcript_cards(messages)
            ]
            self._cards_of = (ids, cards)
        return list(self._cards_of[1])

    def _live(self, name: str, mid: Any) -> LiveMessage:
        def source() -> str:  # the text being written; once recorded, the recorded text
            if str(mid) in self._recorded:
                return self._recorded[str(mid)]
            return dict(self.model.transcript()[1]).get(mid, "")

        return LiveMessage(uuid.uuid4(), self.channel, key=name, text=GrowingText(source))

    def _name(self, message_id: Any) -> str:
        key = str(message_id)
        if key not in self._names:
            self._names[key] = f"d{len(self._names)}"
        return self._names[key]

    def _schedule_tick(self) -> None:
        # while the flow runs (not only while a node runs): Stop is disabled once run() ends
        if self._ticker is not None or not (self.model.running or self.flow.is_running):
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._ticker = loop.call_later(self.tick, self._on_tick)

    def _on_tick(self) -> None:
        self._ticker = None
        self._update_later()

    # ----- reading -----------------------------------------------------------------------
    def state_parts(self) -> list[list[str]]:
        """The parts as the page holds them: the heading and rows, the strip (``"ss"`` in
        part ``"strip"``) and the open node's transcript cards (in part ``"detail"``)."""
        parts = [[key, value] for key, value in self._shown.items()]
        parts.append(["ss", self._strip, "strip"])
        for name, value in self._pieces.items():
            live = self._lives.get(name)
            html_ = live.html() if live is not None and value is None else value
            parts.append([name, html_ or "", "detail"])
        return parts

    def static_html(self) -> str:
        """The flow's table and strip as HTML for a saved notebook."""
        return flow_html(self.model.snapshot())

    def static_text(self) -> str:
        """The flow as plain text: its title, then a line per node (status, run time, usage)."""
        return flow_text(self.model.snapshot())

    def _release(self) -> None:
        self.model.detach()
        for live in self._lives.values():
            live.cancel()
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None

    def __repr__(self) -> str:
        return f"<FlowView of {self.flow!r}>"
