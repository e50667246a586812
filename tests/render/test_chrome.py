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
        '<div class="lion-view-status" title="branch abcdef12">'
        "Forked at #3 → f&lt;1&gt; (4 messages).</div>"
    )
    assert "Fork None of 1,200 messages" in fork_note_html(None, 1200)


def test_the_cassette_badge_says_where_replies_come_from_and_go_to() -> None:
    from lion_nb.render.chrome import cassette_badge_html

    assert cassette_badge_html(None, None) == ""
    assert ">replaying from data/a.jsonl<" in cassette_badge_html("data/a.jsonl", None)
    assert ">recording to a.jsonl<" in cassette_badge_html(None, "a.jsonl")
    both = cassette_badge_html("a<1>.jsonl", "a<1>.local.jsonl")
    assert "replaying from a&lt;1&gt;.jsonl · recording new calls to a&lt;1&gt;.local.jsonl" in both
    assert "lion-cassette-recording" in both
    assert "replaying from and recording to a.jsonl" in cassette_badge_html("a.jsonl", "a.jsonl")
    line = status_html("idle", "ready", badge=cassette_badge_html("a.jsonl", None))
    assert line.startswith('<div class="lion-view-status lion-view-idle">ready <span')


def test_a_cassette_miss_is_one_short_message_not_an_error_dump() -> None:
    from lion_nb.errors import CassetteMiss

    html = error_html(CassetteMiss("This prompt is not on the cassette 'c.jsonl': 'x' <y>."))
    assert 'role="alert"' in html and "Not on the cassette" in html
    assert (
        "This prompt is not on the cassette &#x27;c.jsonl&#x27;: &#x27;x&#x27; &lt;y&gt;." in html
    )
    assert "<pre" not in html and "CassetteMiss" not in html
