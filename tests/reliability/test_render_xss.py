"""Every hostile payload through every render entry point comes out inert.

The corpus (tests/fixtures/xss_corpus.json) is shared with the real-browser tests. Here each
payload is placed in every field a model, tool or user controls, rendered by every function the
views and exports use, and the output is parsed: no element, attribute or URL scheme outside
our vocabulary may appear (see tests/support/html_safety.py). Markdown output is additionally rendered by a
*non-sanitizing* CommonMark renderer with raw HTML on, as JupyterLab does for trusted output.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from lion_nb.messages import (
    ActionRequest,
    ActionResponse,
    AssistantResponse,
    Instruction,
    System,
)
from lion_nb.render.html import message_html, streaming_html, transcript_html
from lion_nb.render.markdown import MarkdownStream, build_markdown, render_markdown
from lion_nb.render.text import message_markdown, transcript_markdown
from tests.support.html_safety import CORPUS, html_problems

T = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
IDS = [c["name"] for c in CORPUS]


def _messages(p: str) -> list[Any]:
    """The payload in every field a model, tool or person controls."""
    return [
        System(system=p, sender=p, created_at=T),
        Instruction(
            instruction=p,
            guidance=p,
            context=[p, {"nested": p, p: [p]}],
            request_fields={p: p},
            images=[p],
            created_at=T,
        ),
        Instruction(plain_content=p, created_at=T),
        Instruction(
            instruction={"q": p}, guidance={"g": p}, response_schema={"title": p}, created_at=T
        ),
        AssistantResponse(
            response=p,
            metadata={
                "thinking": p,
                "model": p,
                "usage": {"input_tokens": 1, "output_tokens": 2, "total_cost_usd": 0.5},
                "result": {"answer": p, "items": [p, {"k": p}]},
                "stopped": True,
            },
            created_at=T,
        ),
        AssistantResponse(response="ok", metadata={"thinking": {"steps": [p]}}, created_at=T),
        ActionRequest(function=p, arguments={"arg": p, p: p}, call_id=p, created_at=T),
        ActionResponse(
            function=p, arguments={"arg": p}, output=p, is_error=True, call_id=p, created_at=T
        ),
        ActionResponse(function="search", output={"html": p, "rows": [[p]]}, created_at=T),
    ]


def _permissive_markdown() -> Any:
    """A renderer that trusts its input (raw HTML on, every link accepted)."""
    md = build_markdown(html_enabled=True)
    md.validateLink = lambda url: True
    md.normalizeLink = lambda url: url
    return md


PERMISSIVE = _permissive_markdown()


def _inert(markup: str, where: str, *, document: bool = False) -> None:
    problems = html_problems(markup, document=document)
    assert not problems, f"{where}: {problems}\n{markup[:2000]}"


def test_corpus_is_big_and_well_formed() -> None:
    assert len(CORPUS) >= 35
    assert all(set(c) == {"name", "payload"} for c in CORPUS)
    assert len(set(IDS)) == len(IDS)


@pytest.mark.parametrize("case", CORPUS, ids=IDS)
def test_payload_is_inert_everywhere(case: dict[str, str]) -> None:
    p = case["payload"]
    _inert(render_markdown(p), "render_markdown")

    stream = MarkdownStream()
    parts: list[str] = []
    for i in range(0, len(p), 3):
        parts += stream.feed(p[i : i + 3])
        _inert(stream.tail_html(), "MarkdownStream.tail_html")
    parts += stream.finish()
    _inert("".join(parts), "MarkdownStream blocks")

    messages = _messages(p)
    for m in messages:
        _inert(message_html(m), f"message_html({m.role})")
        _inert(m._repr_html_(), f"_repr_html_({m.role})")
        md = message_markdown(m)
        _inert(PERMISSIVE.render(md), f"message_markdown({m.role}) rendered permissively")
    _inert(streaming_html(uuid.uuid4(), p, p, status="stopped", model=p), "streaming_html")
    _inert(transcript_html(messages, title=p), "transcript_html")
    _inert(transcript_html(messages, title=p, standalone=True), "standalone export", document=True)
    _inert(PERMISSIVE.render(transcript_markdown(messages, title=p)), "transcript_markdown")


def test_checker_catches_what_it_should() -> None:
    """The checker itself must fail on live constructs, or the test above proves nothing."""
    bad = [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        '<a href="jav&#x09;ascript:alert(1)">x</a>',
        '<a href=" JAVASCRIPT:alert(1)">x</a>',
        '<a href="data:text/html,x">x</a>',
        "<style>*{}</style>",
        "<iframe></iframe>",
        '<svg><a xlink:href="javascript:alert(1)">x</a></svg>',
        '<p style="x:y">x</p>',
        '<form action="https://x"></form>',
        "<base href=https://x>",
        "<div onclick=x>",
    ]
    for markup in bad:
        assert html_problems(markup), markup
    doc_bad = '<html><head><style data-lion-css="1"></style></head><body><style>x</style></body>'
    assert html_problems(doc_bad, document=True)
    assert not html_problems('<a href="https://x" rel="noopener">ok</a><pre>&lt;script&gt;</pre>')


@pytest.mark.parametrize("case", CORPUS, ids=IDS)
def test_tool_output_text_is_kept_exactly(case: dict[str, str]) -> None:
    """Escaping loses nothing: the visible text of a tool output is the payload itself
    (control characters shown as symbols)."""
    from html.parser import HTMLParser

    from lion_nb.render.text import visible_controls

    class Pre(HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=True)
            self.depth = 0
            self.text: list[str] = []

        def handle_starttag(self, tag: str, attrs: Any) -> None:
            if tag == "pre" and ("class", "lion-output") in attrs:
                self.depth = 1

        def handle_endtag(self, tag: str) -> None:
            if tag == "pre":
                self.depth = 0

        def handle_data(self, data: str) -> None:
            if self.depth:
                self.text.append(data)

    p = case["payload"]
    parser = Pre()
    parser.feed(message_html(ActionResponse(function="f", output=p, created_at=T)))
    parser.close()
    assert "".join(parser.text) == visible_controls(p)
