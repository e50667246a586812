"""The views' own lines around the message cards: titles, status lines, error boxes, notes.
Every text is escaped (``render.escape``)."""

from __future__ import annotations

from typing import Any

from lion_nb.errors import CassetteMiss
from lion_nb.render.escape import escape

__all__ = [
    "cassette_badge_html",
    "error_html",
    "fork_note_html",
    "forked_html",
    "meta_html",
    "next_turn_pending_html",
    "no_such_message_html",
    "shown_branch_html",
    "status_html",
    "title_html",
]


def title_html(title: str) -> str:
    """A view's title line."""
    return f'<div class="lion-title">{escape(title)}</div>'


def status_html(state: str, text: str, *, badge: str = "") -> str:
    """A view's status line; ``state`` (idle, running, done, stopped, failed...) styles it.
    ``badge``: HTML from this package put after the text (``cassette_badge_html``)."""
    return f'<div class="lion-view-status lion-view-{escape(state)}">{escape(text)}{badge}</div>'


def cassette_badge_html(
    replaying: str | None, recording: str | None, *, cannot: str | None = None
) -> str:
    """The mark of a live view while a cassette is in force: the file its replies are replayed
    from and the one new calls are recorded to (None: it does not); empty when neither.
    ``cannot``: why new calls cannot be recorded here (the model is not installed, no key):
    said instead of where they would go."""
    if recording and cannot:
        text = f"cannot record: {cannot}"
        if replaying:
            text = f"replaying from {replaying} · {text}"
        return (
            ' <span class="lion-badge lion-cassette-badge lion-cassette-blocked" '
            f'title="a cassette is in force; new calls would go to {escape(recording)}">'
            f"{escape(text)}</span>"
        )
    if replaying and recording:
        text = (
            f"replaying from and recording to {recording}"
            if replaying == recording
            else f"replaying from {replaying} · recording new calls to {recording}"
        )
    elif replaying:
        text = f"replaying from {replaying}"
    elif recording:
        text = f"recording to {recording}"
    else:
        return ""
    state = "recording" if recording else "replaying"
    return (
        f' <span class="lion-badge lion-cassette-badge lion-cassette-{state}" '
        f'title="a cassette is in force (lion_nb.cassette)">{escape(text)}</span>'
    )


def error_html(error: BaseException, *, advice: tuple[str, str] | None = None) -> str:
    """An error a view caught, as an alert box: its type and message. A ``CassetteMiss`` (a
    prompt that is not on the cassette) is one short message under a plain heading.
    ``advice``: ``(heading, text)`` in the view's own words (what to do from the view); the
    error's own message is then its tooltip."""
    name = type(error).__name__
    text = str(error) or repr(error)
    if advice is not None:
        heading, said = advice
        return (
            '<div class="lion-msg lion-error lion-view-error" role="alert">'
            f'<div class="lion-head"><span class="lion-role">{escape(heading)}</span>'
            f'<code class="lion-fn" title="{escape(text)}">{escape(name)}</code></div>'
            f'<div class="lion-body">{escape(said)}</div></div>'
        )
    if isinstance(error, CassetteMiss):
        return (
            '<div class="lion-msg lion-error lion-view-error lion-cassette-miss" role="alert">'
            '<div class="lion-head"><span class="lion-role">Not on the cassette</span></div>'
            f'<div class="lion-body">{escape(text)}</div></div>'
        )
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
    """The status line after forking at message ``index`` (the fork's id in its tooltip)."""
    return (
        f'<div class="lion-view-status" title="branch {escape(str(branch_id)[:8])}">'
        f"Forked at #{index} → {escape(name)} ({messages} messages).</div>"
    )


def no_such_message_html(index: int, messages: int) -> str:
    """The status line after the inspector's go-to box asked for a message that is not there."""
    held = f"the branch has #0–#{messages - 1}" if messages else "the branch has no messages"
    return f'<div class="lion-view-status">No message #{index}: {held}.</div>'


def fork_note_html(name: str | None, messages: int) -> str:
    """The heading of a fork's panel (its chat view follows)."""
    return (
        f'<div class="lion-meta">Fork {escape(name)} of {messages:,} messages (shown above) — '
        "continue it here:</div>"
    )


def shown_branch_html(
    state: str, lead: str, n: int, of: int, *, first: bool, note: str = "", ids: str = ""
) -> str:
    """The status line of a chat view that shows another alternative: which one (``n`` of
    ``of``, as its ``‹ n/of ›`` switcher counts), that ``view.branch`` is that branch now, and
    ``note``; ``lead`` (the last run's outcome) first. The branch ids only in the tooltip."""
    points = "is the branch you started with" if first else "now points to it"
    text = f"{escape(lead)}Alternative {n} of {of} · <code>view.branch</code> {points}"
    if note:
        text += f" · {escape(note)}"
    tip = f' title="{escape(ids)}"' if ids else ""
    return f'<div class="lion-view-status lion-view-{escape(state)}"{tip}>{text}</div>'
