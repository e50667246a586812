"""``BranchView``: a live chat view over a Branch, made of stock ipywidgets 8 widgets.

    view = lion_nb.view(branch)        # or BranchView(branch, verb="run")
    view                                # prompt box, Send, Stop; the transcript renders live

The view renders from the branch's signals and never calls a provider: Send starts the branch
verb as a background task the view owns, so a Stop click reaches the kernel while the model
streams (a click during an awaiting cell is deferred until the cell ends). Runs started
elsewhere (``await branch.communicate(...)`` in a cell) show up live as well.

Rendering is idempotent by message id: a recorded message is one HTML card
(``render.html.message_html``); a message still streaming is a ``LiveMessage`` that the recorded
card replaces when ``MessageAdded`` arrives. A view built from ``branch.messages`` therefore shows
the same HTML as one that watched the run (``rendered_html()`` compares them).
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import time
import uuid
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import ipywidgets

from lion_nb.render.html import Status, head_html, message_html, transcript_html
from lion_nb.signals import (
    MessageAdded,
    ParseAttempt,
    RoundEnd,
    RoundStart,
    RunEnd,
    RunFailed,
    RunStart,
    Signal,
    StreamDelta,
)
from lion_nb.widgets.live import LiveConfig, LiveMessage, WidgetKit
from lion_nb.widgets.style import stylesheet_html

if TYPE_CHECKING:
    from lion_nb.session.branch import Branch

__all__ = ["VERBS", "BranchView", "view"]

Verb = Callable[["Branch", str], Awaitable[Any]]


async def _communicate(branch: Branch, text: str, **kw: Any) -> Any:
    return await branch.communicate(text, **kw)


async def _run(branch: Branch, text: str, **kw: Any) -> Any:
    stream = branch.run(text, **kw)
    try:
        async for _ in stream:
            pass
    finally:  # Stop: closing the generator closes the CLI stream and records the partial text
        await stream.aclose()


async def _operate(branch: Branch, text: str, **kw: Any) -> Any:
    return await branch.operate(instruction=text, **kw)


async def _react(branch: Branch, text: str, **kw: Any) -> Any:
    return await branch.ReAct(text, **kw)


VERBS: dict[str, Callable[..., Awaitable[Any]]] = {
    "communicate": _communicate,
    "run": _run,
    "operate": _operate,
    "ReAct": _react,
}

# branch id -> the view whose run is active on it (views on one branch never run at once)
_ACTIVE: weakref.WeakValueDictionary[uuid.UUID, BranchView] = weakref.WeakValueDictionary()

_SIGNALS = (
    MessageAdded,
    StreamDelta,
    RunStart,
    RunEnd,
    RunFailed,
    RoundStart,
    RoundEnd,
    ParseAttempt,
)


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _error_html(error: BaseException) -> str:
    name = type(error).__name__
    text = str(error) or repr(error)
    return (
        f'<div class="lion-msg lion-error lion-view-error" role="alert">'
        f'<div class="lion-head"><span class="lion-role">Error</span>'
        f'<code class="lion-fn">{_e(name)}</code></div>'
        f'<pre class="lion-output">{_e(text)}</pre></div>'
    )


def _model_label(branch: Branch) -> str | None:
    model = getattr(branch, "_chat_model", None)  # never resolve a default model just to label
    if model is None:
        return None
    return f"{model.provider_name}/{model.model}" if model.model else model.provider_name


class BranchView(ipywidgets.VBox):
    """A chat view over ``branch``: transcript, prompt box, Send and Stop.

    ``verb`` is what Send does: ``"communicate"`` (default), ``"run"`` (stream a CLI agent),
    ``"operate"``, ``"ReAct"``, or an ``async def f(branch, text)``. ``verb_kwargs`` are passed
    to it. ``height`` bounds the transcript (CSS length or pixels); it scrolls and stays pinned
    to the newest message. ``history=False`` shows only messages recorded after the view was
    made (the ``%%lion`` magic uses it so each cell shows its own exchange).
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
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if isinstance(verb, str) and verb not in VERBS:
            raise ValueError(
                f"unknown verb {verb!r}; use one of {', '.join(VERBS)} or an "
                "async function f(branch, text)"
            )
        self.branch = branch
        self.verb = verb
        self.verb_kwargs = dict(verb_kwargs or {})
        self.title = title if title is not None else branch.name
        self.config = config or LiveConfig()
        self._clock = clock
        self._hidden = frozenset() if history else frozenset(branch.progression)
        self._kit = WidgetKit()
        self._items: list[tuple[Any, Any]] = []  # (key, widget); key: message id or a tag
        self._live: dict[uuid.UUID, LiveMessage] = {}
        self._runs: set[uuid.UUID] = set()
        self._task: asyncio.Task[Any] | None = None
        self._provisional: Any = None  # the prompt shown at once, until its Instruction is recorded
        self._provisional_key: Any = None
        self._driving = False
        self._stop_requested = False
        self._shown_errors: set[int] = set()
        self.last_error: BaseException | None = None
        self.closed = False

        w = ipywidgets
        height_css = f"{height}px" if isinstance(height, int) else height
        self._style = self._kit.html(stylesheet_html())
        self._transcript = w.VBox(
            layout=w.Layout(flex="0 0 auto"), _dom_classes=("lion-transcript",)
        )
        # column-reverse keeps the scroll position pinned to the bottom as messages grow
        self._scroller = w.Box(
            children=(self._transcript,),
            layout=w.Layout(max_height=height_css, overflow="auto", flex_flow="column-reverse"),
            _dom_classes=("lion-scroll",),
        )
        self._error = self._kit.html("")
        self.prompt = w.Textarea(
            placeholder="Message (Send to submit)",
            rows=3,
            layout=w.Layout(width="auto", flex="1 1 auto"),
        )
        self.send_button = w.Button(
            description="Send",
            button_style="primary",
            icon="paper-plane",
            tooltip="Send the prompt",
            _dom_classes=("lion-send",),
        )
        self.stop_button = w.Button(
            description="Stop",
            button_style="danger",
            icon="stop",
            disabled=True,
            tooltip="Stop the running reply",
            _dom_classes=("lion-stop",),
        )
        self.status = self._kit.html(self._status_html("idle", "ready"))
        self.send_button.on_click(lambda _b: self.send())
        self.stop_button.on_click(lambda _b: self.stop())
        controls = w.HBox(
            [self.prompt, w.VBox([self.send_button, self.stop_button])],
            layout=w.Layout(align_items="flex-start"),
        )
        header = (
            [self._kit.html(f'<div class="lion-title">{_e(self.title)}</div>')]
            if self.title
            else []
        )
        super().__init__(
            children=(self._style, *header, self._scroller, self._error, controls, self.status),
            _dom_classes=("lion-view",),
        )
        self._unsubscribe = branch._observers.subscribe(_SIGNALS, self._on_signal)
        self._rebuild()

    # ----- public --------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        """A run is active on the branch (started here or elsewhere)."""
        return bool(self._runs) or self._driving

    @property
    def task(self) -> asyncio.Task[Any] | None:
        """The background task of the last run started from this view."""
        return self._task

    def send(self, text: str | None = None, *, stop_others: bool = False) -> None:
        """Start the view's verb on ``text`` (default: the prompt box) as a background task
        (``view.task``) and return at once. Nothing starts for an empty prompt or while a run
        is active. ``await view.asend(text)`` starts and waits.

        One view-started run per branch at a time: while another view's run is active on the
        same branch, Send is refused (shown in the view) unless ``stop_others=True``, which
        stops that run and starts this one once it has ended (the ``%%lion`` magic does this
        when its cell is run again)."""
        self._start(text, stop_others=stop_others)

    def _start(self, text: str | None, *, stop_others: bool = False) -> asyncio.Task[Any] | None:
        if self.closed:
            raise RuntimeError("this view is closed")
        text = self.prompt.value if text is None else text
        if not text.strip() or self._driving:
            return None
        other = _ACTIVE.get(self.branch.id)
        if other is not None and (other is self or not other._driving):
            other = None
        if other is None and self._runs:
            return None  # a run started elsewhere (awaited in a cell) is active
        if other is not None and not stop_others:
            self._show_error(
                RuntimeError(
                    "another view is running on this branch; stop it (or wait) before sending"
                )
            )
            return None
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError(
                "BranchView.send needs a running event loop (a Jupyter kernel "
                "has one); in a script use `await view.asend(text)`"
            ) from None
        self.prompt.value = ""
        self._stop_requested = False
        self._clear_error()
        self._provisional = self._kit.html(self._pending_prompt_html(text))
        self._provisional_key = ("pending", uuid.uuid4())
        self._items.append((self._provisional_key, self._provisional))
        self._sync_children()
        self._driving = True
        _ACTIVE[self.branch.id] = self
        self._task = loop.create_task(self._drive(text, after=other))
        self._set_running()
        return self._task

    async def asend(self, text: str) -> Any:
        """Send ``text`` and wait until the run ends (Stop still works meanwhile)."""
        task = self._start(text)
        if task is None:
            raise RuntimeError("nothing was sent (empty text, or a run is active)")
        return await task

    async def wait(self) -> Any:
        """Wait for the run started from this view, if any; returns its result."""
        if self._task is None:
            return None
        return await asyncio.shield(self._task)

    def stop(self) -> None:
        """Cancel the run started from this view. A streamed ``run`` closes its CLI process
        group and records the partial text; the view marks the reply "stopped"."""
        if self._task is not None and not self._task.done():
            self._stop_requested = True
            self._task.cancel()
            self.status.value = self._status_html("stopping", "stopping…")

    def rendered_html(self) -> str:
        """The transcript's HTML as the widgets show it, in order."""
        return "".join(self._item_html(key, widget) for key, widget in self._items)

    def refresh(self) -> None:
        """Rebuild the transcript from ``branch.messages`` (e.g. after ``clear_messages``)."""
        self._rebuild()

    def close(self) -> None:
        """Unsubscribe from the branch, cancel a run started here, close every widget."""
        if "_unsubscribe" not in self.__dict__:  # __init__ failed part-way (or GC of one)
            super().close()
            return
        if self.closed:
            return
        self.closed = True
        self._unsubscribe()
        if self._task is not None and not self._task.done():
            self._task.cancel()
        for live in self._live.values():
            live.close()
        self._live.clear()
        for _key, widget in self._items:
            widget.close()
        self._items.clear()
        for widget in (
            self._style,
            self._transcript,
            self._scroller,
            self._error,
            self.prompt,
            self.send_button,
            self.stop_button,
            self.status,
            *self.children,
        ):
            widget.close()
        self._kit.layout.close()
        self._kit.style.close()
        super().close()

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
        # Static fallback: a saved notebook opened without a kernel or widget state (GitHub,
        # nbviewer) shows the transcript instead of a bare "VBox(...)"; Lab picks the widget.
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is not None:
            messages = [self.branch.messages[i] for i in self._shown_ids()]
            bundle["text/html"] = stylesheet_html() + transcript_html(messages, title=self.title)
        return bundle

    # ----- running -------------------------------------------------------------------------
    async def _drive(self, text: str, after: BranchView | None = None) -> Any:
        verb = VERBS[self.verb] if isinstance(self.verb, str) else self.verb
        outcome: Status = "done"
        try:
            if after is not None:  # runs on one branch never overlap
                after.stop()
                with contextlib.suppress(asyncio.CancelledError):
                    await after.wait()
            return await verb(self.branch, text, **self.verb_kwargs)
        except asyncio.CancelledError:
            outcome = "stopped"
            if not self._stop_requested:
                raise  # cancelled by someone else (view closed, kernel shutdown)
            return None
        except Exception as exc:  # shown in the view, not lost as a task traceback
            outcome = "failed"
            self._show_error(exc)
            return None
        finally:
            self._driving = False
            if _ACTIVE.get(self.branch.id) is self:
                del _ACTIVE[self.branch.id]
            if not self.closed:
                self._settle(outcome)
                self._set_running()

    def _settle(self, outcome: Status) -> None:
        """After the task: replies that were not recorded keep their partial text, marked."""
        for live in list(self._live.values()):
            live.finish(outcome)
        self._provisional = None  # an unrecorded prompt stays visible as it is
        if outcome == "stopped":
            self.status.value = self._status_html("stopped", "stopped")
        elif outcome == "failed" and not self._runs:
            self.status.value = self._status_html("failed", "failed")

    def _set_running(self) -> None:
        running = self.running
        own = self._driving
        with self.send_button.hold_sync():
            self.send_button.disabled = running
        with self.stop_button.hold_sync():
            self.stop_button.disabled = not own

    # ----- signals -------------------------------------------------------------------------
    def _on_signal(self, signal: Signal) -> None:
        if self.closed:
            return
        if isinstance(signal, StreamDelta):
            self._on_delta(signal)
        elif isinstance(signal, MessageAdded):
            self._on_message(signal.message)
        elif isinstance(signal, RunStart):
            self._runs.add(signal.run_id)
            self._set_running()
            self.status.value = self._status_html("running", f"{signal.operation}…")
        elif isinstance(signal, RunEnd):
            self._runs.discard(signal.run_id)
            self._on_run_end(signal)
        elif isinstance(signal, RunFailed):
            self._runs.discard(signal.run_id)
            for live in list(self._live.values()):
                live.finish("failed")
            self._show_error(signal.error)
            self.status.value = self._status_html(
                "failed", f"{signal.operation} failed after {signal.duration_ms / 1000:.1f} s"
            )
            self._set_running()
        elif isinstance(signal, RoundStart):
            label = "final answer" if signal.final else f"round {signal.round}"
            self.status.value = self._status_html("running", f"ReAct {label}…")
        elif isinstance(signal, RoundEnd) and signal.error is not None:
            self.status.value = self._status_html(
                "running", f"round {signal.round} failed: {type(signal.error).__name__}"
            )
        elif isinstance(signal, ParseAttempt) and not signal.ok:
            self.status.value = self._status_html(
                "running", f"parse attempt {signal.attempt + 1} did not validate; retrying…"
            )

    def _on_delta(self, signal: StreamDelta) -> None:
        live = self._live.get(signal.message_id)
        if live is None:
            if any(key == signal.message_id for key, _ in self._items):
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
            self._live[mid] = live
        live.feed(signal)

    def _place(self, key: Any, widget: Any) -> None:
        """Show ``widget`` for ``key``: in its place if it is shown, else at the end."""
        for i, (k, _) in enumerate(self._items):
            if k == key:
                self._items[i] = (key, widget)
                break
        else:
            self._items.append((key, widget))
        self._sync_children()

    def _on_message(self, message: Any) -> None:
        mid = message.id
        if mid in self._hidden or any(key == mid for key, _ in self._items):
            return
        card = message_html(message)
        live = self._live.pop(mid, None)
        if live is not None and live.widget is not None:
            # the recorded card replaces the live rendering, in the live widget itself
            index = self._index_of(("live", mid))
            shown = self._items[index][1]
            widget = live.adopt(card)
            self._items[index] = (mid, widget)
            if widget is not shown:
                self._sync_children()
            return
        if live is not None:
            live.cancel()
        if self._provisional is not None and message.role == "user":
            index = self._index_of(self._provisional_key)
            self._provisional.value = card  # same widget: no new comm, one update
            self._items[index] = (mid, self._provisional)
            self._provisional = None
            return
        # Operations record the instruction after the reply streamed: keep reading order by
        # placing a new message before the replies still streaming.
        index = next(
            (
                i
                for i, (key, _) in enumerate(self._items)
                if isinstance(key, tuple) and key[0] == "live"
            ),
            len(self._items),
        )
        self._items.insert(index, (mid, self._kit.html(card)))
        self._sync_children()

    def _on_run_end(self, signal: RunEnd) -> None:
        if signal.stopped:
            for live in list(self._live.values()):
                live.finish("stopped")
            self.status.value = self._status_html("stopped", f"{signal.operation} stopped")
        else:
            # Replies streamed for turns that are not recorded (parse repairs) are dropped.
            for mid in [m for m, live in self._live.items() if not live.done]:
                self._live.pop(mid).close()
                self._drop(("live", mid))
            usage = ""
            if signal.output_tokens:
                usage = f" · {signal.input_tokens or 0:,} in / {signal.output_tokens:,} out tokens"
            self.status.value = self._status_html(
                "done", f"{signal.operation} done in {signal.duration_ms / 1000:.1f} s{usage}"
            )
            recorded = [key for key, _ in self._items if isinstance(key, uuid.UUID)]
            if recorded != self._shown_ids():
                self._rebuild()  # the branch changed without signals (clear_messages)
        self._set_running()

    # ----- transcript ----------------------------------------------------------------------
    def _rebuild(self) -> None:
        old = self._items
        for live in self._live.values():
            live.close()
        self._live.clear()
        self._items = [
            (m.id, self._kit.html(message_html(m)))
            for m in self.branch.messages
            if m.id not in self._hidden
        ]
        if self._provisional is not None:
            self._items.append((self._provisional_key, self._provisional))
            old = [(k, w) for k, w in old if w is not self._provisional]
        self._sync_children()
        for _key, widget in old:
            widget.close()

    def _shown_ids(self) -> list[uuid.UUID]:
        return [i for i in self.branch.progression if i not in self._hidden]

    def _sync_children(self) -> None:
        self._transcript.children = tuple(widget for _, widget in self._items)

    def _index_of(self, key: Any) -> int:
        return next(i for i, (k, _) in enumerate(self._items) if k == key)

    def _drop(self, key: Any) -> None:
        self._items = [(k, w) for k, w in self._items if k != key]
        self._sync_children()

    def _item_html(self, key: Any, widget: Any) -> str:
        if isinstance(key, tuple) and key[0] == "live" and key[1] in self._live:
            return self._live[key[1]].html()
        return widget.value

    def _pending_prompt_html(self, text: str) -> str:
        from lion_nb.render.markdown import render_markdown

        return (
            f'<div class="lion-msg lion-user lion-pending" data-role="user">'
            f"{head_html('user')}"
            f'<div class="lion-body lion-md">{render_markdown(text)}</div></div>'
        )

    def _show_error(self, error: BaseException) -> None:
        if id(error) in self._shown_errors:
            return
        self._shown_errors.add(id(error))
        self.last_error = error
        self._error.value = _error_html(error)

    def _clear_error(self) -> None:
        self._shown_errors.clear()
        if self._error.value:
            self._error.value = ""

    @staticmethod
    def _status_html(state: str, text: str) -> str:
        return f'<div class="lion-view-status lion-view-{_e(state)}">{_e(text)}</div>'

    def __repr__(self) -> str:
        return f"<BranchView of {self.branch!r} verb={self.verb!r}>"


def view(branch: Branch | None = None, **kwargs: Any) -> BranchView:
    """A live chat view over ``branch`` (a new Branch when None). Keyword arguments go to
    ``BranchView``: ``verb``, ``height``, ``title``, ``verb_kwargs``."""
    if branch is None:
        from lion_nb.session.branch import Branch

        branch = Branch()
    return BranchView(branch, **kwargs)
