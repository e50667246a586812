"""The transcript of a ``BranchView``: one part per message, in the order of its view model
(``viewmodels.transcript.TranscriptModel``: which messages, in what order), sent to the front
end as ordered ops on the view's ``Channel``.

Rendering is idempotent by message id: a recorded message is one HTML card
(``render.html.message_html``); a message still streaming is a ``LiveMessage`` that the
recorded card replaces (``seal``) when ``MessageAdded`` arrives. A transcript built from
``branch.messages`` therefore shows the same HTML as one that watched the run (``html()``
compares them). The view that owns it decides *when* (which signals, which run); this class
only places parts.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lion_nb.render.html import Status, message_html, pending_prompt_html
from lion_nb.signals import StreamDelta
from lion_nb.viewmodels.transcript import Key, TranscriptModel, is_live
from lion_nb.widgets.channel import Channel
from lion_nb.widgets.live import LiveConfig, LiveMessage

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
        """The HTML of the parts, in order (a live part: as the page shows it now)."""
        return "".join(html_ for _, html_ in self.items)

    def text_of(self, key: str) -> str | None:
        """What a copy control of part ``key`` copies: a message's text (Markdown)."""
        for k in self.model.keys:
            if self.key_of(k) != key:
                continue
            if is_live(k):
                live = self.live.get(k[1])  # type: ignore[index]
                return live.text() if live is not None else ""
            if isinstance(k, uuid.UUID) and k in self.branch.messages:
                from lion_nb.render.text import message_copy_text

                return message_copy_text(self.branch.messages[k])
            return None
        return None

    def _part_html(self, key: Key) -> str:
        if is_live(key) and key[1] in self.live:  # type: ignore[index]
            live = self.live[key[1]]  # type: ignore[index]
            if not live.done or key not in self._html:
                return live.html()
        return self._html.get(key, "")

    def _before(self, key: Key) -> str | None:
        keys = self.model.keys
        at = keys.index(key)
        return self.key_of(keys[at + 1]) if at + 1 < len(keys) else None

    # ----- changes ---------------------------------------------------------------------------
    def show_prompt(self, text: str) -> None:
        """Show ``text`` at once as a pending user card; its Instruction replaces it."""
        key = self.model.add_pending()
        self._html[key] = pending_prompt_html(text)
        self._channel.push(
            {"op": "put", "key": self.key_of(key), "html": self._html[key], "before": None},
            hold=self.config.prompt_hold_s,
        )

    def release_prompt(self) -> None:
        """The run ended: an unrecorded prompt stays visible as it is."""
        self.model.pending = None

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
            self._channel.queue(
                {"op": "put", "key": live.key, "html": live.shell_html(), "before": None}
            )
        live.feed(signal)

    def on_message(self, message: Any) -> None:
        if not self.model.wants(message):
            return
        mid = message.id
        card = message_html(message)
        live = self.live.pop(mid, None)
        if live is not None and self.model.shows(("live", mid)):
            self._channel.push(live.seal_op(card, str(mid)))
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
            self._channel.push(
                {"op": "put", "key": str(mid), "html": card, "replace": self.key_of(pending)}
            )
            return
        self.model.insert_message(mid)
        self._html[mid] = card
        self._channel.push(
            {"op": "put", "key": str(mid), "html": card, "before": self._before(mid)}
        )

    def finish_live(self, status: Status) -> None:
        """Replies that will not be recorded keep their partial text, marked ``status``."""
        for mid, live in self.live.items():
            if not live.done:
                live.finish(status)
                self._html[("live", mid)] = live.html()

    def drop_unfinished(self) -> None:
        """A run ended normally: replies streamed for turns that are not recorded (parse
        repairs) are dropped."""
        for mid in [m for m, live in self.live.items() if not live.done]:
            live = self.live.pop(mid)
            live.cancel()
            self.model.drop(("live", mid))
            self._channel.push({"op": "drop", "key": live.key})

    def check(self) -> None:
        """Rebuild when the branch changed without signals (``clear_messages``)."""
        if self.model.stale():
            self.rebuild()

    def rebuild(self) -> None:
        """Show ``branch.messages`` afresh (a pending prompt stays at the end)."""
        for live in self.live.values():
            live.cancel()
        self.live.clear()
        pending = self.model.pending
        kept = self._html.get(pending) if pending is not None else None
        self.model.rebuild()
        shown = set(self.model.keys)
        self._html = {m.id: message_html(m) for m in self.branch.messages if m.id in shown}
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
        self.rebuild()

    def close(self) -> None:
        for live in self.live.values():
            live.cancel()
        self.live.clear()
        self._html.clear()
        self.model.keys.clear()
