"""What a server can do, learnt from what it says and remembered per ``base_url``.

Vendor clouds do everything lion_nb asks; local servers differ (llama.cpp's ``llama-server``
runs ``--parallel N`` slots of ``ctx / N`` tokens each and ignores native tools when the model's
chat template declares none; ``llama_cpp.server`` runs one generation at a time and refuses
``json_schema``). lion_nb adapts to them instead of leaving it to the user's memory of the
README: a fact learnt once (from ``/props``, or from a refusal) is remembered for that
``base_url`` for the life of the process, and every ``iModel`` on that URL uses it.

``None`` means "not known": behave as for a vendor cloud (today's behaviour).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import Any

__all__ = ["Capabilities", "forget", "remember", "remembered", "server_root"]


@dataclass(frozen=True)
class Capabilities:
    """What one server (one ``base_url``) is known to do.

    ``json_schema``: accepts ``response_format={"type": "json_schema", ...}`` (False: send
    ``json_object`` with the schema instead). ``native_tools``: honours ``tools`` /
    ``tool_choice`` and chooses among offered tools by itself (False: ReAct and operate ask
    for lion_nb's own JSON action requests; llama-server whose chat template declares no
    tools, llama_cpp.server, and the embedded model, which calls a forced tool but not an
    "auto" one).
    ``slots``: generations the server runs at once (streams beyond it are queued by lion_nb,
    never sent). ``slot_window``: the context window of one slot, in tokens (the window a
    request must fit, whatever the model's own). ``server``: the software that answered the
    probe ("llama-server", "llama_cpp.server"; None: not known).
    """

    json_schema: bool | None = None
    native_tools: bool | None = None
    slots: int | None = None
    slot_window: int | None = None
    probed: bool = False  # the server was asked (``/props``) once already
    server: str | None = None


_lock = threading.Lock()
_known: dict[str, Capabilities] = {}


def _key(base_url: str | None) -> str:
    """One key per server: ``http://host:8080/v1`` (OpenAI format) and ``http://host:8080``
    (the Anthropic format's root) are the same llama-server."""
    return server_root(base_url or "")


def server_root(base_url: str) -> str:
    """``base_url`` without a trailing ``/`` and ``/v1``: where a server's own routes
    (llama-server's ``/props``) live."""
    root = base_url.rstrip("/")
    return root[:-3] if root.endswith("/v1") else root


def remembered(base_url: str | None) -> Capabilities:
    """What is known of the server at ``base_url`` (all ``None`` when nothing is)."""
    with _lock:
        return _known.get(_key(base_url), Capabilities())


def remember(base_url: str | None, **facts: Any) -> Capabilities:
    """Record ``facts`` (fields of ``Capabilities``) for ``base_url``; returns the new whole."""
    with _lock:
        now = replace(_known.get(_key(base_url), Capabilities()), **facts)
        _known[_key(base_url)] = now
        return now


def forget(base_url: str | None = None) -> None:
    """Forget one server (or, without an argument, every server): the next call asks again."""
    with _lock:
        if base_url is None:
            _known.clear()
        else:
            _known.pop(_key(base_url), None)
