"""What the chat, inspector, rounds, parse and compare views share: a static fallback that
survives in a saved notebook, and a throttle for live re-renders.

Static fallback: a view's mime bundle carries ``text/html`` (its current content, rendered by
the pure render functions) and ``text/plain`` beside the widget view, so GitHub, nbviewer or
``nbconvert`` without widget state show the transcript instead of ``VBox(...)``. A view that
was displayed by IPython keeps its display id and, when a run ends (a parse view: when its
parse settles), replaces the saved bundle (``update_display``), so the notebook saved *after*
the run holds the final content, not what the view showed when its cell ran.

The update goes out with the IOPub parent of the code that ended the run: JupyterLab routes it
to the display wherever it is, but ``nbclient`` applies only updates sent while a cell runs, so
a run that ends after its cell (a background task) is saved there when awaited from a cell.
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

from lion_nb.widgets.style import stylesheet_html

__all__ = ["VIEWS_CSS", "StaticFallback", "Throttle"]

# Heading rows of the inspector, rounds, parse and compare views (the shared stylesheet styles
# them only inside a round card).
VIEWS_CSS = (
    ".lion-view .lion-round-head{display:flex;flex-wrap:wrap;gap:0.25rem 0.6rem;"
    "align-items:baseline}"
    ".lion-view .lion-run-head{font-size:0.9em;margin:0.5rem 0 0.2rem}"
)


class Throttle:
    """Calls ``fn`` at most once per ``interval`` seconds: the first request runs at once,
    later ones are coalesced into one call when the interval has passed (a timer on the running
    loop; without a loop, at once)."""

    def __init__(
        self,
        fn: Callable[[], None],
        interval: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.fn = fn
        self.interval = interval
        self.clock = clock
        self.calls = 0
        self._last: float | None = None
        self._timer: asyncio.TimerHandle | None = None

    def request(self) -> None:
        if self._timer is not None:
            return
        now = self.clock()
        wait = 0.0 if self._last is None else self._last + self.interval - now
        if wait <= 0:
            self.flush()
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            return
        self._timer = loop.call_later(wait, self._fire)

    def _fire(self) -> None:
        self._timer = None
        self.flush()

    def flush(self) -> None:
        self.cancel()
        self._last = self.clock()
        self.calls += 1
        self.fn()

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def _shell() -> Any:
    ipython = sys.modules.get("IPython")
    return ipython.get_ipython() if ipython is not None else None


class StaticFallback:
    """Mixin for an ipywidgets container. Subclasses implement ``static_html()`` and
    ``static_text()`` from their view model (no widget state involved)."""

    _display_id: str | None = None
    _ready = False  # set by a subclass at the end of __init__; close() checks it
    view_css = ""  # rules of this view beyond the shared stylesheet

    def style_html(self) -> str:
        """``<style>`` for the view: the shared stylesheet, these views' rules, its own."""
        return stylesheet_html() + f"<style data-lion-views-css>{VIEWS_CSS}{self.view_css}</style>"

    def static_html(self) -> str:
        raise NotImplementedError

    def static_text(self) -> str:
        raise NotImplementedError

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
        bundle = super()._repr_mimebundle_(**kwargs)  # type: ignore[misc]
        if bundle is None:
            return None
        bundle["text/html"] = self.style_html() + self.static_html()
        bundle["text/plain"] = self.static_text()
        return bundle

    def _ipython_display_(self) -> None:
        from IPython.display import display

        if self._display_id is None:
            self._display_id = f"lion-{uuid.uuid4().hex}"
        display(self._repr_mimebundle_(), raw=True, display_id=self._display_id)

    def refresh_static(self) -> bool:
        """Replace the saved output of every display of this view with its current content.
        Returns False when the view was never displayed by IPython."""
        if self._display_id is None or _shell() is None:
            return False
        from IPython.display import update_display

        bundle = self._repr_mimebundle_()
        if bundle is None:
            return False
        update_display(bundle, raw=True, display_id=self._display_id)
        return True
