"""``BranchView``: a live chat view over a Branch, on the front-end module ``widgets/lion_nb.js``.

    view = lion_nb.view(branch)        # or BranchView(branch, verb="run")
    view                                # transcript, prompt box (Enter sends), Send, Stop

The view renders from the branch's signals and never calls a provider: Send (the button, Enter
in the prompt box, or ``view.send(text)``) starts the branch verb as a background task the view
owns, so a Stop click (or Esc) reaches the kernel while the model streams (a click during an
awaiting cell is deferred until the cell ends). Runs started elsewhere (``await
branch.communicate(...)`` in a cell) show up live as well. While a cassette is in force the status
line says so: "replaying from …" / "recording to …" / "cannot record: …", and follows
``use_cassette`` / ``%lion_cassette`` at once (``widgets.cassette_badge``).

What a turn means lives below the view: Send runs the verb through the branch's
``session.conversation.Conversation`` (regenerate, edit, continue, clear and the alternatives
too), with the verb options a chat view wants — ``on_stop="record"`` (Stop keeps the
instruction and the partial reply; the verb records them) and ``fit_context=True`` (a long
history is cut to the most recent turns that fit the window) — so a turn typed here and the
same call made in a cell behave alike. The view shows what the branch holds: a turn started in
a cell shows its instruction pending while it streams, and a turn that ends with nothing
recorded is marked "not recorded" (``widgets.transcript``).

The view's state that is not widget state is in view models: ``viewmodels.chat.ChatRuns`` (the
runs on the branch, the one this view drives, one driving view per branch) and
``viewmodels.transcript.TranscriptModel`` (which messages, in what order). The transcript
(``widgets.transcript.Transcript``) is rendered idempotently by message id, so a view built from
``branch.messages`` shows the same HTML as one that watched the run (``rendered_html()``
compares them). Updates reach the page as ordered deltas (``widgets.channel``); the complete
transcript is synced widget state too, so a reload or a second view shows everything. Like the
other views (``viewbase.StaticFallback``) the view saves the transcript as ``text/html`` /
``text/plain`` beside the widget, refreshed at the end of a cell or when the user leaves the
view, never while they type in it.

The view is composed of panels it holds (``status_panel``, ``send_controls``,
``conversation_controls``, ``token_controls``, ``sampling_panel``): each knows it as a ``widgets.chat_host.ChatHost``
and registers its page actions in the view's one ``ActionTable`` (``view.actions``). The view
follows the branch's signals, owns the chrome, and offers the panels' verbs as its own.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any

import ipywidgets

from lion_nb.cassettes import active as cassettes
from lion_nb.operations.verbs import SENDS_HISTORY, VERBS, warm_up
from lion_nb.render.chrome import status_html
from lion_nb.render.html import transcript_html
from lion_nb.render.marks import gauge_html
from lion_nb.render.text import transcript_plain
from lion_nb.session.branch import Branch
from lion_nb.signals import (
    CallEnd,
    CallStart,
    MessageAdded,
    MessageRetracted,
    ParseAttempt,
    RoundEnd,
    RoundStart,
    RunEnd,
    RunFailed,
    RunStart,
    Signal,
    StreamDelta,
)
from lion_nb.viewmodels.chat import ChatRuns
from lion_nb.widgets.cassette_badge import at_rest, badge_html
from lion_nb.widgets.chat_status import ChatStatus
from lion_nb.widgets.conversation_controls import ConversationControls
from lion_nb.widgets.front import Front
from lion_nb.widgets.live import LiveConfig, live_shell
from lion_nb.widgets.prompt_view import PromptPanel
from lion_nb.widgets.reply_tree_panel import ReplyTreePanel
from lion_nb.widgets.sampling_panel import SamplingPanel
from lion_nb.widgets.send_controls import SendControls
from lion_nb.widgets.token_panels import TokenControls, TokenPanels, has_tokens
from lion_nb.widgets.transcript import Transcript, model_label

if TYPE_CHECKING:
    from lion_nb.samples import Samples
    from lion_nb.session.conversation import Conversation
    from lion_nb.viewmodels.reply_tree import ReplyTree
    from lion_nb.widgets.compare_view import CompareView

__all__ = ["VERBS", "BranchView", "view"]

Verb = Callable[["Branch", str], Awaitable[Any]]


_SIGNALS = (
    CallStart,
    CallEnd,
    MessageAdded,
    MessageRetracted,
    StreamDelta,
    RunStart,
    RunEnd,
    RunFailed,
    RoundStart,
    RoundEnd,
    ParseAttempt,
)


class BranchView(Front):
    """A live chat view over ``branch``: transcript, prompt box, Send and Stop.

    The view renders from the branch's signals and never calls a provider itself: Send (the
    button, Enter, or ``send(text)``) runs the branch's verb as a background task, so Stop
    (or Esc) reaches the kernel while the model streams. Runs started in a cell (``await
    branch.communicate(...)``) show up live too. Each message has the conversation's
    controls: regenerate, edit, continue, alternatives (‹ n/of ›), samples, the token view and
    the reply tree; each has a method here (``aregenerate``, ``aedit``, ...), so code and a
    click do the same thing. A saved notebook keeps the transcript as HTML beside the widget.

    For ``communicate``, ``operate`` and ``ReAct`` the view's turns pass ``on_stop="record"``
    and ``fit_context=True`` (set in ``verb_kwargs`` unless given there): Stop keeps the
    instruction and the partial reply (``metadata["stopped"] = True``) — the verb records
    them — and a long history is cut to fit the window. ``await branch.communicate(...)`` in a
    cell keeps the ADR's defaults unless given the same options.

    Args:
        branch: The conversation to show and drive.
        verb: What Send does: ``"communicate"`` (default), ``"run"`` (stream a CLI agent),
            ``"operate"``, ``"ReAct"``, or an ``async def f(branch, text)``.
        height: The transcript's height (CSS length or pixels); it scrolls and follows the
            newest message while the reader is at the bottom.
        title: The heading; default: the branch's name.
        verb_kwargs: Keyword arguments passed to the verb on every Send.
        history: ``False`` shows only messages recorded after the view was made (the
            ``%%lion`` magic uses it so each cell shows its own exchange).
        config: How often the page is updated while a reply streams (``LiveConfig``).
        context_window: Tokens; overrides the model's window for the gauge and the cut.
        tokens: Show the token view of every reply streamed from now on as it streams (a
            reply has tokens when the model was asked for them, ``iModel(..., logprobs=K)``).

    Raises:
        ValueError: ``verb`` is a name that is not a verb.

    Example:
        ```python
        view = BranchView(branch, height=360)
        view  # last line of a cell: shows it
        await view.asend("Hello!")  # as if typed and sent; returns the verb's result
        ```
    """

    def __init__(
        self,
        branch: Branch,
        *,
        verb: str | Callable[..., Awaitable[Any]] = "communicate",
        height: str | int = "480px",
        title: str | None = None,
        verb_kwargs: dict[str, Any] | None = None,
        history: bool = True,
        config: LiveConfig | None = None,
        context_window: int | None = None,
        tokens: bool = False,
    ) -> None:
        if isinstance(verb, str) and verb not in VERBS:
            raise ValueError(
                f"unknown verb {verb!r}; use one of {', '.join(VERBS)} or an "
                "async function f(branch, text)"
            )
        shown_title = title if title is not None else (branch.name or "")
        super().__init__(
            kind="chat",
            title=shown_title,
            hint="No messages yet. Type a message below and press Enter to send "
            "(Shift+Enter: new line, Esc: stop).",
            height=f"{height}px" if isinstance(height, int) else height,
            placeholder="Message (Enter to send, Shift+Enter for a new line)",
            status_line=status_html("idle", "ready"),
            templates={"live": live_shell(model_label(branch))},
            # in the state the page is first given (a chrome op sent before it draws is lost)
            token_marks=[str(m.id) for m in branch.messages if history and has_tokens(m)],
            cassette=badge_html(cassettes.current(), branch.chat_model_or_none),
        )
        self.branch = branch
        self.verb = verb
        self.verb_kwargs = dict(verb_kwargs or {})
        if isinstance(verb, str) and verb in SENDS_HISTORY:
            self.verb_kwargs.setdefault("on_stop", "record")
            self.verb_kwargs.setdefault("fit_context", True)
        if context_window is not None:
            self.verb_kwargs.setdefault("context_window", context_window)
        self.context_window = context_window
        self.config = config or LiveConfig()
        self.channel.interval = self.config.interval
        self.transcript = Transcript(
            branch,
            self.channel,
            hidden=frozenset() if history else frozenset(branch.progression),
            config=self.config,
            reset=lambda: self.sync_state(send=True),
        )
        self.runs = ChatRuns(branch.id, on_stopping=self._show_stopping)
        # the panels: each knows this view as a ChatHost and brings its page actions
        self.status_panel = ChatStatus(self)
        self.send_controls = SendControls(self)
        self.conversation_controls = ConversationControls(
            self,
            on_show=self._rebind,
            base_title=shown_title,
        )
        self.token_controls = TokenControls(self, follow=tokens)
        self.token_panels: TokenPanels = self.token_controls.panels
        self.sampling_panel = SamplingPanel(self, self.token_panels.resolve)
        self.reply_tree_panel = ReplyTreePanel(self)
        for panel in (
            self.send_controls,
            self.conversation_controls,
            self.token_controls,
            self.sampling_panel,
            self.reply_tree_panel,
        ):
            self.actions.update_from(panel.actions())
        self.prompt_panel = PromptPanel(self)  # "What the model read" (widgets.prompt_view)
        self.actions.update_from(self.prompt_panel.actions())
        self.prompt = self.send_controls.prompt
        self._unsubscribe = branch.subscribe(_SIGNALS, self._on_signal)
        self.transcript.rebuild()
        self.sync_alternatives()
        _warm_up_turn(verb, branch.chat_model_or_none)
        self._ready = True

    def state_parts(self) -> list[list[str]]:
        """The transcript as the page holds it: ``[[part key, html], ...]`` in order."""
        return self.transcript.state()

    def copy_text(self, key: str) -> str | None:
        """What the copy control of part ``key`` copies: its message's text as Markdown."""
        return self.transcript.text_of(key)

    # ----- public --------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        """A run is active on the branch (started here or elsewhere)."""
        return self.runs.running or self.control_running

    @property
    def control_running(self) -> bool:
        """A turn a control of this view started (regenerate, edit, ...) is running."""
        return self.conversation_controls.control_running

    @property
    def task(self) -> asyncio.Task[Any] | None:
        """The background task of the last run started from this view."""
        return self.runs.task

    def send(
        self,
        text: str | dict[str, Any] | None = None,
        buffers: list[bytes] | None = None,
        *,
        stop_others: bool = False,
    ) -> None:
        """Start the view's verb on ``text`` (default: the prompt box) as a background task
        (``view.task``) and return at once. Nothing starts for an empty prompt or while a run
        is active. ``await view.asend(text)`` starts and waits.

        One view-started run per branch at a time: while another view's run is active on the
        same branch, Send is refused (shown in the view) unless ``stop_others=True``, which
        stops that run and starts this one once it has ended (the ``%%lion`` magic does this
        when its cell is run again).

        The name is also ipywidgets' ``Widget.send(content, buffers)``, and that keeps working
        on the view: a ``dict`` is a custom comm message, sent as ipywidgets sends it (never a
        chat text), so code written for any widget can still message this one."""
        if isinstance(text, dict):
            ipywidgets.Widget.send(self, text, buffers)
            return
        self.send_controls.start(text, stop_others=stop_others)

    async def asend(self, text: str) -> Any:
        """Send ``text`` and wait until the run ends (Stop still works meanwhile)."""
        task = self.send_controls.start(text)
        if task is None:
            raise RuntimeError("nothing was sent (empty text, or a run is active)")
        return await task

    async def wait(self) -> Any:
        """Wait for the run started from this view, if any; returns its result."""
        return await self.runs.wait()

    def stop(self) -> None:
        """Cancel the run started from this view. A streamed ``run`` closes its CLI process
        group and records the partial text; the view marks the reply "stopped"."""
        if not self.conversation_controls.stop_control():
            self.runs.stop()

    # ----- the panels' verbs (``ConversationControls``, ``TokenControls``) --------------------
    @property
    def conversation(self) -> Conversation:
        """The conversation the view's turns run through (``session.conversation``)."""
        return self.conversation_controls.conversation

    async def aregenerate(
        self, index: int | None = None, *, temperature: float | None = None
    ) -> Branch:
        """See ``ConversationControls.aregenerate``."""
        return await self.conversation_controls.aregenerate(index, temperature=temperature)

    async def aedit(self, index: int, text: str) -> Branch:
        """See ``ConversationControls.aedit``."""
        return await self.conversation_controls.aedit(index, text)

    async def acontinue(self, index: int | None = None) -> Branch:
        """See ``ConversationControls.acontinue``."""
        return await self.conversation_controls.acontinue(index)

    async def asample(
        self,
        n: int = 5,
        *,
        index: int | None = None,
        temperature: float | None = None,
        top_p: float | None = None,
        **kwargs: Any,
    ) -> Samples:
        """See ``ConversationControls.asample``."""
        return await self.conversation_controls.asample(
            n, index=index, temperature=temperature, top_p=top_p, **kwargs
        )

    def alternatives(self, k: int) -> list[Branch]:
        """The branches that share the shown branch's first ``k`` messages and differ at
        message ``k`` (regenerated or edited there), earliest first, the shown one among them."""
        return self.conversation_controls.alternatives(k)

    def show(self, branch: Branch) -> Branch:
        """Show ``branch`` in this view (an alternative, or any branch)."""
        return self.conversation_controls.show(branch)

    def clear(self, *, said: str = "cleared") -> Branch:
        """See ``ConversationControls.clear``."""
        return self.conversation_controls.clear(said=said)

    def compare(self, index: int | None = None) -> CompareView:
        """See ``ConversationControls.compare``."""
        return self.conversation_controls.compare(index)

    @property
    def compare_view(self) -> CompareView | None:
        """The comparison shown under the view, if any."""
        return self.conversation_controls.compare_view

    def close_compare(self) -> None:
        """Close what is shown under the view: the comparison or the sample set."""
        self.conversation_controls.close_compare()
        self.token_controls.close_samples()

    def context_marks(self) -> dict[str, Any]:
        """See ``ConversationControls.context_marks``: the context gauge of the next turn
        and the notice where the last request was cut, as the page draws them."""
        return self.conversation_controls.context_marks()

    def stop_control(self) -> bool:
        """Cancel the turn a control of this view runs (regenerate, edit, ...), if any."""
        return self.conversation_controls.stop_control()

    async def controlled(self, make: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
        """Run ``make()`` as a turn of one of the view's controls: Stop cancels it, Send
        waits, and the view's marks follow when it ends; returns its result. Raises
        ``RuntimeError`` while a run is active on the branch."""
        return await self.conversation_controls.controlled(make)

    def show_tokens(self, index: int | None = None, *, open: bool = True) -> None:
        """See ``TokenControls.show_tokens``."""
        self.token_controls.show_tokens(index, open=open)

    async def afork_at_token(self, index: int, token: int, text: str) -> Branch:
        """See ``TokenControls.afork_at_token``."""
        return await self.token_controls.afork_at_token(index, token, text)

    def show_samples(self, samples: Samples) -> None:
        """See ``TokenControls.show_samples``."""
        self.token_controls.show_samples(samples)

    def sync_alternatives(self) -> None:
        """The marks the page draws: the panels' (switchers, continue, context, tokens, the
        reply tree)."""
        self.conversation_controls.sync_marks()
        self.token_controls.sync_marks()
        self.reply_tree_panel.sync()

    def show_tree(self, index: int | None = None, *, open: bool = True) -> ReplyTree | None:
        """See ``ReplyTreePanel.show_tree``: the tree of what could have been of a reply's
        turn (its samples and forks from tokens merged into one prefix tree)."""
        return self.reply_tree_panel.show_tree(index, open=open)

    @property
    def reply_tree(self) -> ReplyTree | None:
        """The reply tree the view shows, if one is open (``viewmodels.reply_tree``)."""
        return self.reply_tree_panel.tree

    def _rebind(self, branch: Branch) -> None:
        """Show ``branch``: its runs, its transcript and its signals from now on."""
        self._unsubscribe()
        self.branch = branch
        self.runs = ChatRuns(branch.id, on_stopping=self._show_stopping)
        self.transcript.rebind(branch)
        self._unsubscribe = branch.subscribe(_SIGNALS, self._on_signal)

    def _show_stopping(self) -> None:
        if not self.closed:
            self.status_panel.say("stopping", "stopping…")

    def rendered_html(self) -> str:
        """The transcript's HTML as the page shows it, in order, with its marks (truncated,
        continued, the context-cut notice; all from ``render/``)."""
        return self.transcript.html()

    def refresh(self) -> None:
        """Rebuild the transcript from ``branch.messages`` (e.g. after ``clear_messages``)."""
        self.transcript.rebuild()
        self.sync_alternatives()
        self.refresh_static()

    def _release(self) -> None:
        self._unsubscribe()
        self.status_panel.close()
        self.close_compare()
        self.reply_tree_panel.close()
        self.conversation_controls.stop_control()
        task = self.runs.task
        if task is not None and not task.done():
            task.cancel()  # a run started here
        self.transcript.close()

    # Static fallback (viewbase.StaticFallback): a saved notebook opened without a kernel or
    # widget state (GitHub, nbviewer) shows the recorded transcript instead of the widget.
    def static_html(self) -> str:
        """The transcript as HTML for a saved notebook, with the context gauge, the open
        token views and the reply tree."""
        return (
            transcript_html(
                self.transcript.messages(), title=self.title or None, footer=self._gauge_html()
            )
            + self.token_panels.static_html()
            + self.reply_tree_panel.static_html()
        )

    def _gauge_html(self) -> str:
        ctx = self.chrome_value("ctx") or {}
        if not ctx.get("w"):
            return ""
        return gauge_html(ctx["t"], ctx["w"], exact=bool(ctx.get("x")), cuts=bool(ctx.get("next")))

    def static_text(self) -> str:
        """The transcript as plain text, under the title."""
        body = transcript_plain(self.transcript.messages())
        return f"{self.title}\n\n{body}" if self.title else body

    # ----- running -------------------------------------------------------------------------
    def set_running(self) -> None:
        """Send/Stop, the cassette badge and the synced state follow the runs."""
        self.set_chrome(busy=self.runs.running, can_stop=self.runs.driving)
        if not self.runs.running:
            self.status_panel.show_cassette(at_rest())
            self.sync_state()  # at rest: a reload or a second view shows everything

    # ----- signals -------------------------------------------------------------------------
    def _on_signal(self, signal: Signal) -> None:
        if self.closed:
            return
        with self.hold_sync():  # status, Send/Stop state: one update message
            self._follow(signal)

    def _follow(self, signal: Signal) -> None:
        status = self.runs.on_signal(signal)
        if status is not None:
            self.status_panel.say(*status, remember=True)
        if isinstance(signal, StreamDelta):
            if signal.kind == "tokens":  # the same text arrives as "text" deltas
                self.token_panels.on_delta(signal)
            else:
                self.transcript.on_delta(signal)
        elif isinstance(signal, CallStart):
            self.transcript.on_call_start(signal)
        elif isinstance(signal, CallEnd):
            self.transcript.on_call_end(signal)
        elif isinstance(signal, MessageAdded):
            self.transcript.on_message(signal.message)
            self.token_panels.on_message(signal.message)
            if _marks_change(signal.message):
                self.sync_alternatives()  # the "continue" controls and the context marks
        elif isinstance(signal, MessageRetracted):
            self.refresh()  # rare (a Ray attempt that died): rebuilding from the branch is enough
        elif isinstance(signal, RunStart):
            self.transcript.drop_unrecorded()
            self.status_panel.show_cassette(
                cassettes.current()
            )  # where the run runs: a block's, if any
            self.set_running()
        elif isinstance(signal, RunEnd):
            self._on_run_end(signal)
        elif isinstance(signal, RunFailed):
            self.transcript.finish_live()
            self.show_error(signal.error)
            self.set_running()
            self.refresh_static()

    def _on_run_end(self, signal: RunEnd) -> None:
        if signal.stopped:
            self.transcript.finish_live()
        else:
            self.transcript.drop_unfinished()
            self.transcript.check()  # the branch may have changed without signals
        self.set_running()
        self.sync_alternatives()
        self.refresh_static()  # a notebook saved from now on holds this run's messages

    # ----- the status line, the error box (``ChatStatus``) ----------------------------------
    @property
    def last_status(self) -> tuple[str, str] | None:
        """What the status line said last (state, text)."""
        return self.status_panel.last_status

    @property
    def last_error(self) -> BaseException | None:
        """The error the view showed last."""
        return self.status_panel.last_error

    def show_error(self, error: BaseException, *, given_back: bool = False) -> None:
        """See ``ChatStatus.show_error``."""
        self.status_panel.show_error(error, given_back=given_back)

    def clear_error(self) -> None:
        """Empty the error box; errors already shown may be shown again (a new turn)."""
        self.status_panel.clear_error(bool(self.chrome_value("error_box")))

    def __repr__(self) -> str:
        return f"<BranchView of {self.branch!r} verb={self.verb!r}>"


def _warm_up_turn(verb: str | Callable[..., Awaitable[Any]], model: Any) -> None:
    """What the first Send imports, in a thread while the reader types (the first text of
    the first reply came ~40 ms later without it: ``session.conversation.warm_up``)."""
    threading.Thread(
        target=warm_up, args=(verb, model), name="lion_nb-warm-up-turn", daemon=True
    ).start()


def _marks_change(message: Any) -> bool:
    """A recorded message that changes the marks: a truncated reply, a continuation, an
    instruction whose request was cut to fit the window."""
    meta = message.metadata
    return meta.get("finish_reason") == "length" or "continues" in meta or "context_fit" in meta


def view(branch: Branch | None = None, **kwargs: Any) -> BranchView:
    """A live chat view over ``branch`` (a new ``Branch`` when None): the notebook's way to
    chat with a model.

    Keyword arguments go to ``BranchView`` (``verb``, ``height``, ``title``,
    ``verb_kwargs``, ``history``, ``context_window``, ``tokens``).

    Example:
        ```python
        branch = Branch(system="You are terse.", chat_model=iModel(provider="local"))
        lion_nb.view(branch)  # type below it, Enter sends, Esc stops
        ```
    """
    if branch is None:
        branch = Branch()
    return BranchView(branch, **kwargs)
