"""The chat view's Send and Stop: a panel ``BranchView`` holds (it knows the view only as a
``widgets.chat_host.ChatHost``).

Send (the button, Enter in the prompt box, or ``view.send(text)``) starts the view's verb
through the conversation (``session.conversation.Conversation.asend``) as a background task the
view owns, so a Stop click (or Esc) reaches the kernel while the model streams. One
view-started run per branch at a time (``viewmodels.chat.ChatRuns.claim``). When a Send that
recorded nothing fails, what the user typed goes back into the prompt box (a ``draft`` op with
``restore``), unless they have typed something since.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from lion_nb.render.chrome import status_html
from lion_nb.render.html import Status
from lion_nb.viewmodels.chat import ChatRuns
from lion_nb.widgets.chat_host import Action, ChatHost
from lion_nb.widgets.protocol import draft_op

__all__ = ["Prompt", "SendControls"]

_TAKEN = "another view is running on this branch; stop it (or wait) before sending"
_NO_LOOP = (
    "BranchView.send needs a running event loop (a Jupyter kernel has one); in a script use "
    "`await view.asend(text)`"
)


class Prompt:
    """The prompt box as the kernel knows it: the page owns the draft while the user types
    (never overwritten by an update); text set here is put into the box (a ``draft`` op)."""

    def __init__(self, host: ChatHost) -> None:
        self._host = host
        self._value = ""

    @property
    def value(self) -> str:
        return self._value

    @value.setter
    def value(self, text: str) -> None:
        self._value = text
        self._host.channel.push(draft_op(text))

    def give_back(self, text: str) -> None:
        """Put ``text`` back into the box unless the user has typed something since (a
        ``draft`` op with ``restore``)."""
        self._value = text
        self._host.channel.push(draft_op(text, restore=True))


class SendControls:
    """Send and Stop of a chat view, and the runs they start."""

    def __init__(self, host: ChatHost) -> None:
        self._host = host
        self.prompt = Prompt(host)

    def actions(self) -> dict[str, Action]:
        """This panel's page actions (the view's ``ActionTable``)."""
        return {"send": self._action_send, "stop": self._action_stop}

    def _action_send(self, content: dict[str, Any]) -> None:
        text = content.get("text")
        if isinstance(text, str):
            self.start(text, give_back=True)  # the page emptied its box: a failure refills it

    def _action_stop(self, _content: dict[str, Any]) -> None:
        self._host.stop()

    def start(
        self, text: str | None, *, stop_others: bool = False, give_back: bool = False
    ) -> asyncio.Task[Any] | None:
        """Start a run on ``text`` (None: the prompt box); the task, or None when nothing
        started (an empty prompt, a run active)."""
        host = self._host
        if host.closed:
            raise RuntimeError("this view is closed")
        from_box = text is None
        give_back = give_back or from_box
        text = self.prompt.value if text is None else text
        if not text.strip():
            return None
        if host.control_running:
            return None  # a regenerate / edit / continue of this view is running
        claim = host.runs.claim(stop_others=stop_others)
        if claim.verdict == "busy":
            return None  # this view's run, or one started elsewhere (awaited in a cell)
        if claim.verdict == "taken":
            host.show_error(RuntimeError(_TAKEN))
            return None
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError(_NO_LOOP) from None
        # the task first: its first step (the run's start) comes before the prompt card and the
        # Send/Stop state go out, so all three share one message
        task = loop.create_task(self._drive(text, after=claim.after, give_back=give_back))
        host.runs.started(task)
        if from_box:
            self.prompt.value = ""
        host.clear_error()
        host.transcript.show_prompt(text)
        with host.hold_sync():
            host.set_running()
        return task

    async def _drive(
        self, text: str, after: ChatRuns | None = None, *, give_back: bool = False
    ) -> Any:
        host = self._host
        outcome: Status = "done"
        held = len(host.branch.messages)
        try:
            if after is not None:  # runs on one branch never overlap
                after.stop()
                with contextlib.suppress(asyncio.CancelledError):
                    await after.wait()
            # through the view model: a stop records what was shown, the context cut applies
            return await host.conversation.asend(text)
        except asyncio.CancelledError:
            outcome = "stopped"
            if not host.runs.stop_requested:
                raise  # cancelled by someone else (view closed, kernel shutdown)
            return None
        except Exception as exc:  # shown in the view, not lost as a task traceback
            outcome = "failed"
            # nothing recorded: what the user typed goes back into the prompt box
            given_back = give_back and len(host.branch.messages) == held and not host.closed
            if given_back:
                self.prompt.give_back(text)
            host.show_error(exc, given_back=given_back)  # shown from RunFailed: say it's back
            return None
        finally:
            host.runs.ended()
            if not host.closed:
                with host.hold_sync():
                    self._settle(outcome)
                    host.set_running()

    def _settle(self, outcome: Status) -> None:
        """After the task: what was not recorded stays marked "not recorded" until the next
        turn begins."""
        host = self._host
        host.transcript.finish_live()
        host.transcript.release_prompt()
        host.sync_alternatives()  # a stopped turn was recorded after its run ended
        if not host.runs.run_began:
            # no run lifecycle ended (a custom verb recording without one, a failure before
            # the run began): nothing else replaces the saved output
            host.refresh_static()
        if outcome == "stopped" and not host.runs.run_began:
            host.set_chrome(status_line=status_html("stopped", "stopped"))
        elif outcome == "failed" and not host.runs.runs:
            host.set_chrome(status_line=status_html("failed", "failed"))
