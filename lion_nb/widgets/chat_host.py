"""What a panel of the chat view may ask of its view (``ChatHost``), and the one table the
view's page actions go through (``ActionTable``).

``BranchView`` holds its panels — Send and Stop (``widgets.send_controls``), the conversation
controls (``widgets.conversation_controls``), the token views (``widgets.token_panels``), and
the panels later issues add — as objects it composes. A panel knows its view only as a ``ChatHost``: the branch shown, its conversation and
transcript, the delta channel, the chrome, and a few verbs (run a turn under the view's Stop,
show an error, refresh). It registers its page actions in the view's ``ActionTable``, keyed by
``protocol.ACTIONS`` (the page's action names): one handler per name, and the view dispatches a
page message through the table. So a panel is built on this module, never on ``chat_view``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from lion_nb.widgets.protocol import ACTIONS

if TYPE_CHECKING:
    from lion_nb.session.branch import Branch
    from lion_nb.session.conversation import Conversation
    from lion_nb.viewmodels.chat import ChatRuns
    from lion_nb.widgets.channel import Channel
    from lion_nb.widgets.transcript import Transcript

__all__ = ["Action", "ActionTable", "ChatHost", "in_background", "index_of"]

Action = Callable[[dict[str, Any]], None]


class ChatHost(Protocol):
    """What a chat view panel may ask of its view (``BranchView`` is the one)."""

    title: str  # the view's title (a panel names the alternative shown)
    verb: str | Callable[..., Awaitable[Any]]  # what Send does (``BranchView(verb=)``)
    verb_kwargs: dict[str, Any]  # passed to it: the view's dict, changes reach the next turn

    @property
    def branch(self) -> Branch: ...

    @property
    def conversation(self) -> Conversation: ...

    @property
    def transcript(self) -> Transcript: ...

    @property
    def channel(self) -> Channel: ...

    @property
    def runs(self) -> ChatRuns: ...

    @property
    def last_status(self) -> tuple[str, str] | None:
        """What the status line said last (a run's state and words)."""
        ...

    @property
    def running(self) -> bool:
        """A run is active on the branch shown, or a turn a control started."""
        ...

    @property
    def control_running(self) -> bool:
        """A turn a control of the view started (regenerate, edit, ...) is running."""
        ...

    @property
    def closed(self) -> bool: ...

    def hold_sync(self) -> AbstractContextManager[None]:
        """ipywidgets' ``hold_sync``: trait changes in one update message."""
        ...

    def set_chrome(self, **values: Any) -> None: ...

    def set_quietly(self, **values: Any) -> None:
        """Set synced traits the pages get as ops (``Front.set_quietly``)."""
        ...

    def set_running(self) -> None:
        """Send/Stop, the cassette badge and the synced state follow the runs."""
        ...

    def refresh_static(self) -> bool: ...

    def show_error(self, error: BaseException, *, given_back: bool = False) -> None: ...

    def clear_error(self) -> None: ...

    def stop(self) -> None: ...

    def close_compare(self) -> None: ...

    def sync_alternatives(self) -> None: ...

    async def controlled(self, make: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
        """Run a turn the view's Stop reaches (``ConversationControls.controlled``)."""
        ...


class ActionTable(Mapping[str, Action]):
    """The page actions of one view: name (a key of ``protocol.ACTIONS``) -> its handler."""

    def __init__(self) -> None:
        self._handlers: dict[str, Action] = {}

    def register(self, name: str, handler: Action) -> None:
        if name not in ACTIONS:
            raise ValueError(f"{name!r} is not a page action (protocol.ACTIONS)")
        if name in self._handlers:
            raise ValueError(f"page action {name!r} has a handler already")
        self._handlers[name] = handler

    def update_from(self, actions: Mapping[str, Action]) -> None:
        """Register every action of a panel (``panel.actions()``)."""
        for name, handler in actions.items():
            self.register(name, handler)

    def __getitem__(self, name: str) -> Action:
        return self._handlers[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._handlers)

    def __len__(self) -> int:
        return len(self._handlers)


def index_of(branch: Branch, content: dict[str, Any]) -> int | None:
    """The index in ``branch`` of the message a page action names by its ``key``."""
    key = str(content.get("key", ""))
    for i, message in enumerate(branch.messages):
        if str(message.id) == key:
            return i
    return None


def in_background(
    show_error: Callable[[BaseException], None], make: Callable[[], Awaitable[Any]]
) -> None:
    """Run a page action's turn as a task of its own; an error shows in the view."""

    async def go() -> None:
        try:
            await make()
        except asyncio.CancelledError:
            pass
        except Exception as exc:  # shown in the view, not lost as a task traceback
            show_error(exc)

    asyncio.get_running_loop().create_task(go())
