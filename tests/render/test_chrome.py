"""render.chrome: the views' titles, status lines, error boxes and notes, escaped."""

from __future__ import annotations

import uuid

from lion_nb.render.chrome import (
    error_html,
    fork_note_html,
    forked_html,
    meta_html,
    next_turn_pending_html,
    status_html,
    title_html,
)


def test_lines_escape_their_text() -> None:
    assert title_html("<b>T</b>") == '<div class="lion-title">&lt;b&gt;T&lt;/b&gt;</div>'
    assert status_html("done", "ok <1>") == (
        '<div class="lion-view-status lion-view-done">ok &lt;1&gt;</div>'
    )
    assert meta_html("a<b", inline=True) == '<span class="lion-meta">a&lt;b</span>'
    assert meta_html(3) == '<div class="lion-meta">3</div>'
    assert "counting…" in next_turn_pending_html()


def test_an_error_box_names_the_error() -> None:
    html = error_html(ValueError("bad <b>input</b>"))
    assert 'role="alert"' in html and "ValueError" in html
    assert "bad &lt;b&gt;input" in html and "<b>" not in html
    assert "RuntimeError()" in error_html(RuntimeError())  # no message: its repr


def test_fork_notes() -> None:
    bid = uuid.UUID(int=0xABCDEF12 << 96)
    assert forked_html(3, "f<1>", 4, bid) == (
        '<div class="lion-view-status">Forked at #3 → f&lt;1&gt; (4 messages, id abcdef12).</div>'
    )
    assert "Fork None of 1,200 messages" in fork_note_html(None, 1200)
