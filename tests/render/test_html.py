"""Message cards and transcripts as HTML: structure, escaping, export document."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from lion_nb.messages import ActionRequest, ActionResponse, AssistantResponse, Instruction, System
from lion_nb.render.html import (
    css_style_tag,
    head_html,
    lion_css,
    message_html,
    streaming_html,
    thinking_html,
    transcript_html,
)
from tests.support.html_tree import parse

T = datetime(2024, 5, 1, 12, 30, 5, tzinfo=UTC)


def _card(message: object):  # type: ignore[no-untyped-def]
    root = parse(message_html(message))
    cards = root.find_all("div", "lion-msg")
    assert len(cards) == 1
    return cards[0]


def test_assistant_card() -> None:
    m = AssistantResponse(
        response="Hello **world** <script>alert(1)</script>",
        metadata={
            "thinking": "step *one*",
            "model": "gpt-x",
            "result": {"answer": "<b>4</b>"},
            "usage": {"input_tokens": 1234, "output_tokens": 56, "total_cost_usd": 0.0012},
        },
        created_at=T,
    )
    card = _card(m)
    assert card.classes == ["lion-msg", "lion-assistant"]
    assert card.attrs["data-id"] == str(m.id)
    assert card.attrs["data-role"] == "assistant"
    head = card.find("div", "lion-head")
    assert head.find("span", "lion-role").text() == "Assistant"
    assert head.find("span", "lion-model").text() == "gpt-x"
    assert head.find("span", "lion-usage").text() == "1,234 in · 56 out · $0.0012"
    time = head.find("time")
    assert time.attrs == {
        "class": "lion-time",
        "datetime": "2024-05-01T12:30:05+00:00",
        "title": "2024-05-01 12:30:05 UTC",
    }
    assert time.text() == "12:30:05"
    thinking = card.find("details", "lion-thinking")
    assert "open" not in thinking.attrs  # collapsed
    assert thinking.find("summary").text() == "Thinking"
    assert thinking.find("em").text() == "one"
    body = card.find("div", "lion-body")
    assert body.find("strong").text() == "world"
    assert body.text() == "Hello world <script>alert(1)</script>\n"  # shown as text
    assert not body.find_all("script")
    result = card.find("details", "lion-result")
    assert result.find("pre").text() == '{\n  "answer": "<b>4</b>"\n}'


def test_assistant_card_stopped_and_empty() -> None:
    card = _card(AssistantResponse(response="", metadata={"stopped": True}, created_at=T))
    assert "lion-stopped-msg" in card.classes
    assert card.find("span", "lion-stopped").text() == "stopped"
    assert card.find("div", "lion-empty").text() == "(no text)"
    assert not card.find_all("details")


def test_instruction_card() -> None:
    m = Instruction(
        instruction="Sum *these*",
        guidance="Be exact",
        sender="alice",
        context=["first", {"n": [1, 2]}],
        response_schema={"type": "object"},
        images=["https://i.example/a.png", "data:image/png;base64,AAAA"],
        created_at=T,
    )
    card = _card(m)
    assert card.classes == ["lion-msg", "lion-user"]
    assert card.find("span", "lion-role").text() == "User"
    assert card.find("span", "lion-sender").text() == "alice"
    assert card.find("em").text() == "these"
    guidance = card.find("div", "lion-guidance")
    assert guidance.find("span", "lion-label").text() == "Guidance"
    assert guidance.find("p").text() == "Be exact"
    items = card.find("div", "lion-context").find("ol").find_all("li")
    assert [i.text().strip() for i in items] == ["first", '{\n  "n": [\n    1,\n    2\n  ]\n}']
    assert card.find("details", "lion-format").find("pre").text() == '{\n  "type": "object"\n}'
    assert card.find("div", "lion-images").text() == "2 images attached"
    assert not card.find_all("img") and not card.find_all("a")  # images are never loaded


def test_instruction_plain_content_wins() -> None:
    card = _card(Instruction(instruction="ignored", plain_content="Exact *text*", created_at=T))
    assert card.find("div", "lion-body").text() == "Exact text\n"


def test_action_request_card() -> None:
    m = ActionRequest(
        function="search<x>",
        arguments={"q": "<img src=x onerror=alert(1)>"},
        call_id="call_1",
        created_at=T,
    )
    card = _card(m)
    assert card.classes == ["lion-msg", "lion-action_request"]
    assert card.find("code", "lion-fn").text() == "search<x>"
    assert card.find("span", "lion-call-id").text() == "call_1"
    pre = card.find("pre", "lion-args")
    assert pre.text() == '{\n  "q": "<img src=x onerror=alert(1)>"\n}'
    assert "&lt;img src=x onerror=alert(1)&gt;" in message_html(m)


def test_action_response_cards() -> None:
    ok = _card(ActionResponse(function="add", arguments={"a": 1}, output=[1, "two"], created_at=T))
    assert ok.classes == ["lion-msg", "lion-action_response"]
    assert ok.find("details", "lion-args").find("pre").text() == '{\n  "a": 1\n}'
    assert ok.find("pre", "lion-output").text() == '[\n  1,\n  "two"\n]'
    assert not ok.find_all("span", "lion-error-badge")

    err = _card(
        ActionResponse(function="div", output="Traceback <...>\n  x", is_error=True, created_at=T)
    )
    assert err.classes == ["lion-msg", "lion-action_response", "lion-error"]
    assert err.find("span", "lion-error-badge").text() == "error"
    assert err.find("pre", "lion-output").text() == "Traceback <...>\n  x"
    assert not err.find_all("details")  # no arguments to show


def test_system_card_and_repr_html() -> None:
    m = System(system="Be **brief**.", created_at=T)
    assert m._repr_html_() == message_html(m)
    card = _card(m)
    assert card.classes == ["lion-msg", "lion-system"]
    assert card.find("strong").text() == "brief"


def test_transcript_fragment_and_document() -> None:
    messages = [
        System(system="S", created_at=T),
        Instruction(instruction="Q", created_at=T),
        AssistantResponse(response="A", created_at=T),
    ]
    fragment = parse(transcript_html(messages, title="Run <1>"))
    root = fragment.find("div", "lion-transcript")
    assert root.find("h2", "lion-title").text() == "Run <1>"
    cards = root.find_all("div", "lion-msg")
    assert [c.attrs["data-id"] for c in cards] == [str(m.id) for m in messages]

    doc = transcript_html(messages, title="Run <1>", standalone=True)
    assert doc.startswith("<!DOCTYPE html>\n<html")
    tree = parse(doc)
    head = tree.find("head")
    metas = head.find_all("meta")
    assert metas[0].attrs == {"charset": "utf-8"}
    csp = metas[1].attrs
    assert csp["http-equiv"] == "Content-Security-Policy"
    assert "default-src 'none'" in (csp["content"] or "")
    assert "script-src" not in (csp["content"] or "")  # so scripts fall back to 'none'
    assert head.find("title").text() == "Run <1>"
    assert head.find("style").text() == lion_css()
    body = tree.find("body")
    assert body.classes == ["lion-standalone"]
    assert len(body.find_all("div", "lion-msg")) == 3
    assert transcript_html([], standalone=False) == '<div class="lion-transcript">\n\n</div>'


def test_streaming_card() -> None:
    mid = uuid.uuid4()
    card = parse(streaming_html(mid, "Partial *te", "thinking so far")).find("div", "lion-msg")
    assert card.classes == ["lion-msg", "lion-assistant", "lion-streaming-msg"]
    assert card.attrs["data-id"] == str(mid)
    assert card.find("span", "lion-streaming").text() == "streaming…"
    assert "open" not in card.find("details", "lion-thinking").attrs
    assert card.find("div", "lion-body").text() == "Partial *te\n"
    # before any text arrives, the thinking is shown open
    early = parse(streaming_html(mid, "", "just thinking")).find("details", "lion-thinking")
    assert "open" in early.attrs
    done = parse(streaming_html(mid, "x", status="done")).find("div", "lion-msg")
    assert not done.find_all("span", "lion-status")
    stopped = parse(streaming_html(mid, "x", status="stopped")).find("span", "lion-stopped")
    assert stopped.text() == "stopped"


def test_building_blocks() -> None:
    assert thinking_html("") == ""
    assert thinking_html("x", open=True).startswith('<details class="lion-thinking" open>')
    head = parse(head_html("action_response", function="f", error=True, status="failed"))
    assert [n.text() for n in head.find_all("span")] == ["Action response", "error", "failed"]
    assert head.find("code", "lion-fn").text() == "f"


def test_stylesheet() -> None:
    css = lion_css()
    for selector in (
        ".lion-msg",
        ".lion-assistant",
        ".lion-thinking",
        ".lion-error",
        ".lion-streaming",
        ".lion-stopped",
        ".lion-round",
        ".lion-diff-changed",
        ".lion-code .k",
        "prefers-color-scheme: dark",
        "--jp-layout-color0",
    ):
        assert selector in css, selector
    assert "</" not in css
    assert css_style_tag() == f'<style data-lion-css="1">{css}</style>'


@pytest.mark.parametrize(
    "role", ["system", "user", "assistant", "action_request", "action_response"]
)
def test_every_role_renders_a_card_with_its_class(role: str) -> None:
    factory = {
        "system": lambda: System(system="s"),
        "user": lambda: Instruction(instruction="u"),
        "assistant": lambda: AssistantResponse(response="a"),
        "action_request": lambda: ActionRequest(function="f"),
        "action_response": lambda: ActionResponse(function="f", output="o"),
    }
    card = _card(factory[role]())
    assert card.classes[:2] == ["lion-msg", f"lion-{role}"]


def test_one_card_wrapper_for_recorded_live_and_pending_cards() -> None:
    from lion_nb.render.html import (
        body_html,
        card_html,
        live_card_classes,
        live_card_html,
        live_thinking_html,
        live_tools_html,
        pending_prompt_html,
    )

    mid = uuid.uuid4()
    assert card_html("user", "x", classes=("lion-pending",), message_id=mid) == (
        f'<div class="lion-msg lion-user lion-pending" data-id="{mid}" data-role="user">x</div>'
    )
    live = parse(live_card_html(head_html("assistant", status="streaming"), "streaming"))
    card = live.find("div", "lion-msg")
    assert card.classes == list(live_card_classes("streaming"))
    assert card.classes == ["lion-msg", "lion-assistant", "lion-streaming-msg", "lion-live"]
    assert body_html("") == "" and body_html("<p>x</p>") == (
        '<div class="lion-body lion-md"><p>x</p></div>'
    )
    pending = parse(pending_prompt_html("typed *here*")).find("div", "lion-msg")
    assert pending.classes == ["lion-msg", "lion-user", "lion-pending"]
    assert "<em>here</em>" in pending_prompt_html("typed *here*")
    thinking = live_thinking_html("<b>" + "z" * 50, 10)
    assert "Thinking (53 chars)" in thinking and "…" + "z" * 10 in thinking
    assert "<b>" not in live_thinking_html("<b>", 10)
    tools = live_tools_html([("search", '{"q": "<svg>"}', 14)], 100)
    assert "search" in tools and "&lt;svg&gt;" in tools and "<svg" not in tools


def test_a_heading_says_each_thing_once() -> None:
    from lion_nb.render.html import head_html

    user = head_html("user", sender="user")
    assert user.count("User") == 1 and "lion-sender" not in user
    reply = head_html("assistant", sender="scripted", model="scripted")
    assert reply.count("scripted") == 1
    cli = head_html("assistant", sender="claude_code", model="claude_code/claude_code")
    assert cli.count("claude_code") == 1
    assert head_html("assistant", sender="bot", model="gpt-x").count("gpt-x") == 1


def test_a_replayed_reply_has_a_badge_saying_where_it_came_from() -> None:
    from lion_nb.messages import AssistantResponse
    from lion_nb.render.html import message_html

    note = {"cassette": "demo<x>.jsonl", "call": 3, "line": 7, "recorded_at": "2026-11-30"}
    card = message_html(AssistantResponse(response="hi", metadata={"replayed": note}))
    assert 'class="lion-badge lion-replayed"' in card and ">replayed</span>" in card
    assert "demo&lt;x&gt;.jsonl" in card and "call 3" in card and "line 7" in card
    plain = message_html(AssistantResponse(response="hi"))
    assert "lion-replayed" not in plain
