"""The prompt as the model reads it, as sanitized HTML: every token a chip tinted by the
message it spells, the template's scaffolding neutral, special tokens outlined with their text
shown, a legend and the count against the model's window. The static form of the view
``widgets/prompt.js`` draws (the standalone ``PromptView``'s saved output), in the same classes
(``widgets/prompt.css``).

A chip's tint is its message's role (``ROLES``: system, user, assistant, tool; any other role
shares one tint), one hue each mixed into the theme's page colour, with the theme's ink on it
(WCAG AA in JupyterLab Light and Dark). Two messages of one role in a row differ by a second,
stronger step of the same hue (``lion-pt-alt``), so where one ends and the next begins shows.
Each message's tokens sit in one group named for it ("Message 2 · user"), so a screen reader
hears whose words they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lion_nb.render.escape import escape

__all__ = [
    "HOST_HTML",
    "ROLES",
    "TITLE",
    "count_text",
    "prompt_note_html",
    "prompt_tokens_html",
    "role_class",
]

ROLES = ("system", "user", "assistant", "tool")
"""The roles with a tint of their own; any other role is tinted as ``other``."""

TITLE = "What the model read"

HOST_HTML = '<div class="lion-read-host"></div>'
"""The standalone view's one part: the page draws the prompt's panel in it."""


def role_class(role: str | None) -> str:
    """The chip class of a role (None: the template's scaffolding)."""
    if role is None:
        return "lion-pt-none"
    return f"lion-pt-{role if role in ROLES else 'other'}"


def count_text(n: int, window: int | None) -> str:
    """ "1,234 of 8,192 tokens" (or "1,234 tokens" when the window is not known)."""
    said = f"{n:,} of {window:,} tokens" if window else f"{n:,} token{'s' if n != 1 else ''}"
    if window and n > window:
        said += f" — {n - window:,} more than the window holds"
    return said


def shown_text(text: str) -> str:
    """A token as its chip shows it: a line break as ↵ (the chip's line then breaks), a tab as
    ⇥, a token that spells nothing (a character's first bytes) as ∅."""
    return text.replace("\n", "↵").replace("\t", "⇥") or "∅"


def _legend(roles: Sequence[str]) -> str:
    seen = list(dict.fromkeys(r if r in ROLES else "other" for r in roles))
    items = [
        f'<span role="listitem" class="lion-pt {role_class(r)}">{escape(r)}</span>' for r in seen
    ]
    items.append('<span role="listitem" class="lion-pt lion-pt-none">template</span>')
    items.append(
        '<span role="listitem" class="lion-pt lion-pt-none lion-pt-special">special token</span>'
    )
    return f'<span class="lion-read-legend" role="list" aria-label="Legend">{"".join(items)}</span>'


def _head(title: str, count: str) -> str:
    return (
        f'<div class="lion-read-head"><span class="lion-read-title">{escape(title)}</span> '
        f'<span class="lion-read-count">{escape(count)}</span></div>'
    )


def _group_name(message: int | None, roles: Sequence[str]) -> str:
    if message is None:
        return "Template scaffolding"
    role = roles[message] if message < len(roles) else "message"
    return f"Message {message + 1} · {role}"


def _chip(i: int, token: Any, cls: str) -> str:
    special = " lion-pt-special" if token.special else ""
    text = str(token.text)
    tip = f"token {i + 1} · id {token.id}" + (" · special" if token.special else "")
    br = "<br>" if "\n" in text else ""
    return (
        f'<span class="lion-pt {cls}{special}" data-i="{i}" title="{escape(tip)}">'
        f"{escape(shown_text(text))}</span>{br}"
    )


def prompt_tokens_html(
    tokens: Sequence[Any],
    roles: Sequence[str] = (),
    *,
    window: int | None = None,
    title: str = TITLE,
) -> str:
    """``tokens`` (``PromptToken``: ``.text``, ``.id``, ``.special``, ``.message``) as chips:
    ``roles[i]`` is message ``i``'s role (a message without one is called "message")."""
    body: list[str] = []
    current: object = object()
    parity: dict[int, bool] = {}
    last_role, alt = None, False
    for i, token in enumerate(tokens):
        message = token.message
        if message != current:
            if body:
                body.append("</span>")
            current = message
            if message is not None and message not in parity:
                role = roles[message] if message < len(roles) else None
                alt = role == last_role and not alt
                parity[message], last_role = alt, role
            body.append(
                f'<span class="lion-pt-msg" role="group" '
                f'aria-label="{escape(_group_name(message, roles))}">'
            )
        role = None if message is None else (roles[message] if message < len(roles) else "")
        cls = role_class(role) + (" lion-pt-alt" if message is not None and parity[message] else "")
        body.append(_chip(i, token, cls))
    if body:
        body.append("</span>")
    return (
        f'<div class="lion-read" role="region" aria-label="{escape(title)}">'
        + _head(title, count_text(len(tokens), window))
        + _legend(roles)
        + '<div class="lion-read-text" role="group" '
        'aria-label="The prompt\'s tokens, tinted by message">' + "".join(body) + "</div></div>"
    )


def prompt_note_html(note: str, *, title: str = TITLE) -> str:
    """The view when there are no tokens to show: why, in plain words."""
    return (
        f'<div class="lion-read" role="region" aria-label="{escape(title)}">'
        f'<div class="lion-read-head"><span class="lion-read-title">{escape(title)}</span></div>'
        f'<p class="lion-read-note" role="status">{escape(note)}</p></div>'
    )
