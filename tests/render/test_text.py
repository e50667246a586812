"""Markdown and plain-text renderings, and the Markdown safety pass."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from lion_nb.messages import ActionRequest, ActionResponse, AssistantResponse, Instruction, System
from lion_nb.render.text import (
    close_open_fence,
    fenced,
    format_usage,
    message_markdown,
    message_plain,
    safe_markdown_source,
    transcript_markdown,
    transcript_plain,
    visible_controls,
)

T = datetime(2024, 5, 1, 12, 30, 5, tzinfo=UTC)
STAMP = "2024-05-01 12:30:05 UTC"


def test_assistant_markdown() -> None:
    m = AssistantResponse(
        response="Use `Vec<T>`:\n\n```rust\nlet v: Vec<u8> = vec![];\n```",
        metadata={
            "thinking": "first line\nsecond",
            "model": "gpt-x",
            "usage": {"input_tokens": 10, "output_tokens": 2},
            "result": {"a": 1},
        },
        created_at=T,
    )
    assert m._repr_markdown_() == message_markdown(m)
    assert message_markdown(m) == (
        f"**Assistant** · `gpt-x` · 10 in · 2 out · {STAMP}\n\n"
        "> **Thinking**\n>\n> first line\n> second\n\n"
        "Use `Vec<T>`:\n\n```rust\nlet v: Vec<u8> = vec![];\n```\n\n"
        '**Parsed result**\n\n```json\n{\n  "a": 1\n}\n```\n'
    )


def test_instruction_and_tool_markdown() -> None:
    ins = Instruction(instruction="Sum", guidance="exactly", context=[1], created_at=T)
    assert message_markdown(ins) == (
        f"**User** · {STAMP}\n\nSum\n\n**Guidance**\n\nexactly\n\n"
        "**Context**\n\n```json\n[\n  1\n]\n```\n"
    )
    req = ActionRequest(function="add", arguments={"a": 1}, call_id="c1", created_at=T)
    assert message_markdown(req) == (
        f'**Action request** · `add` · (`c1`) · {STAMP}\n\n```json\n{{\n  "a": 1\n}}\n```\n'
    )
    err = ActionResponse(function="div", output="```\nboom <b>\n```", is_error=True, created_at=T)
    # the fence is longer than any backtick run in the output, so it cannot be closed early
    assert message_markdown(err) == (
        f"**Action response** · `div` · **error** · {STAMP}\n\n````text\n```\nboom <b>\n```\n````\n"
    )


def test_transcript_markdown_contains_unclosed_fences() -> None:
    messages = [
        System(system="S", created_at=T),
        AssistantResponse(response="```py\nx = 1", created_at=T),
        Instruction(instruction="next", created_at=T),
    ]
    assert transcript_markdown(messages, title="Run") == (
        f"# Run\n\n**System** · {STAMP}\n\nS\n\n---\n\n"
        f"**Assistant** · {STAMP}\n\n```py\nx = 1\n```\n\n---\n\n"
        f"**User** · {STAMP}\n\nnext\n"
    )


def test_plain() -> None:
    m = AssistantResponse(
        response="Hi\x1b[2J", metadata={"thinking": "hmm", "stopped": True}, created_at=T
    )
    assert message_plain(m) == f"[Assistant · stopped · {STAMP}]\n(thinking) hmm\n\nHi␛[2J"
    req = ActionRequest(function="f", arguments={"x": [1]}, created_at=T)
    res = ActionResponse(function="f", output={"y": 2}, is_error=True, created_at=T)
    ins = Instruction(instruction="Q", guidance="G", created_at=T)
    assert transcript_plain([ins, req, res]) == (
        f"[User · {STAMP}]\nQ\n\nGuidance: G\n\n"
        f'[Action request · f · {STAMP}]\n{{\n  "x": [\n    1\n  ]\n}}\n\n'
        f'[Action response · f · error · {STAMP}]\n{{\n  "y": 2\n}}'
    )


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # clean text, inline code and fences keep their bytes
        ("hello `Vec<T>` and [ok](https://x.org)", "hello `Vec<T>` and [ok](https://x.org)"),
        ("```html\n<script>x</script>\n```", "```html\n<script>x</script>\n```"),
        ("    <b>indented code</b>", "    <b>indented code</b>"),
        # raw HTML is neutralised on the lines that carry it, and only there
        (
            "ok `a<b>`\n\nx <img src=x onerror=y> `c<d>`",
            "ok `a<b>`\n\nx &lt;img src=x onerror=y> `c&lt;d>`",
        ),
        (
            "<div>\n<script>alert(1)</script>\n</div>",
            "&lt;div>\n&lt;script>alert(1)&lt;/script>\n&lt;/div>",
        ),
        # links other renderers would make dangerous, autolinks, images
        ("[a](javascript:alert(1))", "\\[a](javascript:alert(1))"),
        ("[a](<java\tscript:x>)", "\\[a](&lt;java\tscript:x>)"),
        ("<javascript:alert(1)>", "&lt;javascript:alert(1)>"),
        ("![p](https://tracker.example/p.gif)", "!\\[p](https://tracker.example/p.gif)"),
        ("[a][r]\n\n[r]: javascript:alert(1)", "\\[a]\\[r]\n\n\\[r]: javascript:alert(1)"),
        # an existing backslash cannot cancel our escape
        ("\\[x](javascript:alert(1)) <b>", "\\\\\\[x](javascript:alert(1)) &lt;b>"),
        # a fence inside a list item is recognised, so the HTML after it is caught
        ("- ```\n  ```\n<img src=x onerror=y>\n", "- ```\n  ```\n&lt;img src=x onerror=y>\n"),
    ],
)
def test_safe_markdown_source(source: str, expected: str) -> None:
    assert safe_markdown_source(source) == expected


def test_helpers() -> None:
    assert visible_controls("a\r\nb\x00\x1b\x7f\x85\tc") == "a\nb␀␛␡\ufffd\tc"
    assert fenced("a ```` b") == "`````\na ```` b\n`````"
    assert close_open_fence("x\n\n```py\ncode") == "x\n\n```py\ncode\n```\n"
    assert close_open_fence("```\ncode\n```\n") == "```\ncode\n```\n"
    assert close_open_fence("````") == "````\n````\n"
    assert format_usage(None) == ""
    assert format_usage({"input_tokens": 1234567, "total_cost_usd": 2}) == "1,234,567 in · $2.0000"
    assert format_usage({"output_tokens": True}) == ""  # a bool is not a count


def test_fence_info_strings_that_are_not_one_word_are_dropped():
    # JupyterLab's Markdown output puts the info string into a class attribute unescaped
    from lion_nb.render.text import safe_markdown_source

    hostile = '```"><img src=x onerror=alert(1)>\ncode\n```\n~~~ js onload=x\nmore\n~~~'
    assert safe_markdown_source(hostile) == "```\ncode\n```\n~~~\nmore\n~~~"
    assert safe_markdown_source("```python\nx = 1\n```") == "```python\nx = 1\n```"
