"""The chat view's per-message controls: regenerate a reply, edit a prompt in place, switch
between the alternatives of a turn (``‹ 2/3 ›``), continue a reply cut off by the token limit,
clear — gestures on ``session.conversation.Conversation``, which does the same from code. A
panel ``BranchView`` holds: it knows the view as a ``widgets.chat_host.ChatHost`` and registers
its page actions in the view's table (``actions()``).

When the view shows another branch (a fork, an alternative), its title and status line name
it, so ``view.branch`` is never a surprise, and an open comparison follows (or closes).

The page asks with one message shape, ``{"action": name, "key": <message id>, ...}``; the
kernel resolves the key to the message's index in the branch shown. Each control's turn runs as
a background task the view owns (so Stop and Esc reach it while it streams); the fork it makes
is shown before its run starts, so the new reply streams into the view.

    await view.aregenerate()          # index=None: the last reply
    await view.aedit(k, "new text")
    await view.asample(n=5, temperature=0.8)   # five replies at once, as labelled forks
    view.alternatives(k)              # the branches that differ at message k
    view.show(branch)
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from lion_nb.render.chrome import status_html
from lion_nb.render.marks import gauge_text
from lion_nb.session.conversation import Conversation
from lion_nb.turns import open_truncated
from lion_nb.widgets.chat_host import Action, ChatHost, in_background, index_of
from lion_nb.widgets.compare_view import CompareView
from lion_nb.widgets.marimo_cell import current_cell, in_cell
from lion_nb.widgets.shown_branch import WARM, greedy, same_reply_note, shown_words

if TYPE_CHECKING:
    from lion_nb.samples import Samples
    from lion_nb.session.branch import Branch

__all__ = ["ConversationControls"]

_ELSEWHERE = "cleared (the reply a cell is running goes on in the conversation kept)"


class ConversationControls:
    """The conversation controls of a chat view: a panel ``BranchView`` holds (it knows the view
    only as a ``ChatHost``). Holds the conversation (``session.conversation.Conversation``), the
    turn a control runs (``controlled``: Stop reaches it) and the comparison under the view."""

    def __init__(
        self,
        host: ChatHost,
        *,
        on_show: Callable[[Branch], None],
        base_title: str = "",
    ) -> None:
        self._host = host
        self._rebind = on_show  # the view follows the branch shown (subscription, runs)
        self.base_title = base_title
        self.control_task: asyncio.Task[Any] | None = None
        self._conversation: Conversation | None = None
        self.compare_view: CompareView | None = None  # the comparison shown under the view
        self._compare_at: int | None = None  # the message index the comparison is at
        self._cell = current_cell()  # marimo: the cell the comparison a click makes belongs to

    def actions(self) -> dict[str, Action]:
        """This panel's page actions (the view's ``ActionTable``)."""
        return {
            "regenerate": self._action_regenerate,
            "edit": self._action_edit,
            "continue": self._action_continue,
            "switch": self._action_switch,
            "compare": self._action_compare,
            "compare_close": self._action_compare_close,
            "clear": self._action_clear,
        }

    @property
    def branch(self) -> Branch:
        return self._host.branch

    @property
    def control_running(self) -> bool:
        """A regenerate / edit / continue / token fork of this view is running."""
        return self.control_task is not None and not self.control_task.done()

    @property
    def conversation(self) -> Conversation:
        if self._conversation is None:
            self._conversation = Conversation(
                self.branch,
                verb=self._host.verb,
                verb_kwargs=self._host.verb_kwargs,
                on_show=self._on_show,
            )
            # one dict: verb_kwargs changed on the view reach the turns it starts
            self._conversation.verb_kwargs = self._host.verb_kwargs
        return self._conversation

    # ----- the Python API -------------------------------------------------------------------
    async def aregenerate(
        self, index: int | None = None, *, temperature: float | None = None
    ) -> Branch:
        """A new reply to the last instruction (or to the reply at ``index``), on a fork the
        view shows; returns the fork. ``temperature``: sampled at that temperature (the
        page's "Regenerate at temperature 0.8" while the model is at temperature 0, where
        Regenerate gives the same reply again; ``Conversation.aregenerate``). A reply that
        says the same as another alternative is said so in the status line, and why."""
        fork: Branch = await self.controlled(
            lambda: self.conversation.aregenerate(index, temperature=temperature)
        )
        at_zero = greedy(self._host.verb_kwargs, self.branch)
        same = same_reply_note(self.conversation, at_zero)
        if same:
            self._name_shown(note=same)
        return fork

    async def aedit(self, index: int, text: str) -> Branch:
        """User message ``index`` rewritten as ``text`` and sent again, on a fork the view
        shows; returns the fork."""
        return await self.controlled(lambda: self.conversation.aedit(index, text))

    async def acontinue(self, index: int | None = None) -> Branch:
        """The rest of a reply cut off by the token limit."""
        return await self.controlled(lambda: self.conversation.acontinue(index))

    async def asample(
        self,
        n: int = 5,
        *,
        index: int | None = None,
        temperature: float | None = None,
        top_p: float | None = None,
        **kwargs: Any,
    ) -> Samples:
        """``n`` replies to the last turn (or the turn of the reply at ``index``) at once, as
        forks named by their settings (``"sample 2/5 · temperature 0.8"``: the view's title
        says which one is shown, ``‹ n/of ›`` steps through them); returns ``Samples`` (where
        they agree and diverge). See ``Conversation.asample``."""
        return await self.controlled(
            lambda: self.conversation.asample(
                n, index=index, temperature=temperature, top_p=top_p, **kwargs
            )
        )

    def alternatives(self, k: int) -> list[Branch]:
        return self.conversation.alternatives(k)

    def show(self, branch: Branch) -> Branch:
        """Show ``branch`` in this view (an alternative, or any branch)."""
        return self.conversation.show(branch)

    def clear(self, *, said: str = "cleared") -> Branch:
        """Show a fresh branch with the same system message; the old one stays an
        alternative. ``said``: how the status line begins."""
        shown = self.branch
        fresh = self.conversation.clear()
        if fresh is not shown:  # the last run's status no longer describes what is shown
            self._host.set_chrome(
                status_line=status_html(
                    "idle", f"{said}: the conversation so far is kept (‹ › on your next message)"
                )
            )
        return fresh

    def compare(self, index: int | None = None) -> CompareView:
        """Open ``CompareView`` on the previous alternative (left) and the shown branch
        (right) at message ``index`` (default: the last message that has alternatives); the
        page shows it under the chat view until closed. Returns the CompareView."""
        if index is None:
            index = next(
                (k for k in range(len(self.branch.messages) - 1, -1, -1) if self._alts(k) > 1),
                -1,
            )
        other = self.conversation.previous_alternative(index) if index >= 0 else None
        if other is None:
            raise ValueError("there is no alternative to compare with")
        self._host.close_compare()  # or the sample set shown there
        alts = self.alternatives(index)  # the columns named as the switcher counts them
        n_other, n_shown = (
            next(i for i, b in enumerate(alts) if b is x) for x in (other, self.branch)
        )
        names = (f"Alternative {n_other + 1}", f"Alternative {n_shown + 1}")
        with in_cell(self._cell):  # Compare clicked in marimo: no cell runs
            view = CompareView(other, self.branch, titles=names)
        view.on_redraw(self._on_compare_html)
        self.compare_view = view
        self._compare_at = index
        self._host.set_chrome(compare_html=view.html())
        return view

    def close_compare(self) -> None:
        """Close the comparison under the view."""
        view, self.compare_view = self.compare_view, None
        if view is not None:
            view.close()
            self._host.set_chrome(compare_html="")

    def _on_compare_html(self, html: str) -> None:
        if self.compare_view is not None:
            self._host.set_chrome(compare_html=html)

    def _alts(self, k: int) -> int:
        try:
            return self.conversation.position(k)[1]
        except (StopIteration, ValueError, IndexError):
            return 0

    # ----- page actions ---------------------------------------------------------------------
    def _action_regenerate(self, content: dict[str, Any]) -> None:
        index = index_of(self.branch, content)
        t = content.get("temperature")
        temperature = float(t) if isinstance(t, int | float) and not isinstance(t, bool) else None
        if index is not None:
            in_background(
                self._host.show_error, lambda: self.aregenerate(index, temperature=temperature)
            )

    def _action_edit(self, content: dict[str, Any]) -> None:
        index, text = index_of(self.branch, content), content.get("text")
        if index is not None and isinstance(text, str) and text.strip():
            in_background(self._host.show_error, lambda: self.aedit(index, text))

    def _action_continue(self, content: dict[str, Any]) -> None:
        index = index_of(self.branch, content)
        if index is not None:
            in_background(self._host.show_error, lambda: self.acontinue(index))

    def _action_switch(self, content: dict[str, Any]) -> None:
        index = index_of(self.branch, content)
        if index is None or self._host.running:
            return
        alts = self.alternatives(index)
        at = next((i for i, b in enumerate(alts) if b is self.branch), 0)
        step = 1 if content.get("step", 1) >= 0 else -1
        if len(alts) > 1:
            self.show(alts[(at + step) % len(alts)])

    def _action_compare(self, content: dict[str, Any]) -> None:
        index = index_of(self.branch, content)
        if index is not None:
            try:
                self.compare(index)
            except ValueError as exc:
                self._host.show_error(exc)

    def _action_compare_close(self, _content: dict[str, Any]) -> None:
        self._host.close_compare()

    def _action_clear(self, _content: dict[str, Any]) -> None:
        """Clear; while a reply streams: stop it first, then clear, and say so. A reply a cell
        started (``await branch.communicate(...)``) cannot be stopped from the view (only its
        cell can: Kernel → Interrupt): the view clears at once and says the reply goes on in
        the conversation it keeps."""
        if not self._host.running:
            self.clear()
            return
        running = (self.control_task, self._host.runs.task)
        tasks = [t for t in running if t is not None and not t.done()]
        if not tasks:
            self.clear(said=_ELSEWHERE)
            return
        self._host.stop()
        said = status_html("stopping", "stopping the reply, then clearing…")
        self._host.set_chrome(status_line=said)
        asyncio.get_running_loop().create_task(self._clear_after(tasks))

    async def _clear_after(self, tasks: list[asyncio.Task[Any]]) -> None:
        """Clear once the stopped reply's run has ended (its RunEnd may follow its task)."""
        await asyncio.wait(tasks, timeout=10.0)
        for _ in range(100):
            if not self._host.running:
                break
            await asyncio.sleep(0.02)
        if self._host.closed:
            return
        stopped = not self._host.running
        self.clear(said="stopped the reply, then cleared" if stopped else _ELSEWHERE)

    # ----- machinery ------------------------------------------------------------------------
    async def controlled(self, make: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
        if self._host.running:
            raise RuntimeError("a run is active on this view's branch; stop it or wait")
        task: asyncio.Task[Any] = asyncio.get_running_loop().create_task(make())
        self.control_task = task
        self._host.set_chrome(busy=True, can_stop=True)
        shown = self.branch
        try:
            return await task
        finally:
            self.control_task = None
            if self.branch is not shown:
                self._name_shown()  # after the run's own status: say which branch this is
                if self.compare_view is not None:
                    self._follow_compare()
            self._host.transcript.finish_live()
            self._host.set_chrome(busy=self._host.runs.running, can_stop=False)
            self._host.sync_alternatives()

    def stop_control(self) -> bool:
        task = self.control_task
        if task is None or task.done():
            return False
        task.cancel()
        return True

    def _on_show(self, branch: Branch) -> None:
        """The conversation shows another branch: the view follows it, says so, and an open
        comparison follows (or closes when the new branch has nothing to compare there)."""
        if branch is self.branch:
            return
        self._rebind(branch)
        # Send and Stop follow the branch shown (a cell's reply on the one left runs on there)
        self._host.set_chrome(busy=self._host.running, can_stop=self.control_running)
        self._name_shown()
        self._host.sync_alternatives()
        if self.compare_view is not None and self.control_task is None:
            self._follow_compare()  # a switch: at once (a regenerate: once its reply is in)

    def _name_shown(self, note: str = "") -> None:
        """The title and status line say which alternative the view shows (``view.branch``),
        as its ``‹ n/of ›`` switcher counts them (``widgets.shown_branch``); ``note`` after."""
        title, line = shown_words(self.conversation, self.base_title, self._host.last_status, note)
        self._host.title = title
        if line is not None:
            self._host.set_chrome(status_line=line)

    def _follow_compare(self) -> None:
        at = self._compare_at
        try:
            if at is None or at >= len(self.branch.messages):
                raise ValueError("nothing to compare")
            self.compare(at)
        except (ValueError, IndexError, StopIteration):
            self._host.close_compare()

    def context_marks(self) -> dict[str, Any]:
        """What the page draws for the context window: the gauge of the next turn against the
        window (when it is known) and the notice where the last request was cut (their words
        rendered by ``render/``; the cut read from the branch)."""
        conv = self.conversation
        plan = conv.plan()
        out: dict[str, Any] = {}
        if plan.window:
            cuts = plan.cut is not None and bool(conv.verb_kwargs.get("fit_context"))
            out.update(t=plan.tokens, w=plan.window, x=plan.exact)
            out["text"] = gauge_text(plan.tokens, plan.window, exact=plan.exact, cuts=cuts)
            if cuts:
                out["next"] = True
        mark = self._host.transcript.cut_mark()
        if mark is not None:
            out.update(cut=str(mark[0]), note=mark[1], n=mark[2])
        return out

    def sync_marks(self) -> None:
        """The ``‹ n/of ›`` switchers, "continue" marks and the context gauge and notice the
        page draws, by message id."""
        had = self._conversation is not None
        self._host.set_chrome(ctx=self.context_marks())
        at_zero = greedy(self._host.verb_kwargs, self.branch)
        warm = {"t": 0, "warm": WARM} if at_zero else {}
        self._host.set_chrome(sampling=warm)
        messages = self.branch.messages
        cut = [str(i) for i in open_truncated(list(messages))]
        self._host.set_chrome(cut_marks=cut)
        if not had:
            return  # no alternatives before a turn from this view
        marks: dict[str, list[int]] = {}
        for k, message in enumerate(messages):
            if k == 0 and message.role == "system":
                continue
            with contextlib.suppress(StopIteration, ValueError):
                n, of = self.conversation.position(k)
                if of > 1:
                    marks[str(message.id)] = [n, of]
        self._host.set_chrome(alt_marks=marks)
