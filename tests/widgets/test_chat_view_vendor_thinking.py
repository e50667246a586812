"""The chat view shows a vendor model's thinking streaming live, then collapsed on the recorded
reply: Anthropic (thinking blocks), Gemini (thought parts) and the OpenAI Responses API
(reasoning summaries), each from its loopback server, through ``BranchView`` and a page model
that applies the view's messages as ``widgets/lion_nb.js`` does."""

from __future__ import annotations

import html
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import pytest

from lion_nb import Branch, BranchView, iModel
from lion_nb.render.html import message_html
from tests.servers import Reply
from tests.servers.anthropic_server import Message, start_anthropic_server
from tests.servers.vendor_servers import start_gemini_server, start_responses_server
from tests.support.page_model import Page

THOUGHT = "First, six times seven. That is forty-two, so the answer is 42."
ANSWER = "The answer is **42**."
SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"


@dataclass
class Vendor:
    name: str
    start: Callable[[], AbstractContextManager[Any]]
    reply: Callable[[], Any]
    model: Callable[[Any], iModel]


def _claude(server: Any) -> iModel:
    return iModel(
        provider="anthropic",
        model="claude-sonnet-4-5",
        base_url=server.base_url,
        api_key="k-1",
        thinking=2048,
        max_tokens=4096,
    )


VENDORS = [
    Vendor(
        "anthropic",
        start_anthropic_server,
        lambda: Message(ANSWER, thinking=THOUGHT, signature=SIGNATURE, chunk_size=6, delay=0.05),
        _claude,
    ),
    Vendor(
        "gemini",
        start_gemini_server,
        lambda: Reply(ANSWER, reasoning=THOUGHT, chunk_size=6, delay=0.05),
        lambda s: iModel(
            provider="gemini", model="gemini-2.5-flash", base_url=s.base_url, api_key="k-1"
        ),
    ),
    Vendor(
        "responses",
        start_responses_server,
        lambda: Reply(ANSWER, reasoning=THOUGHT, chunk_size=6, delay=0.05),
        lambda s: iModel(
            provider="openai",
            api="responses",
            model="gpt-5-mini",
            base_url=s.base_url,
            api_key="k-1",
        ),
    ),
]


@pytest.fixture(params=VENDORS, ids=lambda v: v.name)
def vendor(request: pytest.FixtureRequest) -> Iterator[tuple[Vendor, Any]]:
    with request.param.start() as server:
        yield request.param, server


async def test_thinking_streams_live_then_shows_collapsed(vendor) -> None:
    v, server = vendor
    server.script(v.reply())
    model = v.model(server)
    branch = Branch(chat_model=model)
    view = BranchView(branch)
    sent: list[dict] = []
    view.channel._send = sent.append
    view.send("6*7?")
    await view.wait()
    view.channel.flush()  # whatever the throttle still held
    await model.aclose()
    reply = branch.messages[-1]
    assert reply.metadata["thinking"] == THOUGHT  # the text, kept apart from the reply
    assert reply.response == ANSWER

    page = Page(templates=view.templates)
    live_thinking = []
    for message in sent:
        page.receive(message)
        shown = page.html()
        if "lion-live-thinking" in shown:
            live_thinking.append(html.unescape(shown))
    # the page showed the thinking while it streamed, growing, before the reply was done
    assert live_thinking, "no live thinking reached the page"
    early = [s for s in live_thinking if "<strong>42</strong>" not in s]
    assert early, "the thinking showed only once the reply was complete"
    partial = [s for s in early if THOUGHT[:6] in s and THOUGHT not in s]
    assert partial, "the thinking did not show while it grew"  # its first delta is sent at once
    assert any(f"({len(THOUGHT)} chars)" in s and THOUGHT in s for s in live_thinking)

    # recorded: collapsed (no "open"), rendered, the signature nowhere on the page
    final = page.html()
    assert final == view.rendered_html() == "".join(message_html(m) for m in branch.messages)
    assert '<details class="lion-thinking"><summary>Thinking</summary>' in final
    assert "lion-live-thinking" not in final and '<details class="lion-thinking" open' not in final
    assert "forty-two" in final and "<strong>42</strong>" in final
    assert SIGNATURE not in final
