"""The transcript of a ``BranchView``: one widget per message, in the order of its view model
(``viewmodels.transcript.TranscriptModel``: which messages, in what order).

Rendering is idempotent by message id: a recorded message is one HTML card
(``render.html.message_html``); a message still streaming is a ``LiveMessage`` that the recorded
card replaces when ``MessageAdded`` arrives. A transcript built from ``branch.messages``
therefore shows the same HTML as one that watched the run (``html()`` compares them). The view
that owns it decides *when* (which signals, which run); this class only places widgets.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ipywidgets

from lion_nb.render.html import Status, message_html, pending_prompt_html
from lion_nb.signals import StreamDelta
from lion_nb.viewmodels.transcript import Key, TranscriptModel, is_live
from lion_nb.widgets.live import LiveConfig, LiveMessage, WidgetKit

if TYPE_CHECKING:
    from lion_nb.messages import RoledMessage
    from lion_nb.session.branch import Branch

__all__ = ["Transcript"]


def _model_label(branch: Branch) -> str | None:
    model = branch.chat_model_or_none  # never resolve a default model just to label
    if model is None:
        return None
    return f"{model.provider_name}/{model.model}" if model.model else model.provider_name


class Transcript:
    """The message widgets of ``branch`` in ``box`` (a VBox). ``hidden`` message ids are never
    shown (a view made with ``history=False`` hides what was recorded before it).

    ``items`` is ``[(key, widget)]`` in reading order (keys as in ``TranscriptModel``);
    ``live`` maps message ids to their ``LiveMessage``."""

    def __init__(
        self,
        branch: Branch,
        kit: WidgetKit,
        *,
        hidden: frozenset[uuid.UUID] = frozenset(),
        config: LiveConfig | None = None,
        clock: Callable[[], float],
    ) -> None:
        self.branch = branch
        self.model = TranscriptModel(branch, hidden)
        self.config = config or LiveConfig()
        self._kit = kit
        self._clock = clock
        self._widgets: dict[Key, Any] = {}
        self.live: dict[uuid.UUID, LiveMessage] = {}
        self._provisional: Any = None  # the prompt shown at once, until its Instruction is recorded
        self.box = ipywidgets.VBox(
            layout=ipywidgets.Layout(flex="0 0 auto"), _dom_classes=("lion-transcript",)
        )

    # ----- reading -------------------------------------------------------------------------
    @property
    def items(self) -> list[tuple[Key, Any]]:
        return [(key, self._widgets[key]) for key in self.model.keys]

    def shown_ids(self) -> list[uuid.UUID]:
        """Ids of the recorded messages this transcript shows, in the branch's order."""
        return self.model.shown_ids()

    def messages(self) -> list[RoledMessage]:
        """The recorded messages this transcript shows (what a static copy should hold)."""
        return self.model.messages()

    def html(self) -> str:
        """The HTML as the widgets show it, in order."""
        return "".join(self._item_html(key, widget) for key, widget in self.items)

    # ----- changes ---------------------------------------------------------------------------
    def show_prompt(self, text: str) -> None:
        """Show ``text`` at once as a pending user card; its Instruction replaces it."""
        self._provisional = self._kit.html(pending_prompt_html(text))
        self._widgets[self.model.add_pending()] = self._provisional
        self._sync()

    def release_prompt(self) -> None:
        """The run ended: an unrecorded prompt stays visible as it is."""
        self._provisional = None
        self.model.pending = None

    def on_delta(self, signal: StreamDelta) -> None:
        live = self.live.get(signal.message_id)
        if live is None:
            if self.model.shows(signal.message_id):
                return  # a late delta for a message already recorded
            mid = signal.message_id
            live = LiveMessage(
                mid,
                self._kit,
                config=self.config,
                clock=self._clock,
                model=_model_label(self.branch),
                on_widget=lambda widget: self._place(("live", mid), widget),
            )
            self.live[mid] = live
        live.feed(signal)

    def on_message(self, message: Any) -> None:
        if not self.model.wants(message):
            return
        mid = message.id
        card = message_html(message)
        live = self.live.pop(mid, None)
        if live is not None and live.widget is not None:
            # the recorded card replaces the live rendering, in the live widget itself
            shown = self._widgets.pop(("live", mid))
            widget = live.adopt(card)
            self.model.replace(("live", mid), mid)
            self._widgets[mid] = widget
            if widget is not shown:
                self._sync()
            return
        if live is not None:
            live.cancel()
        pending = self.model.pending
        if self._provisional is not None and pending is not None and message.role == "user":
            self._provisional.value = card  # same widget: no new comm, one update
            self.model.replace(pending, mid)
            self._widgets[mid] = self._widgets.pop(pending)
            self._provisional = None
            return
        self._widgets[mid] = self._kit.html(card)
        self.model.insert_message(mid)
        self._sync()

    def finish_live(self, status: Status) -> None:
        """Replies that will not be recorded keep their partial text, marked ``status``."""
        for live in list(self.live.values()):
            live.finish(status)

    def drop_unfinished(self) -> None:
        """A run ended normally: replies streamed for turns that are not recorded (parse
        repairs) are dropped."""
        for mid in [m for m, live in self.live.items() if not live.done]:
            self.live.pop(mid).close()
            self.model.drop(("live", mid))
            self._widgets.pop(("live", mid), None)
            self._sync()

    def check(self) -> None:
        """Rebuild when the branch changed without signals (``clear_messages``)."""
        if self.model.stale():
            self.rebuild()

    def rebuild(self) -> None:
        """Show ``branch.messages`` afresh (a pending prompt stays at the end)."""
        for live in self.live.values():
            live.close()
        self.live.clear()
        old = [w for w in self._widgets.values() if w is not self._provisional]
        self.model.rebuild()
        shown = set(self.model.keys)
        self._widgets = {
            m.id: self._kit.html(message_html(m)) for m in self.branch.messages if m.id in shown
        }
        if self.model.pending is not None:
            self._widgets[self.model.pending] = self._provisional
        self._sync()
        for widget in old:
            widget.close()

    def close(self) -> None:
        for live in self.live.values():
            live.close()
        self.live.clear()
        for widget in self._widgets.values():
            widget.close()
        self._widgets.clear()
        self.model.keys.clear()
        self.box.close()

    # ----- internals -------------------------------------------------------------------------
    def _place(self, key: Key, widget: Any) -> None:
        """Show ``widget`` for ``key``: in its place if it is shown, else at the end."""
        self.model.place(key)
        self._widgets[key] = widget
        self._sync()

    def _sync(self) -> None:
        self.box.children = tuple(self._widgets[key] for key in self.model.keys)

    def _item_html(self, key: Key, widget: Any) -> str:
        if is_live(key) and key[1] in self.live:  # type: ignore[index]
            return self.live[key[1]].html()  # type: ignore[index]
        return widget.value
