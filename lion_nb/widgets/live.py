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
  (payload plus an estimated envelope per comm message) may not exceed ``ratio`` times the HTML
  rendered so far plus ``allowance``. A slow stream of a long unfinished block (a huge code
  fence) therefore updates less often instead of costing more.
- All widgets share one ``Layout`` and one ``HTMLStyle`` (a fresh ``Layout`` alone is ~1 KB of
  state per widget).

Thinking and tool-argument deltas show as bounded previews (their last ``preview_chars``); the
recorded message, rendered whole, replaces the live widgets when ``MessageAdded`` arrives.
"""

from __future__ import annotations

import asyncio
import html
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lion_nb.render.html import Status, head_html
from lion_nb.render.markdown import MarkdownStream
from lion_nb.signals import StreamDelta

__all__ = ["LiveConfig", "LiveMessage", "WidgetKit"]


@dataclass(frozen=True, slots=True)
class LiveConfig:
    max_rate: float = 15.0  # updates per second after the first
    ratio: float = 2.5  # streaming bytes allowed per byte of HTML rendered so far
    allowance: int = 2048  # bytes allowed before the ratio applies (short replies stay smooth)
    seal_bytes: int = 4096  # frozen HTML kept in the live widget before it gets its own
    preview_chars: int = 1500  # thinking / tool-argument previews show this many last chars
    overhead: int = 700  # estimated bytes of one comm message's envelope (header, ids, hmac)

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
        return self.w.HTML(value=value, layout=self.layout, style=self.style,
                           _dom_classes=classes)

    def vbox(self, children: list[Any] | tuple[Any, ...] = (), classes: tuple[str, ...] = ()
             ) -> Any:
        return self.w.VBox(children=tuple(children), layout=self.layout, _dom_classes=classes)


def _escape(text: str) -> str:
    return html.escape(text, quote=False)


def _body(blocks_html: str) -> str:
    return f'<div class="lion-body lion-md">{blocks_html}</div>' if blocks_html else ""


class LiveMessage:
    """The widgets of one message being streamed, keyed by its ``message_id``.

    ``feed(delta)`` is called for every StreamDelta of the message (cheap: Markdown is parsed
    incrementally, HTML is rendered only when an update is sent). ``finish(note)`` ends it
    without a recorded message (stopped or failed run) and leaves the partial text visible.
    """

    def __init__(
        self,
        message_id: uuid.UUID,
        kit: WidgetKit,
        *,
        config: LiveConfig | None = None,
        clock: Callable[[], float] = time.monotonic,
        model: str | None = None,
    ) -> None:
        self.message_id = message_id
        self.config = config or LiveConfig()
        self._kit = kit
        self._clock = clock
        self._model = model
        self._md = MarkdownStream()
        self._open: list[str] = []  # frozen block HTML not yet sealed
        self._open_len = 0
        self._sealed_len = 0
        self._tail_html = ""
        self._tail_chars = 0  # text characters in the unfrozen tail (cost estimate)
        self._thinking: list[str] = []
        self._thinking_len = 0
        self._tools: dict[str, tuple[str, list[str], int]] = {}  # call_id -> name, parts, length
        self._head = kit.html(head_html("assistant", model=model, status="streaming"))
        self._live = kit.html("")
        self._thinking_w: Any = None
        self._tools_w: Any = None
        self._sealed: list[Any] = []
        self.box = kit.vbox([self._head, self._live],
                            ("lion-msg", "lion-assistant", "lion-streaming-msg", "lion-live"))
        self.sent_bytes = 0  # estimated: payloads plus one envelope per comm message
        self.updates = 0
        self._last_flush: float | None = None
        self._dirty = False
        self._timer: asyncio.TimerHandle | None = None
        self.done = False

    # ----- input ----------------------------------------------------------------------------
    def feed(self, signal: StreamDelta) -> None:
        if self.done:
            return
        if signal.kind == "text":
            for block in self._md.feed(signal.delta):
                self._open.append(block)
                self._open_len += len(block)
                self._tail_chars = 0
            self._tail_chars += len(signal.delta)
        elif signal.kind == "thinking":
            self._thinking.append(signal.delta)
            self._thinking_len += len(signal.delta)
        else:
            key = signal.call_id or signal.name or "tool"
            name, parts, length = self._tools.get(key, (signal.name or "tool", [], 0))
            parts.append(signal.delta)
            self._tools[key] = (name, parts, length + len(signal.delta))
        self._dirty = True
        self._schedule()

    # ----- throttle and budget ---------------------------------------------------------------
    def rendered_size(self) -> int:
        """HTML bytes this message shows so far (what the budget is proportional to)."""
        previews = min(self._thinking_len, self.config.preview_chars) + sum(
            min(length, self.config.preview_chars) for _, _, length in self._tools.values())
        return self._sealed_len + self._open_len + max(len(self._tail_html),
                                                       self._tail_chars) + previews

    def _estimated_cost(self) -> int:
        # The tail renders to a little more than its text; the previews are bounded.
        cost = self._open_len + int(self._tail_chars * 1.3) + self.config.overhead
        if self._thinking:
            cost += min(self._thinking_len, self.config.preview_chars) + self.config.overhead
        if self._tools:
            cost += sum(min(n, self.config.preview_chars) for _, _, n in self._tools.values())
            cost += self.config.overhead
        if self._open_len >= self.config.seal_bytes:
            cost += self._open_len + 2 * self.config.overhead + 60 * (len(self._sealed) + 2)
        return cost

    def _affordable(self, cost: int) -> bool:
        cfg = self.config
        return self.sent_bytes + cost <= cfg.ratio * self.rendered_size() + cfg.allowance

    def _schedule(self) -> None:
        if self._timer is not None or not self._dirty:
            return
        if not self._affordable(self._estimated_cost()):
            return  # the next delta grows the budget and asks again
        now = self._clock()
        wait = 0.0 if self._last_flush is None else self._last_flush + self.config.interval - now
        if wait <= 0:
            self.flush()
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # fed outside any loop (plain sync code): no timer to wait on
            self.flush()
            return
        self._timer = loop.call_later(wait, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        if self._dirty and not self.done and self._affordable(self._estimated_cost()):
            self.flush()

    # ----- output ----------------------------------------------------------------------------
    def flush(self) -> None:
        """Send what changed since the last update (ignores the throttle and the budget)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._dirty = False
        self._last_flush = self._clock()
        self.updates += 1
        overhead = self.config.overhead
        if self._open_len >= self.config.seal_bytes:
            self._seal()
        self._tail_html = self._md.tail_html()
        if self._thinking:
            self._set_thinking()
        value = _body("".join(self._open) + self._tail_html)
        if value != self._live.value:
            self._live.value = value
            self.sent_bytes += len(value) + overhead
        if self._tools:
            self._set_tools()

    def _seal(self) -> None:
        segment = _body("".join(self._open))
        widget = self._kit.html(segment)
        self._sealed.append(widget)
        self._sealed_len += len(segment)
        self._open, self._open_len = [], 0
        self._set_children()
        # the widget's state on comm_open, plus the container's new children list
        self.sent_bytes += len(segment) + 2 * self.config.overhead + 60 * (len(self._sealed) + 2)

    def _set_children(self) -> None:
        children = [self._head]
        if self._thinking_w is not None:
            children.append(self._thinking_w)
        children += [*self._sealed, self._live]
        if self._tools_w is not None:
            children.append(self._tools_w)
        self.box.children = tuple(children)

    def _set_thinking(self) -> None:
        limit = self.config.preview_chars
        text = "".join(self._thinking)
        self._thinking = [text]
        shown = text[-limit:]
        more = "…" if len(text) > limit else ""
        value = (f'<details class="lion-thinking lion-live-thinking"><summary>thinking '
                 f"({len(text):,} chars)</summary><pre>{more}{_escape(shown)}</pre></details>")
        if self._thinking_w is None:
            self._thinking_w = self._kit.html(value)
            self._set_children()
            self.sent_bytes += len(value) + 2 * self.config.overhead
        elif self._thinking_w.value != value:
            self._thinking_w.value = value
            self.sent_bytes += len(value) + self.config.overhead

    def _set_tools(self) -> None:
        limit = self.config.preview_chars
        rows = []
        for name, parts, length in self._tools.values():
            args = "".join(parts)
            parts[:] = [args]
            shown = ("…" if length > limit else "") + args[-limit:]
            rows.append(f'<div class="lion-live-tool"><span class="lion-tool-name">'
                        f"{_escape(name)}</span>(<code>{_escape(shown)}</code>)</div>")
        value = "".join(rows)
        if self._tools_w is None:
            self._tools_w = self._kit.html(value)
            self._set_children()
            self.sent_bytes += len(value) + 2 * self.config.overhead
        elif self._tools_w.value != value:
            self._tools_w.value = value
            self.sent_bytes += len(value) + self.config.overhead

    def finish(self, status: Status = "stopped", note_html: str = "") -> None:
        """End without a recorded message (a stopped or failed run): render the rest of the
        text, mark the card ``status``, append ``note_html``, and send it once."""
        if self.done:
            return
        self._head.value = head_html("assistant", model=self._model, status=status)
        for block in self._md.finish():
            self._open.append(block)
            self._open_len += len(block)
        self._tail_chars = 0
        if note_html:
            self._open.append(note_html)
            self._open_len += len(note_html)
        self.flush()
        self.done = True

    def html(self) -> str:
        """What the widgets show, in order (used to compare a live view with a rebuilt one)."""
        return "".join(w.value for w in self.box.children)

    def cancel(self) -> None:
        """Stop timers (the message was recorded and is rendered whole elsewhere)."""
        self.done = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def close(self) -> None:
        """Close the streaming widgets (front-end models are freed too)."""
        self.cancel()
        for widget in (self._head, *self._sealed, self._live, self._thinking_w, self._tools_w,
                       self.box):
            if widget is not None:
                widget.close()
