"""Live rendering of one message while it streams: StreamDelta signals -> ordered ops on the
view's ``Channel`` (``widgets.channel``), which the front end turns into DOM updates.

Re-sending the accumulated reply per token is quadratic (23 MB of comm traffic for a
3,000-token reply); re-sending a widget value per update costs a whole widget state. Here:

- Markdown goes through ``MarkdownStream``: a finished top-level block is rendered once, on the
  kernel, by the same renderer as a recorded message, and *appended* (``add``);
- the growing tail is sent as its re-rendered HTML while it is short (``tail_html_chars``), and
  past that as its new text only (the page appends it as text until the block is finished);
- thinking and tool arguments show as bounded previews (their last ``preview_chars``);
- updates go out at most ``max_rate`` times a second (the channel throttles; the first at once).

The text comes from the signals' snapshots (``viewmodels.stream.StreamText``): a delta only says
that the part grew, and the snapshot is read when an update is sent, so a message first seen
half-way through shows from its start. When the message is recorded, ``seal_op`` turns the live
card into the recorded card, given as the pieces ``render.html.assistant_parts`` renders
separately (no HTML is cut apart on either side), by sending only what the page does not have yet
(its classes and attributes as data, its head, the last block, what follows the body); when the
recorded card cannot be reached that way, the whole card is sent instead.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from lion_nb.render.html import (
    CardParts,
    Status,
    head_html,
    live_card_classes,
    live_shell_html,
    live_thinking_html,
    live_tools_html,
)
from lion_nb.render.markdown import MarkdownStream
from lion_nb.signals import StreamDelta
from lion_nb.viewmodels.stream import GrowingText, StreamText
from lion_nb.widgets.channel import MAX_RATE, Channel, Op, fingerprint
from lion_nb.widgets.protocol import AddOp, TailOp, add_op, put_op, seal_op, slot_op, tail_op

__all__ = ["LiveConfig", "LiveMessage", "live_shell"]


def live_shell(model: str | None, status: Status = "streaming") -> str:
    """A reply's card as first placed, before any text (a view's synced template for it)."""
    return live_shell_html(head_html("assistant", model=model, status=status), status)


@dataclass(frozen=True, slots=True)
class LiveConfig:
    max_rate: float = MAX_RATE  # updates per second after the first
    preview_chars: int = 1500  # thinking / tool-argument previews show this many last chars
    tail_html_chars: int = 160  # a tail this short is re-rendered as HTML; longer: new text
    # a Send's prompt card waits this long for the reply's first text, to share its message
    # (one envelope less, ~550 B); short enough that the echo still feels immediate
    prompt_hold_s: float = 0.04

    @property
    def interval(self) -> float:
        return 1.0 / self.max_rate if self.max_rate > 0 else 0.0


class LiveMessage:
    """One message being streamed, shown as part ``key`` of a view.

    ``feed`` is called for every StreamDelta (cheap: it marks the part dirty; Markdown is parsed
    and HTML rendered only when the channel sends an update). ``shell_html()`` is the card as
    first placed; ``html()`` what the page shows now (the synced state of a streaming part).
    ``finish(status)`` ends it without a recorded message (stopped or failed run) and keeps the
    partial text; ``seal_op(parts, key)`` turns it into the recorded card."""

    def __init__(
        self,
        message_id: uuid.UUID,
        channel: Channel,
        *,
        key: str | None = None,
        config: LiveConfig | None = None,
        model: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        text: GrowingText | None = None,
    ) -> None:
        self.message_id = message_id
        self.key = key or f"live:{message_id}"
        self.config = config or LiveConfig()
        self._channel = channel
        self._model = model
        self._clock = clock
        self._md = MarkdownStream()
        self._status: Status = "streaming"
        # the text: from the signals' snapshots, or read whole when shown (``text``)
        self._text: StreamText | GrowingText = text if text is not None else StreamText()
        self._thinking: StreamText | None = None
        self._tools: dict[str, tuple[str, StreamText]] = {}
        self._frozen: list[str] = []  # block HTML sent (or about to be)
        self._new_blocks: list[str] = []
        self._tail_shown = ""  # the tail as the page shows it: HTML, or source text
        self._tail_is_text = False
        self._tail_src = ""  # the tail source the page has (text mode)
        self._text_at = 0  # where in ``_tail_src`` the page's text begins (HTML before it)
        self._fed = 0  # characters of text fed to the Markdown stream
        self._tail_end = 0  # ``_fed`` when the page's tail was last brought up to date
        self._slots: dict[str, str] = {}
        self.updates = 0
        self.first_update: float | None = None
        self.done = False

    # ----- input ----------------------------------------------------------------------------
    def feed(self, signal: StreamDelta) -> None:
        if self.done:
            return
        if signal.kind == "text":
            self._text.update(signal)
        elif signal.kind == "thinking":
            if self._thinking is None:
                self._thinking = StreamText()
            self._thinking.update(signal)
        else:
            key = signal.call_id or signal.name or "tool"
            if key not in self._tools:
                self._tools[key] = (signal.name or "tool", StreamText())
            self._tools[key][1].update(signal)
        self._channel.stream(self.key, self.collect, now=self.first_update is None)

    def follow_thinking(self, thinking: StreamText | None) -> None:
        """Show the reasoning of ``thinking`` (a view model's), not the one fed here."""
        self._thinking = thinking

    def _take_text(self) -> None:
        if self._text.pending > 0:
            delta = self._text.take()
            self._fed += len(delta)
            blocks = self._md.feed(delta)
            self._frozen.extend(blocks)
            self._new_blocks.extend(blocks)

    # ----- output ----------------------------------------------------------------------------
    def _head(self) -> str:
        return head_html("assistant", model=self._model, status=self._status)

    def shell_html(self) -> str:
        return live_shell(self._model, self._status)

    def collect(self) -> list[Op]:
        """The ops that bring the page up to date (called by the channel when it sends)."""
        if self.done:
            return []
        self._take_text()
        ops: list[Op] = []
        if self._new_blocks:
            add: AddOp = add_op(self.key, "".join(self._new_blocks))
            self._new_blocks = []
            shown, kept = self._kept_tail()
            if kept:  # the page keeps the text it shows of the next block
                add["keep"] = len(kept.encode("utf-16-le")) // 2  # in JavaScript's units
                self._tail_shown, self._tail_is_text, self._tail_src = "", True, kept
            else:
                self._tail_shown, self._tail_is_text, self._tail_src = "", False, ""
            self._text_at = 0
            ops.append(add)
            # a block is often finished only once the next one has grown long (a paragraph
            # ends when the line after it does): the page keeps what it shows of the next
            # one, else that text went and came back an update later (the "text shrinks and
            # comes back" glitch). The new tail is sent now while short or when the page
            # could not keep what it showed; else with the next update, if its block is not
            # finished by then (sending the text of a block that finishes within an update
            # would send it twice)
            if len(self._md.tail_text()) <= self.config.tail_html_chars or (shown and not kept):
                ops.extend(self._tail_ops())
            elif kept:
                # the page showed the blocks' text already: without what the next block grew
                # by since, this update would show nothing new, and the reply would stand
                # still for a whole interval at every block's end (longer on a busy machine).
                # It goes in the add op (a few bytes, where a tail op of its own costs ~80)
                self._grow_in(add)
        else:
            ops.extend(self._tail_ops())
        if self._thinking is not None:
            ops.extend(self._slot("thinking", self._thinking_html()))
        if self._tools:
            ops.extend(self._slot("tools", self._tools_html()))
        if ops:
            self.updates += 1
            if self.first_update is None:
                self.first_update = self._clock()
        return ops

    def _grow_in(self, add: AddOp) -> None:
        """Put the tail's new text in ``add`` (the page appends it after what it kept)."""
        for op in self._tail_ops():
            if "text" in op and op.get("add"):
                add["text"] = op["text"]
            else:  # the block was rewritten (rare): the tail whole, after the add
                self._channel.queue(op)

    def _kept_tail(self) -> tuple[bool, str]:
        """Blocks were just finished: does the page show some of the new tail (the next
        block), and what of it can it keep instead of being sent it again (text it shows as
        text, not the rendered start of its tail)."""
        old, new = self._tail_src, self._md.tail_text()
        n = self._tail_end - (self._fed - len(new))  # chars of the new tail the page has
        if n <= 0 or not new:
            return False, ""
        if not self._tail_is_text or n > len(old) - self._text_at:
            return True, ""
        kept = old[-n:]
        return True, (kept if new.startswith(kept) else "")

    def _tail_ops(self) -> list[TailOp]:
        """The growing last block: re-rendered while short; past ``tail_html_chars``, only
        the text that arrived since (the page shows it as text after the rendered start,
        until the block is finished and sent rendered)."""
        src = self._md.tail_text()
        self._tail_end = self._fed
        if len(src) > self.config.tail_html_chars and src.startswith(self._tail_src):
            new = src[len(self._tail_src) :]
            if not self._tail_is_text:  # the page's tail: the rendered start, then text
                self._text_at = len(self._tail_src)
            self._tail_src, self._tail_is_text = src, True
            return [tail_op(self.key, text=new, add=True)] if new else []
        if self._tail_is_text:  # the block was rewritten (rare): its text, whole
            self._tail_src, self._text_at = src, 0
            return [tail_op(self.key, text=src, add=False)]
        html_ = self._md.tail_html() if src else ""
        self._tail_src = src
        if html_ == self._tail_shown:
            return []
        self._tail_shown = html_
        return [tail_op(self.key, html=html_)]

    def _slot(self, name: Literal["thinking", "tools"], html_: str) -> list[Op]:
        if self._slots.get(name) == html_:
            return []
        self._slots[name] = html_
        return [slot_op(self.key, name, html_)]

    def _thinking_html(self) -> str:
        text = self._thinking.text() if self._thinking is not None else ""
        return live_thinking_html(text, self.config.preview_chars)

    def _tools_html(self) -> str:
        calls = [(name, args.text(), args.length) for name, args in self._tools.values()]
        return live_tools_html(calls, self.config.preview_chars)

    def html(self) -> str:
        """The card as the page shows it now (what a late front end is sent)."""
        self._take_text()
        tail = self._md.tail_html() if self._md.tail_text() else ""
        return live_shell_html(
            self._head(),
            self._status,
            thinking=self._slots.get("thinking", ""),
            frozen="".join(self._frozen),
            tail=tail,
            tools=self._slots.get("tools", ""),
        )

    def text(self) -> str:
        """The text streamed so far (what a copy control copies)."""
        return self._text.text()

    def finish(self, status: Status = "stopped") -> list[Op]:
        """End without a recorded message (a stopped or failed run): render the rest of the
        text and mark the card ``status``; returns the ops (also queued on the channel)."""
        if self.done:
            return []
        self._status = status
        self._take_text()
        rest = self._md.finish()
        self._frozen.extend(rest)
        self.done = True
        self._channel.forget(self.key)
        op = seal_op(
            self.key,
            head=self._head(),
            add="".join(self._new_blocks + rest),
            cls=" ".join(live_card_classes(status)),
        )
        self._new_blocks = []
        self._channel.push(op)
        return [op]

    def seal_op(self, card: CardParts, new_key: str) -> Op:
        """The op that turns this live card into the recorded message's card, given as its
        named pieces (``render.html.assistant_parts``; its part key becomes ``new_key``): the
        card's classes and attributes, its head, thinking, what the page lacks of the body and
        what follows the body, when the body is the blocks already sent plus the rest; else a
        ``put`` of the whole card."""
        self._take_text()
        last = self._md.finish()
        rest = "".join(self._new_blocks + last)  # what the page has not been sent
        self._frozen.extend(last)
        self._new_blocks = []
        self.done = True
        self._channel.forget(self.key)
        html_ = card.html()
        if card.body != "".join(self._frozen):
            return put_op(new_key, html_, replace=self.key)
        return seal_op(
            self.key,
            id=new_key,
            cls=" ".join(card.classes),
            attrs=card.attrs,
            head=card.head,
            thinking=card.thinking,
            add=rest,
            after=card.after,
            fp=fingerprint(html_),
        )

    def cancel(self) -> None:
        self.done = True
        self._channel.forget(self.key)
