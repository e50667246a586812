"""The base of the live views that run on the front-end module ``widgets/lion_nb.js``
(anywidget): synced state, the ordered delta channel, page actions and the static fallback.

A view is a list of *parts* (sanitized HTML fragments from ``lion_nb.render``, keyed) plus, for
the chat view, a prompt box and buttons the page draws itself. The kernel decides what to show;
the module turns ordered ops into DOM updates, keys into page actions, and owns focus, draft and
scroll. Model text reaches the DOM only as HTML sanitized here or as ``textContent``.

The ops, the page actions, the synced trait names and the sequence rule are defined once, in
``widgets.protocol``; the page is given the names it needs as the synced trait ``protocol``.
Built in here: the ``resync``, ``copy`` and ``leave`` actions. A page action goes through one
table per view (``chat_host.ActionTable``, keyed by ``protocol.ACTIONS``): ``page_actions()``
fills it, by default with the view's ``_action_<name>`` methods; the chat view adds its panels'.

The kernel sets some synced traits without an update message of their own (the pages get the
values as ops on the channel): ``set_quietly`` holds them back from ``send_state`` (a public
ipywidgets method, extended here) until they change again or the whole state is sent.

The static fallback (``viewbase.StaticFallback``) is refreshed only at the end of a cell (the
one that ran, or the next one the user runs) or when the user leaves the view: never by a timer
while the user may be typing in it (``update_display_data`` makes JupyterLab draw the view anew).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import uuid
from importlib import resources
from pathlib import Path
from typing import Any

import anywidget
import ipywidgets
import traitlets

from lion_nb.render.html import lion_css
from lion_nb.render.markdown import warm_up
from lion_nb.widgets.channel import Channel
from lion_nb.widgets.chat_host import Action, ActionTable
from lion_nb.widgets.protocol import ACTIONS, CHROME, PAGE, chrome_op, clip_op
from lion_nb.widgets.viewbase import StaticFallback

__all__ = ["CHROME", "Front", "front_module"]

logger = logging.getLogger(__name__)


# the files of the ES module, in order: one module scope (no build step, no imports)
MODULE_FILES = ("lion_nb.js", "tokens.js", "sampling.js", "tree.js", "prompt.js", "grid.js")


@functools.cache
def front_module() -> str:
    """The ES module: ``MODULE_FILES`` joined, packaged in the wheel or from ``widgets/`` of a
    source checkout."""
    return "\n".join(_module_file(name) for name in MODULE_FILES)


def _module_file(name: str) -> str:
    packaged = resources.files("lion_nb").joinpath(f"widgets/static/{name}")
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    source = Path(__file__).resolve().parents[2] / "widgets" / name
    if not source.is_file():
        raise FileNotFoundError(
            f"{name} is missing: expected lion_nb/widgets/static/{name} in the "
            f"installed package or {source} in a source checkout"
        )
    return source.read_text(encoding="utf-8")


@functools.cache
def _warm_up_soon() -> threading.Thread:
    """``render.markdown.warm_up`` in a thread, once per process."""
    thread = threading.Thread(target=warm_up, name="lion_nb-warm-up", daemon=True)
    thread.start()
    return thread


class Front(StaticFallback, anywidget.AnyWidget):  # type: ignore[misc]  # _repr_mimebundle_ wraps AnyWidget's
    """Synced state of a view on the front-end module, and its delta channel."""

    _esm = traitlets.Unicode(front_module()).tag(sync=True)
    _css = traitlets.Unicode(lion_css()).tag(sync=True)

    kind = traitlets.Unicode("parts").tag(sync=True)  # chat | rounds | parse | ...
    title = traitlets.Unicode("").tag(sync=True)
    hint = traitlets.Unicode("").tag(sync=True)  # the empty view's placeholder hint
    parts: traitlets.List[list[str]] = traitlets.List().tag(
        sync=True
    )  # [[key, html], ...]: the complete state
    seq = traitlets.Int(0).tag(sync=True)  # the channel seq that ``parts`` reflects
    status_line = traitlets.Unicode("").tag(sync=True)  # status line HTML
    error_box = traitlets.Unicode("").tag(sync=True)  # error box HTML
    # a run is active (Send is refused; a parse view: a reply streams into it)
    busy = traitlets.Bool(False).tag(sync=True)
    can_stop = traitlets.Bool(False).tag(sync=True)
    height = traitlets.Unicode("").tag(sync=True)
    placeholder = traitlets.Unicode("").tag(sync=True)  # the prompt box's
    uid = traitlets.Unicode("").tag(sync=True)  # names the page's draft/scroll store
    alt_marks = traitlets.Dict().tag(sync=True)  # message id -> [n, of]: a ‹ n/of › switcher
    # ids of replies cut off by the token limit
    cut_marks: traitlets.List[str] = traitlets.List().tag(sync=True)
    # the context window: {"t": next turn's tokens, "w": window, "x": exact, "next": it will be
    # cut, "cut": id of the first message the last cut request sent, "n": messages left out}
    ctx = traitlets.Dict().tag(sync=True)
    compare_html = traitlets.Unicode("").tag(sync=True)  # the open CompareView's HTML (sanitized)
    # page keys of the replies that have tokens (a "Tokens" control each; widgets.token_panels)
    token_marks: traitlets.List[str] = traitlets.List().tag(sync=True)
    # of those, the replies whose token view the kernel has open (``show_tokens()``, a click)
    token_open: traitlets.List[str] = traitlets.List().tag(sync=True)
    # the inspector's pager, drawn by the page: {"text": position, "first": at the start,
    # "last": at the end, "max": the last message's position, "filter": the role filter,
    # "filters": the filters offered}
    pager = traitlets.Dict().tag(sync=True)
    # the chat view's cassette badge (HTML, ``widgets.cassette_badge``), drawn in the status line
    cassette = traitlets.Unicode("").tag(sync=True)
    # the chat view's model samples at temperature 0 (Regenerate gives the same reply):
    # {"t": 0, "warm": the temperature the page offers to regenerate at}; {} otherwise
    sampling = traitlets.Dict().tag(sync=True)
    # what Sample ×n samples at unless the reader sets otherwise: {"temperature", "top_p"}
    # (``widgets.token_panels.sample_defaults``; starting at a model's that says neither, so a
    # new view sends no op for it)
    sample_at = traitlets.Dict({"temperature": 0.8, "top_p": 0.95}).tag(sync=True)
    # the chat view's reply tree as a ``tree`` reset op (``widgets.reply_tree_panel``): the
    # pages get its changes as ``tree`` ops; {} while no tree is open
    tree_state = traitlets.Dict().tag(sync=True)
    # name -> HTML the channel's ops may name instead of sending it (``Channel.templates``);
    # set once, with the view's first state (a changed template would reach a page only
    # with a state message, and ops naming it could arrive before it)
    templates = traitlets.Dict().tag(sync=True)
    # the protocol's names the page needs (``protocol.PAGE``): ops, actions, chrome traits
    protocol = traitlets.Dict(PAGE).tag(sync=True)

    _leave_pending = False

    def __init__(self, **kwargs: Any) -> None:
        self._quiet: dict[str, Any] = {}  # set_quietly: trait -> the value the pages have as ops
        super().__init__(uid=uuid.uuid4().hex, **kwargs)
        self._chrome_pending: dict[str, Any] = {}
        self._chrome_handle: asyncio.Handle | None = None
        self.channel = Channel(self._send_ops)
        self.channel.before_flush = self._chrome_now
        self.channel.templates = dict(zip(self.templates.values(), self.templates, strict=True))
        self.actions = ActionTable()
        self.actions.update_from(self.page_actions())
        self.on_msg(self._on_page)
        _warm_up_soon()  # the first code block of a reply renders without the lexer's load

    # ----- state -----------------------------------------------------------------------------
    def state_parts(self) -> list[list[str]]:
        """``[[key, html], ...]``: everything the view shows (subclasses)."""
        return []

    def sync_state(self, *, send: bool = False) -> None:
        """Put the complete state in the widget's traits (after sending what is queued, so the
        state's seq covers it). By default the kernel's copy only: a page that attaches later
        (a reload, a new front end) is sent the kernel's state anyway, and the pages showing the
        view already have it from the deltas, so re-sending the transcript at every rest would
        double the traffic. ``send=True`` sends it too: a page asked (``resync``), or the saved
        output is refreshed (JupyterLab draws the view anew; nbclient saves widget state from
        what was sent)."""
        if self.closed:
            return
        self.channel.flush()
        parts, seq = self.state_parts(), self.channel.seq
        if parts != self.parts or seq != self.seq:
            # the new values are the kernel's without an update message
            self.set_quietly(parts=parts, seq=seq)
        if send:
            self._quiet.clear()  # everything goes now
            self.send_state(["parts", "seq", *CHROME])

    def set_chrome(self, **values: Any) -> None:
        """Set the view's small traits (status line, error box, Send/Stop state) with the next
        turn of the event loop, all in one update message (a Send and its run's start, a run's
        end and its task's end each cost one)."""
        self._chrome_pending.update(values)
        if self._chrome_handle is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._apply_chrome()
            return
        self._chrome_handle = loop.call_soon(self._apply_chrome)

    def chrome_value(self, name: str) -> Any:
        """A small trait's value, counting one set but not sent yet."""
        return self._chrome_pending.get(name, getattr(self, name))

    def _chrome_now(self) -> None:
        """A message is about to go out: chrome set but not applied yet goes with it."""
        if self._chrome_handle is not None:
            self._chrome_handle.cancel()
            self._apply_chrome(push=False)

    def _apply_chrome(self, *, push: bool = True) -> None:
        """The new values become the kernel's state without an update message of their own;
        the pages get them as a ``chrome`` op on the channel, in one message with the ops of
        the same turn (a Send's prompt card, a run's last reply)."""
        self._chrome_handle = None
        values, self._chrome_pending = self._chrome_pending, {}
        if self.closed:
            return
        changed = {}
        for name, value in values.items():
            if getattr(self, name) != value:
                changed[name] = value
        if not changed:
            return
        self.set_quietly(**changed)
        op = chrome_op(changed)
        if push:
            self.channel.push(op)
        else:
            self.channel.queue(op)  # into the message being made

    def set_quietly(self, **values: Any) -> None:
        """Set synced traits without an update message: the pages have (or get) the values
        otherwise (a ``chrome`` op, the deltas ``parts`` sums up). A later change of one of them
        is sent as usual, and so is the whole state (``sync_state(send=True)``, a page's
        request)."""
        self._quiet.update(values)
        with self.hold_sync():  # one pass through send_state, which holds these back
            for name, value in values.items():
                setattr(self, name, value)

    def send_state(self, key: str | list[str] | None = None) -> None:
        """``ipywidgets.Widget.send_state``, but a trait set by ``set_quietly`` (and not changed
        since) is not sent on its own."""
        if key is not None and self._quiet:
            names = [key] if isinstance(key, str) else list(key)
            names = [n for n in names if not self._is_quiet(n)]
            if not names:
                return
            key = names
        super().send_state(key)

    def _is_quiet(self, name: str) -> bool:
        if name not in self._quiet:
            return False
        if self._quiet[name] == getattr(self, name):
            return True
        del self._quiet[name]  # changed since: sent as usual from now on
        return False

    def _send_ops(self, content: dict[str, Any]) -> None:
        if not self.closed:  # the comm's custom message (``BranchView.send`` is the chat verb)
            ipywidgets.Widget.send(self, content)

    # ----- page actions ----------------------------------------------------------------------
    def page_actions(self) -> dict[str, Action]:
        """The view's page actions, for its ``ActionTable``: its ``_action_<name>`` methods
        (a view made of panels adds theirs)."""
        out: dict[str, Action] = {}
        for name in ACTIONS:
            handler = getattr(self, "_action_" + name, None)
            if handler is not None:
                out[name] = handler
        return out

    def _on_page(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict) or not isinstance(content.get("action"), str):
            return
        handler = self.actions.get(content["action"])
        if handler is None:
            return
        try:
            handler(content)
        except Exception:  # a click must never raise into the kernel's comm handler
            logger.exception("page action %r failed", content.get("action"))

    def _action_resync(self, _content: dict[str, Any]) -> None:
        self.sync_state(send=True)

    def _action_copy(self, content: dict[str, Any]) -> None:
        key = str(content.get("key", ""))
        text = self.copy_text(key)
        if text is not None:
            self.channel.push(clip_op(key, text))

    def _action_leave(self, _content: dict[str, Any]) -> None:
        if self._leave_pending and not self.chrome_value("busy"):
            self.flush_static()

    def copy_text(self, key: str) -> str | None:
        """The text a copy control of part ``key`` copies (subclasses)."""
        return None

    # ----- static fallback -------------------------------------------------------------------
    def refresh_static(self) -> bool:
        """Refresh the saved output at the end of the executing cell, else at the end of the
        next cell that runs or when the user leaves the view (never on a timer)."""
        if not self.defer_to_cell_end():
            return False
        self._leave_pending = True
        return True

    def flush_static(self) -> bool:
        """Replace the saved output now, with the complete state sent to the pages first;
        returns whether an update was sent (``StaticFallback.flush_static``)."""
        self._leave_pending = False
        if not self.closed:
            self.sync_state(send=True)  # the view JupyterLab draws anew renders from it
        return super().flush_static()

    def close(self) -> None:
        """Close the view: its delta channel (nothing more is sent), its subscriptions and
        the widget (``StaticFallback.close``)."""
        if getattr(self, "channel", None) is not None:
            self.channel.close()
        super().close()
