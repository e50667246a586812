"""The views' own lines around the message cards: titles, status lines, error boxes, notes.
Every text is escaped (``render.escape``)."""

from __future__ import annotations

from typing import Any

from lion_nb.render.escape import escape

__all__ = [
    "error_html",
    "fork_note_html",
    "forked_html",
    "meta_html",
    "next_turn_pending_html",
    "status_html",
    "title_html",
]


def title_html(title: str) -> str:
    """A view's title line."""
    return f'<div class="lion-title">{escape(title)}</div>'


def status_html(state: str, text: str) -> str:
    """A view's status line; ``state`` (idle, running, done, stopped, failed...) styles it."""
    return f'<div class="lion-view-status lion-view-{escape(state)}">{escape(text)}</div>'


def error_html(error: BaseException) -> str:
    """An error a view caught, as an alert box: its type and message."""
    name = type(error).__name__
    text = str(error) or repr(error)
    return (
        f'<div class="lion-msg lion-error lion-view-error" role="alert">'
        f'<div class="lion-head"><span class="lion-role">Error</span>'
        f'<code class="lion-fn">{escape(name)}</code></div>'
        f'<pre class="lion-output">{escape(text)}</pre></div>'
    )


def meta_html(text: Any, *, inline: bool = False) -> str:
    """A muted note (a pager's position, a count)."""
    tag = "span" if inline else "div"
    return f'<{tag} class="lion-meta">{escape(text)}</{tag}>'


def next_turn_pending_html() -> str:
    """The inspector's next-turn line while it is being counted."""
    return '<div class="lion-meta lion-next-turn">Next turn: counting…</div>'


def forked_html(index: int, name: str | None, messages: int, branch_id: Any) -> str:
    """The status line after forking at message ``index``."""
    return (
        f'<div class="lion-view-status">Forked at #{index} → '
        f"{escape(name)} ({messages} messages, id {escape(str(branch_id)[:8])}).</div>"
    )


def fork_note_html(name: str | None, messages: int) -> str:
    """The heading of a fork's panel (its chat view follows)."""
    return (
        f'<div class="lion-meta">Fork {escape(name)} of {messages:,} messages (shown above) — '
        "continue it here:</div>"
    )
