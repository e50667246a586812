"""The transcript of a ``BranchView``: one part per message, in the order of its view model
(``viewmodels.transcript.TranscriptModel``: which messages, in what order), sent to the front
end as ordered ops on the view's ``Channel``.

Rendering is idempotent by message id: a recorded message is one HTML card
(``render.html.message_html``, with its marks: truncated, continued); a message still streaming
is a ``LiveMessage`` that the recorded card replaces (``seal``) when ``MessageAdded`` arrives. A
transcript built from ``branch.messages`` therefore shows the same HTML as one that watched the
run (``html()`` compares them). The view that owns it decides *when* (which signals, which
run); this class only places parts.

It shows what the branch holds: a model request that will be recorded shows its instruction
pending while the reply streams (``CallStart``); a request that ends with nothing recorded
(``CallEnd``) leaves no card that looks kept — an unrecorded call's reply (a parse repair turn)
goes, a stopped or failed one stays marked "not recorded" until the next turn begins.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lion_nb.render.html import assistant_parts, message_html, pending_prompt_html
from lion_nb.render.marks import context_cut_html
from lion_nb.render.text import message_copy_text
from lion_nb.signals import CallEnd, CallStart, StreamDelta
from lion_nb.turns import continuations, last_cut
from lion_nb.viewmodels.transcript import Key, TranscriptModel, is_live
from lion_nb.widgets.channel import Channel
from lion_nb.widgets.live import LiveConfig, LiveMessage
from lion_nb.widgets.protocol import drop_op, put_op

if TYPE_CHECKING:
    from lion_nb.messages import RoledMessage
    from lion_nb.session.branch import Branch

__all__ = ["Transcript"]


def model_label(branch: Branch) -> str | None:
    model = branch.chat_model_or_none  # never resolve a default model just to label
    if model is None:
        return None
    name, provider = model.model, model.provider_name
    return f"{provider}/{name}" if name and name != provider else provider


class Transcript:
    """The message parts of ``branch``. ``hidden`` message ids are never shown (a view made
    with ``history=False`` hides what was recorded before it); ``reset`` is called when the
    whole transcript changed (the view then syncs its state instead of sending ops)."""

    def __init__(
        self,
        branch: Branch,
        channel: Channel,
        *,
        hidden: frozenset[uuid.UUID] = frozenset(),
        config: LiveConfig | None = None,
        reset: Callable[[], None] = lambda: None,
    ) -> None:
        self.branch = branch
        self.model = TranscriptModel(branch, hidden)
        self.config = config or LiveConfig()
        self._channel = channel
        self._reset = reset
        self._html: dict[Key, str] = {}
        self.live: dict[uuid.UUID, LiveMessage] = {}
        self._short: dict[Key, str] = {}  # live / pending keys -> short part keys (L1, P2..)
        self._prompts: dict[Key, str] = {}  # pending prompt keys -> the text they show
        self._calls: dict[uuid.UUID, Key] = {}  # a recorded call's reply id -> its prompt key
        self._unrecorded: set[Key] = set()  # parts of a turn that ended with nothing recorded

    # ----- reading -------------------------------------------------------------------------
    @property
    def items(self) -> list[tuple[Key, str]]:
        return [(key, self._part_html(key)) for key in self.model.keys]

    def key_of(self, key: Key) -> str:
        """The front end's name of a transcript key: a recorded message's id, or a short
        name for a reply streaming (``L1``...) or a prompt not recorded yet (``P1``...): they
        go with every streamed op, so they are kept short."""
        if not isinstance(key, tuple):
            return str(key)
        if key not in self._short:
            self._short[key] = f"{'L' if key[0] == 'live' else 'P'}{len(self._short) + 1}"
        return self._short[key]

    def state(self) -> list[list[str]]:
        """``[[part key, html], ...]``: the complete state a front end shows."""
        return [[self.key_of(key), html_] for key, html_ in self.items]

    def shown_ids(self) -> list[uuid.UUID]:
        return self.model.shown_ids()

    def messages(self) -> list[RoledMessage]:
        return self.model.messages()

    def html(self) -> str:
        """The HTML of the parts, in order (a live part: as the page shows it now), with the
        context-cut notice where the page shows it."""
        cut = self.cut_mark()
        out = []
        for key, html_ in self.items:
            if cut is not None and key == cut[0]:
                out.append(cut[1])
            out.append(html_)
        return "".join(out)

    def cut_mark(self) -> tuple[uuid.UUID, str, int] | None:
        """Where the last request was cut to fit the window: the id of the message the
        notice goes before, the notice (``render.html.context_cut_html``) and how many
        messages were left out."""
        cut = last_cut(self.model.messages())
        if cut is None:
            return None
        at = cut.before or cut.instruction
        if not self.model.shows(at):
            return None
        return at, context_cut_html(cut.omitted), cut.omitted

    def _card(self, message: Any) -> str:
        continued = continuations(self.model.messages()).get(str(message.id))
        return message_html(message, continued_by=continued)

    def text_of(self, key: str) -> str | None:
        """What a copy control of part ``key`` copies: a message's text (Markdown)."""
        for k in self.model.keys:
            if self.key_of(k) != key:
                continue
            if is_live(k):
                live = self.live.get(k[1])
                return live.text() if live is not None else ""
            if isinstance(k, uuid.UUID) and k in self.branch.messages:
                return message_copy_text(self.branch.messages[k])
            return None
        return None

    def _part_html(self, key: Key) -> str:
        if is_live(key) and key[1] in self.live:
            live = self.live[key[1]]
            if not live.done or key not in self._html:
                return live.html()
        return self._html.get(key, "")

    def _before(self, key: Key) -> str | None:
        keys = self.model.keys
        at = keys.index(key)
        return self.key_of(keys[at + 1]) if at + 1 < len(keys) else None

    # ----- changes ---------------------------------------------------------------------------
    def show_prompt(self, text: str, *, hold: bool = True) -> None:
        """Show ``text`` at once as a pending user card; its Instruction replaces it. What an
        earlier turn left unrecorded goes first."""
        self.drop_unrecorded()
        key = self.model.add_pending()
        self._prompts[key] = text
        self._html[key] = pending_prompt_html(text)
        self._channel.push(
            put_op(self.key_of(key), self._html[key], before=None),
            hold=self.config.prompt_hold_s if hold else 0.0,
        )

    def release_prompt(self) -> None:
        """The turn ended: a prompt whose Instruction was not recorded stays, marked "not
        recorded", until the next turn begins."""
        pending = self.model.pending
        self.model.pending = None
        if pending is not None and self.model.shows(pending):
            self._mark_unrecorded_prompt(pending)

    def on_call_start(self, signal: CallStart) -> None:
        """A model request began. A request that will be recorded shows its instruction
        pending while the reply streams (the view's own prompt card stands for it)."""
        pending = self.model.pending
        if pending is not None and pending not in self._calls.values():
            self._calls[signal.message_id] = pending  # the view's Send showed it already
            return
        self.drop_unrecorded()
        ins = signal.instruction
        if not signal.records or ins is None or not self.model.wants(ins):
            return
        text = ins.instruction if isinstance(ins.instruction, str) else ins.text
        self.show_prompt(text or ins.text, hold=False)
        if self.model.pending is not None:
            self._calls[signal.message_id] = self.model.pending

    def on_call_end(self, signal: CallEnd) -> None:
        """A model request ended: nothing shown may look kept unless it was recorded."""
        prompt = self._calls.pop(signal.message_id, None)
        if signal.recorded:
            return
        live = self.live.get(signal.message_id)
        if signal.outcome == "done":  # an unrecorded call (chat, a parse repair turn): it goes
            if live is not None:
                self._drop_live(signal.message_id)
            return
        if live is not None and not live.done:
            live.finish("unrecorded")
            self._html[("live", signal.message_id)] = live.html()
            self._unrecorded.add(("live", signal.message_id))
        if prompt is not None and self.model.shows(prompt):
            if self.model.pending == prompt:
                self.model.pending = None
            self._mark_unrecorded_prompt(prompt)

    def _mark_unrecorded_prompt(self, key: Key) -> None:
        if key in self._unrecorded:
            return
        self._unrecorded.add(key)
        self._html[key] = pending_prompt_html(self._prompts.get(key, ""), recorded=False)
        name = self.key_of(key)
        self._channel.push(put_op(name, self._html[key], replace=name))

    def drop_unrecorded(self) -> None:
        """A new turn begins: the parts of a turn that ended with nothing recorded go."""
        for key in list(self._unrecorded):
            if is_live(key):
                self._drop_live(key[1])
            elif self.model.shows(key):
                self.model.drop(key)
                self._html.pop(key, None)
                self._channel.push(drop_op(self.key_of(key)))
        self._unrecorded.clear()

    def _drop_live(self, mid: uuid.UUID) -> None:
        live = self.live.pop(mid, None)
        if live is None:
            return
        live.cancel()
        if self.model.shows(("live", mid)):
            self.model.drop(("live", mid))
            self._html.pop(("live", mid), None)
            self._channel.push(drop_op(live.key))

    def on_delta(self, signal: StreamDelta) -> None:
        live = self.live.get(signal.message_id)
        if live is None:
            if self.model.shows(signal.message_id):
                return  # a late delta for a message already recorded
            mid = signal.message_id
            key = ("live", mid)
            live = LiveMessage(
                mid,
                self._channel,
                key=self.key_of(key),
                config=self.config,
                model=model_label(self.branch),
            )
            self.live[mid] = live
            self.model.place(key)
            # queued, not sent: the feed below sends it with the reply's first text
            self._channel.queue(put_op(live.key, live.shell_html(), before=None))
        live.feed(signal)

    def on_message(self, message: Any) -> None:
        if not self.model.wants(message):
            return
        mid = message.id
        card = self._card(message)
        continues = message.metadata.get("continues") if message.role == "user" else None
        if isinstance(continues, str):
            self.refresh_card(continues)  # the continued reply: no Continue any more
        live = self.live.pop(mid, None)
        if live is not None and self.model.shows(("live", mid)):
            if message.role == "assistant":
                continued = continuations(self.model.messages()).get(str(mid))
                op = live.seal_op(assistant_parts(message, continued), str(mid))
            else:  # not a reply (never expected): the whole card in the live card's place
                live.cancel()
                op = put_op(str(mid), card, replace=live.key)
            self._channel.push(op)
            self.model.replace(("live", mid), mid)
            self._html[mid] = card
            return
        if live is not None:
            live.cancel()
        pending = self.model.pending
        if pending is not None and message.role == "user":
            self.model.replace(pending, mid)
            self._html.pop(pending, None)
            self._html[mid] = card
            self._channel.push(put_op(str(mid), card, replace=self.key_of(pending)))
            return
        self.model.insert_message(mid)
        self._html[mid] = card
        self._channel.push(put_op(str(mid), card, before=self._before(mid)))

    def refresh_card(self, message_id: str) -> None:
        """Draw a recorded message's card again (its marks changed)."""
        for mid in self.model.recorded():
            if str(mid) == message_id and mid in self.branch.messages:
                card = self._card(self.branch.messages[mid])
                if self._html.get(mid) != card:
                    self._html[mid] = card
                    self._channel.push(put_op(str(mid), card, replace=str(mid)))
                return

    def finish_live(self) -> None:
        """The turn ended: replies still streaming were not recorded; they keep their partial
        text, marked "not recorded", until the next turn begins."""
        for mid, live in self.live.items():
            if not live.done:
                live.finish("unrecorded")
                self._html[("live", mid)] = live.html()
                self._unrecorded.add(("live", mid))

    def drop_unfinished(self) -> None:
        """A run ended normally: replies streamed for turns that are not recorded (parse
        repairs) are dropped."""
        for mid in [m for m, live in self.live.items() if not live.done]:
            self._drop_live(mid)

    def check(self) -> None:
        """Rebuild when the branch changed without signals (``clear_messages``)."""
        if self.model.stale():
            self.rebuild()

    def rebuild(self) -> None:
        """Show ``branch.messages`` afresh (a pending prompt stays at the end)."""
        for live in self.live.values():
            live.cancel()
        self.live.clear()
        self._unrecorded.clear()
        self._calls.clear()
        pending = self.model.pending
        kept = self._html.get(pending) if pending is not None else None
        self.model.rebuild()
        shown = set(self.model.keys)
        messages = [m for m in self.branch.messages if m.id in shown]
        continued = continuations(messages)
        self._html = {
            m.id: message_html(m, continued_by=continued.get(str(m.id))) for m in messages
        }
        if pending is not None and kept is not None:
            self._html[pending] = kept
        self._reset()

    def rebind(self, branch: Branch) -> None:
        """Show another branch (an alternative of the conversation) from its messages."""
        for live in self.live.values():
            live.cancel()
        self.live.clear()
        self.branch = branch
        self.model = TranscriptModel(branch)
        self._html.clear()
        self._prompts.clear()
        self.rebuild()

    def close(self) -> None:
        for live in self.live.values():
            live.cancel()
        self.live.clear()
        self._html.clear()
        self.model.keys.clear()
