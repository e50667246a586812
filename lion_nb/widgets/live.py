"""Live rendering of one message while it streams: StreamDelta signals -> widget updates.

Re-sending the accumulated reply per token is quadratic (23 MB of comm traffic for a
3,000-token reply). Here the traffic stays linear in the final HTML:

- Markdown goes through ``MarkdownStream``: finished top-level blocks are rendered once and
  frozen; only the growing tail is re-rendered.
- Frozen HTML collects in an *open segment* shown, with the tail, in one ``live`` HTML widget.
  Once the open segment holds ``seal_bytes`` of HTML it is *sealed* into a widget of its own
  (sent once) and the live widget starts empty again, so an update never re-sends more than
  about ``seal_bytes`` plus the tail.
- Updates are throttled to ``max_rate`` per second; the first one is sent at once (first token
  well within 100 ms).
- A byte budget bounds the total whatever the token rate: the bytes sent for this message
  (payload plus an estimated ~700-byte envelope per comm message) may not exceed ``ratio``
  times the HTML rendered so far plus an allowance that accrues at ``allowance_rate`` bytes/s
  up to ``allowance`` (so the first seconds of any reply update smoothly). Past that, a slow
  stream updates less often instead of costing more: every comm message costs ~700 bytes of
  envelope, so at ~50 tokens/s (~250 bytes/s of HTML) a 5x budget affords about one update
  every 1-2 s. A larger ``ratio`` buys smoothness with bytes; the total stays linear.
- All widgets share one ``Layout`` and one ``HTMLStyle`` (a fresh ``Layout`` alone is ~1 KB of
  state per widget).

The text comes from the signals' snapshots (``viewmodels.stream.StreamText``): a delta only
says that the part grew, and the snapshot is read when an update is sent, so a message first
seen half-way through shows from its start. Thinking and tool arguments show as bounded
previews (their last ``preview_chars``). All HTML comes from ``render.html``: the live card is
the same card renderer as the recorded one, which replaces it when ``MessageAdded`` arrives.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lion_nb.render.html import (
    Status,
    body_html,
    head_html,
    live_card_classes,
    live_card_html,
    live_thinking_html,
    live_tools_html,
)
from lion_nb.render.markdown import MarkdownStream
from lion_nb.signals import StreamDelta
from lion_nb.viewmodels.stream import StreamText

__all__ = ["LiveConfig", "LiveMessage", "WidgetKit"]


@dataclass(frozen=True, slots=True)
class LiveConfig:
    max_rate: float = 15.0  # updates per second after the first
    ratio: float = 2.5  # streaming bytes allowed per byte of HTML rendered so far
    allowance: int = 12288  # extra bytes a message may use beyond ``ratio`` (smooth start) ...
    allowance_rate: float = 4096.0  # ... accruing at this many bytes per second of stream
    first: int = 2048  # ... plus this much at once, for the first token
    seal_bytes: int = 4096  # frozen HTML kept in the live widget before it gets its own
    preview_chars: int = 1500  # thinking / tool-argument previews show this many last chars
    overhead: int = 700  # estimated bytes of one comm message's envelope (header, ids, hmac)
    idle: float = 0.75  # a stream quiet this long shows what it sent, whatever the budget

    @property
    def interval(self) -> float:
        return 1.0 / self.max_rate if self.max_rate > 0 else 0.0


class WidgetKit:
    """Creates the stock ipywidgets a view is made of, sharing one Layout and one style so a
    new widget costs only its own small state on the comm."""

    def __init__(self) -> None:
        import ipywidgets
        from ipywidgets.widgets.widget_string import HTMLStyle

        self.w = ipywidgets
        self.layout = ipywidgets.Layout()
        self.style = HTMLStyle()

    def html(self, value: str = "", classes: tuple[str, ...] = ()) -> Any:
        return self.w.HTML(value=value, layout=self.layout, style=self.style, _dom_classes=classes)

    def vbox(
        self, children: list[Any] | tuple[Any, ...] = (), classes: tuple[str, ...] = ()
    ) -> Any:
        return self.w.VBox(children=tuple(children), layout=self.layout, _dom_classes=classes)


class LiveMessage:
    """The widgets of one message being streamed, keyed by its ``message_id``.

    A short reply is one HTML widget holding the whole card. When frozen HTML outgrows
    ``seal_bytes`` (or a thinking / tool-argument preview appears) the card is *promoted* to a
    VBox of sealed segments plus the live widget; ``on_widget`` is told so the transcript can
    swap it in. ``feed`` is called for every StreamDelta (cheap: Markdown is parsed
    incrementally and HTML rendered only when an update is sent). ``adopt(card)`` turns the
    rendering into the recorded message's card, reusing the live widget; ``finish(status)``
    ends it without a recorded message (stopped or failed run) and keeps the partial text.
    """

    def __init__(
        self,
        message_id: uuid.UUID,
        kit: WidgetKit,
        *,
        config: LiveConfig | None = None,
        clock: Callable[[], float] = time.monotonic,
        model: str | None = None,
        on_widget: Callable[[Any], None] | None = None,
        call_later: Callable[[float, Callable[[], None]], Any] | None = None,
    ) -> None:
        self.message_id = message_id
        self.config = config or LiveConfig()
        self._kit = kit
        self._clock = clock
        self._model = model
        self._on_widget = on_widget
        self._call_later = call_later  # default: the running loop's (tests pass manual time)
        self._md = MarkdownStream()
        self._status: Status = "streaming"
        self._open: list[str] = []  # frozen block HTML not yet sealed
        self._open_len = 0
        self._sealed_len = 0
        self._tail_html = ""
        self._tail_chars = 0  # text characters in the unfrozen tail (cost estimate)
        self._text = StreamText()  # the parts as streamed so far, read from their snapshots
        self._thinking: StreamText | None = None
        self._tools: dict[str, tuple[str, StreamText]] = {}  # call_id -> name, arguments
        self._live: Any = None  # created by the first flush, with its first value
        self._box: Any = None
        self._thinking_w: Any = None
        self._tools_w: Any = None
        self._sealed: list[Any] = []
        self.sent_bytes = 0  # estimated: payloads plus one envelope per comm message
        self.updates = 0
        self._last_flush: float | None = None
        self._last_delta = 0.0
        self._started: float | None = None
        self._starved = False  # the pending timer waits for a pause, not for the throttle
        self._dirty = False
        self._timer: Any = None  # a handle with .cancel()
        self.done = False

    @property
    def widget(self) -> Any:
        """The top-level widget to place in a transcript (None before the first update)."""
        return self._box if self._box is not None else self._live

    # ----- input ----------------------------------------------------------------------------
    def feed(self, signal: StreamDelta) -> None:
        """A part of the message grew: take its snapshot's new text (the text is parsed
        incrementally; HTML is rendered only when an update is sent)."""
        if self.done:
            return
        if self._started is None:
            self._started = self._clock()
        if signal.kind == "text":
            self._text.update(signal)
            self._take_text()
        elif signal.kind == "thinking":
            if self._thinking is None:
                self._thinking = StreamText()
            self._thinking.update(signal)
        else:
            key = signal.call_id or signal.name or "tool"
            if key not in self._tools:
                self._tools[key] = (signal.name or "tool", StreamText())
            self._tools[key][1].update(signal)
        self._dirty = True
        self._schedule()

    def _take_text(self) -> None:
        """Parse the text that arrived since the last update (finished blocks freeze)."""
        if self._text.pending <= 0:
            return
        for block in self._md.feed(self._text.take()):
            self._open.append(block)
            self._open_len += len(block)
        self._tail_chars = self._md.tail_chars

    @property
    def _thinking_len(self) -> int:
        return self._thinking.length if self._thinking is not None else 0

    def _tool_lengths(self) -> list[int]:
        return [args.length for _, args in self._tools.values()]

    # ----- throttle and budget ---------------------------------------------------------------
    def rendered_size(self) -> int:
        """HTML bytes this message shows so far (what the budget is proportional to)."""
        limit = self.config.preview_chars
        previews = min(self._thinking_len, limit)
        previews += sum(min(n, limit) for n in self._tool_lengths())
        tail = max(len(self._tail_html), self._tail_chars + self._text.pending)
        return _CARD + self._sealed_len + self._open_len + tail + previews

    def _estimated_cost(self) -> int:
        cfg = self.config
        # The tail renders to a little more than its text; the previews are bounded.
        cost = int((self._tail_chars + self._text.pending) * 1.3) + 300 + cfg.overhead
        if self._live is None:
            cost += _NEW_WIDGET
        if self._open_len >= cfg.seal_bytes:  # a new segment widget plus the children list
            cost += self._open_len + _NEW_WIDGET + 2 * cfg.overhead + 50 * len(self._sealed)
        else:  # the open segment is re-sent with the tail
            cost += self._open_len
        if self._thinking is not None:
            cost += min(self._thinking_len, cfg.preview_chars) + cfg.overhead
        if self._tools:
            cost += sum(min(n, cfg.preview_chars) for n in self._tool_lengths())
            cost += cfg.overhead
        return cost

    def _affordable(self, cost: int) -> bool:
        cfg = self.config
        elapsed = self._clock() - self._started if self._started is not None else 0.0
        allowance = cfg.first + min(cfg.allowance, cfg.allowance_rate * elapsed)
        return self.sent_bytes + cost <= cfg.ratio * self.rendered_size() + allowance

    def _schedule(self) -> None:
        self._last_delta = now = self._clock()
        if not self._dirty:
            return
        affordable = self._affordable(self._estimated_cost())
        if self._timer is not None:
            if not (self._starved and affordable):
                return
            self._timer.cancel()  # the budget grew: no need to wait for the stream to pause
            self._timer = None
        self._starved = not affordable
        if self._starved:
            # The next delta grows the budget and asks again; if the stream pauses instead
            # (an agent running a tool), what arrived is shown after ``idle`` seconds.
            self._later(self.config.idle)
            return
        wait = 0.0 if self._last_flush is None else self._last_flush + self.config.interval - now
        if wait <= 0:
            self.flush()
            return
        self._later(wait)

    def _later(self, wait: float) -> None:
        if self._call_later is not None:
            self._timer = self._call_later(wait, self._on_timer)
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # fed outside any loop (plain sync code): no timer to wait on
            self.flush()
            return
        self._timer = loop.call_later(wait, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._starved = False
        if not self._dirty or self.done:
            return
        if self._affordable(self._estimated_cost()):
            self.flush()
            return
        quiet = self._clock() - self._last_delta
        if quiet >= self.config.idle:
            self.flush()
        else:
            self._starved = True
            self._later(self.config.idle - quiet)

    # ----- output ----------------------------------------------------------------------------
    def _head(self) -> str:
        return head_html("assistant", model=self._model, status=self._status)

    def _count(self, value: str, *, new: bool = False) -> None:
        self.sent_bytes += len(value) + self.config.overhead + (_NEW_WIDGET if new else 0)

    def flush(self) -> None:
        """Send what changed since the last update (ignores the throttle and the budget)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._dirty = False
        self._last_flush = self._clock()
        self.updates += 1
        cfg = self.config
        self._take_text()
        self._tail_html = self._md.tail_html()
        if self._box is None and (
            self._open_len >= cfg.seal_bytes or self._thinking is not None or self._tools
        ):
            self._promote()
        elif self._box is not None and self._open_len >= cfg.seal_bytes:
            self._seal()
        if self._thinking is not None:
            self._set_preview("_thinking_w", self._thinking_html())
        if self._box is None:
            inner = self._head() + body_html("".join(self._open) + self._tail_html)
            value = live_card_html(inner, self._status)
        else:
            value = body_html("".join(self._open) + self._tail_html)
        if self._live is None:
            self._live = self._kit.html(value)
            self._count(value, new=True)
            if self._on_widget is not None:
                self._on_widget(self.widget)
        elif value != self._live.value:
            self._live.value = value
            self._count(value)
        if self._tools:
            self._set_preview("_tools_w", self._tools_html())

    def _promote(self) -> None:
        """From one card widget to a VBox: [head+sealed frozen HTML, previews, live tail]."""
        cfg = self.config
        segment = self._head() + body_html("".join(self._open))
        first = self._kit.html(segment)
        self._sealed.append(first)
        self._sealed_len += self._open_len
        self._open, self._open_len = [], 0
        self._count(segment, new=True)
        if self._live is None:
            self._live = self._kit.html("")
            self._count("", new=True)
        self._box = self._kit.vbox(self._children(), live_card_classes(self._status))
        self.sent_bytes += _NEW_WIDGET + cfg.overhead + 50 * len(self._box.children)
        if self._on_widget is not None:
            self._on_widget(self._box)

    def _seal(self) -> None:
        segment = body_html("".join(self._open))
        self._sealed.append(self._kit.html(segment))
        self._sealed_len += self._open_len
        self._open, self._open_len = [], 0
        self._count(segment, new=True)
        self._set_children()

    def _children(self) -> tuple[Any, ...]:
        children = list(self._sealed[:1])
        if self._thinking_w is not None:
            children.append(self._thinking_w)
        children += [*self._sealed[1:], self._live]
        if self._tools_w is not None:
            children.append(self._tools_w)
        return tuple(children)

    def _set_children(self) -> None:
        children = self._children()
        if self._box.children != children:
            self._box.children = children
            self.sent_bytes += self.config.overhead + 50 * len(children)

    def _set_preview(self, attr: str, value: str) -> None:
        widget = getattr(self, attr)
        if widget is None:
            setattr(self, attr, self._kit.html(value))
            self._count(value, new=True)
            if self._live is not None:
                self._set_children()
        elif widget.value != value:
            widget.value = value
            self._count(value)

    def _thinking_html(self) -> str:
        text = self._thinking.text() if self._thinking is not None else ""
        return live_thinking_html(text, self.config.preview_chars)

    def _tools_html(self) -> str:
        calls = [(name, args.text(), args.length) for name, args in self._tools.values()]
        return live_tools_html(calls, self.config.preview_chars)

    def finish(self, status: Status = "stopped") -> None:
        """End without a recorded message (a stopped or failed run): render the rest of the
        text, mark the card ``status`` and send it once."""
        if self.done:
            return
        self._status = status
        self._take_text()
        for block in self._md.finish():
            self._open.append(block)
            self._open_len += len(block)
        self._tail_chars = 0
        if self._box is not None:
            first = self._sealed[0]
            first.value = first.value.replace(
                head_html("assistant", model=self._model, status="streaming"), self._head(), 1
            )
            self._box._dom_classes = live_card_classes(status)
        self.flush()
        self.done = True

    def adopt(self, card_html: str) -> Any:
        """Show the recorded message's card in the live widget (one update, no new widget),
        close the rest, and return the widget that now holds the card."""
        self.cancel()
        widget = self._live if self._live is not None else self._kit.html(card_html)
        widget.value = card_html
        extra = [*self._sealed, self._thinking_w, self._tools_w, self._box]
        self._sealed, self._thinking_w, self._tools_w, self._box = [], None, None, None
        self._live = None
        for other in extra:
            if other is not None:
                other.close()
        return widget

    def html(self) -> str:
        """What the widgets show, in order (used to compare a live view with a rebuilt one)."""
        if self._box is None:
            return self._live.value if self._live is not None else ""
        return "".join(w.value for w in self._box.children)

    def cancel(self) -> None:
        """Stop timers (the message was recorded and is rendered whole elsewhere)."""
        self.done = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def close(self) -> None:
        """Close the streaming widgets (front-end models are freed too)."""
        self.cancel()
        for widget in (*self._sealed, self._live, self._thinking_w, self._tools_w, self._box):
            if widget is not None:
                widget.close()


_CARD = 400  # bytes of a card's wrapper and heading row
_NEW_WIDGET = 500  # bytes of an HTML widget's own state in its comm_open, besides the value
