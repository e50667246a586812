"""The chat view's status line, error box and cassette badge: a panel ``BranchView`` holds (it
knows the view only as a ``widgets.chat_host.ChatHost``).

The status line says what the last run did ("communicate done", "stopped · not recorded", ...;
``last_status``); the error box shows an error once, with what to do about it
(``widgets.send_failure``); the cassette badge (the chrome trait ``cassette``,
``widgets.cassette_badge``) names the cassette a run runs under and, at rest, the default the
next Send uses, and follows ``use_cassette`` / ``%lion_cassette`` at once.
"""

from __future__ import annotations

from typing import Any

from lion_nb.cassettes import active as cassettes
from lion_nb.render.chrome import error_html, status_html
from lion_nb.widgets.cassette_badge import at_rest, badge_html
from lion_nb.widgets.chat_host import ChatHost
from lion_nb.widgets.send_failure import view_advice

__all__ = ["ChatStatus"]


class ChatStatus:
    """The status line, error box and cassette badge of a chat view."""

    def __init__(self, host: ChatHost) -> None:
        self._host = host
        self.last_status: tuple[str, str] | None = None  # what the status line said last
        self.last_error: BaseException | None = None
        self._shown_errors: set[int] = set()
        self._unwatch = cassettes.watch(self._follow_cassette)

    def say(self, state: str, text: str, *, remember: bool = False) -> None:
        """The status line says ``text`` (``state``: its look); ``remember``: a run's status,
        which the title of an alternative shown follows (``last_status``)."""
        if remember:
            self.last_status = (state, text)
        self._host.set_chrome(status_line=status_html(state, text))

    def show_error(self, error: BaseException, *, given_back: bool = False) -> None:
        """Show ``error`` in the error box (once; again when ``given_back``: the text sent is
        back in the prompt box), with what to do about it."""
        if id(error) in self._shown_errors and not given_back:
            return
        self._shown_errors.add(id(error))
        self.last_error = error
        advice = view_advice(error, given_back=given_back)
        self._host.set_chrome(error_box=error_html(error, advice=advice))

    def clear_error(self, shown: bool) -> None:
        """A new turn: errors may show again; ``shown``: the box shows one (empty it)."""
        self._shown_errors.clear()
        if shown:
            self._host.set_chrome(error_box="")

    def show_cassette(self, tape: Any) -> None:
        if not self._host.closed:
            self._host.set_chrome(cassette=badge_html(tape, self._host.branch.chat_model_or_none))

    def _follow_cassette(self) -> None:
        """``use_cassette`` / ``%lion_cassette`` changed the default: the badge follows now."""
        self.show_cassette(cassettes.current() if self._host.running else at_rest())

    def close(self) -> None:
        self._unwatch()
