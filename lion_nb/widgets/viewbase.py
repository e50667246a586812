"""What every view shares: a static fallback that survives in a saved notebook. (Live updates
are throttled by each view's channel, ``widgets.channel``: one throttle for every view.)

Static fallback: a view's mime bundle carries ``text/html`` (its current content, rendered by
the pure render functions) and ``text/plain`` beside the widget view, so GitHub, nbviewer or
``nbconvert`` without widget state show the transcript instead of ``VBox(...)``. A view that
was displayed by IPython keeps its display id and, when a run ends (a parse view: when its
parse settles), replaces the saved bundle (``update_display``), so the notebook saved *after*
the run holds the final content, not what the view showed when its cell ran.

Updates are coalesced, because each one costs the front-end a whole new rendering: JupyterLab
answers ``update_display_data`` for a widget output by creating a *new* view of the widget (the
old one is detached, not disposed, and keeps following the model). One update per run would
make a view displayed through 80 runs exist 80 times over. So a view asks for a refresh
(``refresh_static``) and the refresh is sent once, at the end of the cell that is executing
(IPython's ``post_run_cell``, with that cell's IOPub parent, so ``nbclient`` applies it too), or,
for a run that ended outside any cell (a Send click, ``%%lion`` without ``--wait``),
``refresh_delay`` seconds later; a bundle equal to the one saved is not sent again. JupyterLab
routes an update to the display wherever it is; ``nbclient`` applies only updates sent while a
cell runs, so there a background run's refresh is saved when a later cell awaits it.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import uuid
import weakref
from collections.abc import Iterable
from typing import Any

import IPython.display

from lion_nb.render.html import css_style_tag

__all__ = ["StaticFallback"]


logger = logging.getLogger(__name__)


def _shell() -> Any:
    ipython = sys.modules.get("IPython")
    return ipython.get_ipython() if ipython is not None else None


class _Cells:
    """Whether a cell is executing (IPython's pre/post_run_cell events), and the views whose
    saved output waits for the end of it."""

    def __init__(self) -> None:
        self.shell: Any = None  # the shell whose events are hooked
        self.running = False
        self.pending: weakref.WeakSet[StaticFallback] = weakref.WeakSet()

    def hook(self, shell: Any) -> None:
        """Follow ``shell``'s cells. Called from a display, i.e. while a cell executes."""
        if self.shell is shell:
            return
        shell.events.register("pre_run_cell", self._pre)
        shell.events.register("post_run_cell", self._post)
        self.shell = shell
        self.running = True

    def _pre(self, *_: Any) -> None:
        self.running = True

    def _post(self, *_: Any) -> None:
        self.running = False
        views, self.pending = list(self.pending), weakref.WeakSet()
        for view in views:
            try:
                view.flush_static()
            except Exception:  # a view's output must never break the user's cell
                logger.exception("could not refresh the saved output of %r", view)


_CELLS = _Cells()


class StaticFallback:
    """Mixin for an ipywidgets container. Subclasses implement ``static_html()`` and
    ``static_text()`` from their view model (no widget state involved)."""

    _display_id: str | None = None
    _saved: tuple[str, str] | None = None  # (text/html, text/plain) the display holds
    _refresh_timer: asyncio.TimerHandle | None = None
    _ready = False  # set by a subclass at the end of __init__; close() checks it
    closed = False  # set by close(); a closed widget has no bundle to save
    refresh_delay = 1.0  # seconds before a refresh asked outside any cell is sent
    _mime_metadata: dict[str, Any] | None = None

    def close(self) -> None:
        """Close once: the view's subscriptions and timers (``_release``), the widgets it made
        (``_owned_widgets``), then the container. A view whose ``__init__`` failed part-way
        (ipywidgets closes from ``__del__``) only closes the container."""
        if self._ready and not self.closed:
            self.closed = True
            self._release()
            for widget in self._owned_widgets():
                widget.close()
        super().close()  # type: ignore[misc]  # the ipywidgets class this is mixed into

    def _release(self) -> None:
        """Unsubscribe from signals, cancel timers and tasks (each view says which)."""

    def _owned_widgets(self) -> Iterable[Any]:
        return ()

    def style_html(self) -> str:
        """``<style>`` with the stylesheet (``widgets/lion_nb.css``: every view's rules)."""
        return css_style_tag()

    def static_html(self) -> str:
        """The view's current content as HTML, saved beside the widget (``text/html``) for a
        notebook opened without a kernel; each view implements it from its view model."""
        raise NotImplementedError

    def static_text(self) -> str:
        """The view's current content as plain text (``text/plain``); each view implements it."""
        raise NotImplementedError

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
        bundle = super()._repr_mimebundle_(**kwargs)  # type: ignore[misc]  # as close() above
        if isinstance(bundle, tuple):  # anywidget: (data, metadata: Colab's widget manager)
            self._mime_metadata = bundle[1] or None
            bundle = dict(bundle[0])
        if bundle is None:
            return None
        bundle["text/html"] = self.style_html() + self.static_html()
        bundle["text/plain"] = self.static_text()
        return bundle

    def _ipython_display_(self) -> None:
        shell = _shell()
        if shell is not None and getattr(shell, "events", None) is not None:
            _CELLS.hook(shell)
        if self._display_id is None:
            self._display_id = f"lion-{uuid.uuid4().hex}"
        bundle = self._repr_mimebundle_()
        if bundle is not None:
            self._saved = (bundle["text/html"], bundle["text/plain"])
        IPython.display.display(
            bundle, raw=True, display_id=self._display_id, metadata=self._mime_metadata
        )

    def refresh_static(self) -> bool:
        """Ask for the saved output of every display of this view to be replaced with its
        current content: at the end of the executing cell, or ``refresh_delay`` seconds from
        now when no cell is executing (see the module docstring). Returns False when the view
        was never displayed by IPython."""
        if self._display_id is None or _shell() is None:
            return False
        if _CELLS.shell is not None and _CELLS.running:
            _CELLS.pending.add(self)
            return True
        if self._refresh_timer is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                self.flush_static()
                return True
            self._refresh_timer = loop.call_later(self.refresh_delay, self.flush_static)
        return True

    def defer_to_cell_end(self) -> bool:
        """Refresh the saved output at the end of the executing cell, or of the next cell that
        runs; False outside IPython or for a view never displayed by it."""
        if self._display_id is None or _shell() is None:
            return False
        _CELLS.pending.add(self)
        return True

    def flush_static(self) -> bool:
        """Replace the saved output now; returns whether an update was sent (not when the
        view was never displayed, or its content is what the display already holds)."""
        if self._refresh_timer is not None:
            self._refresh_timer.cancel()
            self._refresh_timer = None
        _CELLS.pending.discard(self)
        if self.closed or self._display_id is None or _shell() is None:
            return False
        bundle = self._repr_mimebundle_()
        if bundle is None:
            return False
        saved = (bundle["text/html"], bundle["text/plain"])
        if saved == self._saved:
            return False
        IPython.display.update_display(
            bundle, raw=True, display_id=self._display_id, metadata=self._mime_metadata
        )
        self._saved = saved
        return True
