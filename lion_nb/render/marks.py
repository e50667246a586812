"""Marks on a transcript, rendered once for the live views and the static HTML of a saved
notebook alike: the badge of a reply cut off by the token limit (and, once continued, where its
rest is), the notice where the last request was cut to fit the context window, and the words of
the context gauge. What they mark is read from the messages (``lion_nb.turns``)."""

from __future__ import annotations

from typing import Any

from lion_nb.render.escape import escape

__all__ = ["context_cut_html", "gauge_html", "gauge_text", "truncated_badge_html"]


def truncated_badge_html(continued_by: Any = None) -> str:
    """The mark of a reply cut off by the token limit; once continued it says so and names
    the continuation's instruction (``data-continued``), and offers no Continue."""
    if continued_by is None:
        return (
            '<span class="lion-badge lion-cut-badge" title="This reply ended at the token '
            'limit">truncated</span>'
        )
    return (
        '<span class="lion-badge lion-cut-badge lion-continued" '
        f'data-continued="{escape(continued_by)}" title="This reply ended at the token limit; '
        'its continuation follows">truncated · continued below</span>'
    )


def context_cut_html(omitted: int) -> str:
    """The notice placed before the first message the last request sent after the system
    message, when it was cut to fit the context window (``fit_context``)."""
    s = "" if omitted == 1 else "s"
    return (
        f'<div class="lion-ctx-cut" role="note">Context window: the last request left out the '
        f"{omitted} earlier message{s} above (the system message was sent). The branch keeps "
        f"{'it' if omitted == 1 else 'them'}.</div>"
    )


def gauge_text(tokens: int, window: int, *, exact: bool, cuts: bool) -> str:
    """What the context gauge says about the next turn."""
    share = min(1.0, tokens / window) if window else 0.0
    approx = "" if exact else "~"
    text = (
        f"Next turn sends {approx}{tokens:,} of {window:,} tokens "
        f"({round(share * 100)}% of the context window)"
    )
    return text + ("; the oldest turns will be left out (fit_context)" if cuts else "")


def gauge_html(tokens: int, window: int, *, exact: bool, cuts: bool) -> str:
    """The gauge as static HTML (a saved notebook shows it under the transcript)."""
    text = gauge_text(tokens, window, exact=exact, cuts=cuts)
    return f'<div class="lion-gauge"><span class="lion-gauge-text">{escape(text)}</span></div>'
