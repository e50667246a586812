"""The transcript of a ``BranchView``: one widget per message, kept in reading order.

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

from lion_nb.render.html import Status, head_html, message_html
from lion_nb.signals import StreamDelta
from lion_nb.widgets.live import LiveConfig, LiveMessage, WidgetKit

if TYPE_CHECKING:
    from lion_nb.messages import RoledMessage
    from lion_nb.session.branch import Branch

__all__ = ["Transcript"]


def _model_label(branch: Branch) -> str | None:
    model = getattr(branch, "_chat_model", None)  # never resolve a default model just to label
    if model is None:
        return None
    return f"{model.provider_name}/{model.model}" if model.model else model.provider_name


class Transcript:
    """The message widgets of ``branch`` in ``box`` (a VBox). ``hidden`` message ids are never
    shown (a view made with ``history=False`` hides what was recorded before it).

    ``items`` is ``[(key, widget)]`` in reading order; a key is a message id, ``("live", id)``
    for a reply still streaming, or ``("pending", tag)`` for a prompt shown before its
    Instruction is recorded. ``live`` maps message ids to their ``LiveMessage``."""

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
        self.config = config or LiveConfig()
        self._kit = kit
        self._clock = clock
        self._hidden = hidden
        self.items: list[tuple[Any, Any]] = []
        self.live: dict[uuid.UUID, LiveMessage] = {}
        self._provisional: Any = None  # the prompt shown at once, until its Instruction is recorded
        self._provisional_key: Any = None
        self.box = ipywidgets.VBox(
            layout=ipywidgets.Layout(flex="0 0 auto"), _dom_classes=("lion-transcript",)
        )

    # ----- reading -------------------------------------------------------------------------
    def shown_ids(self) -> list[uuid.UUID]:
        """Ids of the recorded messages this transcript shows, in the branch's order."""
        return [i for i in self.branch.progression if i not in self._hidden]

    def messages(self) -> list[RoledMessage]:
        """The recorded messages this transcript shows (what a static copy should hold)."""
        return [self.branch.messages[i] for i in self.shown_ids()]

    def html(self) -> str:
        """The HTML as the widgets show it, in order."""
        return "".join(self._item_html(key, widget) for key, widget in self.items)

    # ----- changes ---------------------------------------------------------------------------
    def show_prompt(self, text: str) -> None:
        """Show ``text`` at once as a pending user card; its Instruction replaces it."""
        self._provisional = self._kit.html(self._pending_prompt_html(text))
        self._provisional_key = ("pending", uuid.uuid4())
        self.items.append((self._provisional_key, self._provisional))
        self._sync()

    def release_prompt(self) -> None:
        """The run ended: an unrecorded prompt stays visible as it is."""
        self._provisional = None

    def on_delta(self, signal: StreamDelta) -> None:
        live = self.live.get(signal.message_id)
        if live is None:
            if any(key == signal.message_id for key, _ in self.items):
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
        mid = message.id
        if mid in self._hidden or any(key == mid for key, _ in self.items):
            return
        card = message_html(message)
        live = self.live.pop(mid, None)
        if live is not None and live.widget is not None:
            # the recorded card replaces the live rendering, in the live widget itself
            index = self._index_of(("live", mid))
            shown = self.items[index][1]
            widget = live.adopt(card)
            self.items[index] = (mid, widget)
            if widget is not shown:
                self._sync()
            return
        if live is not None:
            live.cancel()
        if self._provisional is not None and message.role == "user":
            index = self._index_of(self._provisional_key)
            self._provisional.value = card  # same widget: no new comm, one update
            self.items[index] = (mid, self._provisional)
            self._provisional = None
            return
        # Operations record the instruction after the reply streamed: keep reading order by
        # placing a new message before the replies still streaming.
        index = next(
            (
                i
                for i, (key, _) in enumerate(self.items)
                if isinstance(key, tuple) and key[0] == "live"
            ),
            len(self.items),
        )
        self.items.insert(index, (mid, self._kit.html(card)))
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
            self._drop(("live", mid))

    def check(self) -> None:
        """Rebuild when the branch changed without signals (``clear_messages``)."""
        recorded = [key for key, _ in self.items if isinstance(key, uuid.UUID)]
        if recorded != self.shown_ids():
            self.rebuild()

    def rebuild(self) -> None:
        """Show ``branch.messages`` afresh (a pending prompt stays at the end)."""
        old = self.items
        for live in self.live.values():
            live.close()
        self.live.clear()
        self.items = [
            (m.id, self._kit.html(message_html(m)))
            for m in self.branch.messages
            if m.id not in self._hidden
        ]
        if self._provisional is not None:
            self.items.append((self._provisional_key, self._provisional))
            old = [(k, w) for k, w in old if w is not self._provisional]
        self._sync()
        for _key, widget in old:
            widget.close()

    def close(self) -> None:
        for live in self.live.values():
            live.close()
        self.live.clear()
        for _key, widget in self.items:
            widget.close()
        self.items.clear()
        self.box.close()

    # ----- internals -------------------------------------------------------------------------
    def _place(self, key: Any, widget: Any) -> None:
        """Show ``widget`` for ``key``: in its place if it is shown, else at the end."""
        for i, (k, _) in enumerate(self.items):
            if k == key:
                self.items[i] = (key, widget)
                break
        else:
            self.items.append((key, widget))
        self._sync()

    def _sync(self) -> None:
        self.box.children = tuple(widget for _, widget in self.items)

    def _index_of(self, key: Any) -> int:
        return next(i for i, (k, _) in enumerate(self.items) if k == key)

    def _drop(self, key: Any) -> None:
        self.items = [(k, w) for k, w in self.items if k != key]
        self._sync()

    def _item_html(self, key: Any, widget: Any) -> str:
        if isinstance(key, tuple) and key[0] == "live" and key[1] in self.live:
            return self.live[key[1]].html()
        return widget.value

    def _pending_prompt_html(self, text: str) -> str:
        from lion_nb.render.markdown import render_markdown

        return (
            f'<div class="lion-msg lion-user lion-pending" data-role="user">'
            f"{head_html('user')}"
            f'<div class="lion-body lion-md">{render_markdown(text)}</div></div>'
        )
