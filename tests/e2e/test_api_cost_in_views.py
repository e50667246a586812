"""An API model's price where people look for it: the progression inspector (row, run log,
header, static fallback) and the flow view (rows, header, text), from a real Anthropic
loopback server; nothing at all — never "$0.0000" — for a model without a known price."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from lion_nb import Branch, FlowView, iModel
from lion_nb.flow import Flow
from lion_nb.models.cost import cost_usd
from lion_nb.provenance import provenance_of
from lion_nb.render.text import format_usage
from lion_nb.signals import RunEnd
from lion_nb.usage import Usage, format_cost
from lion_nb.viewmodels.chat import status_of
from lion_nb.widgets.inspector import inspect
from tests.servers.anthropic_server import AnthropicServer, Message, start_anthropic_server

pytest.importorskip("genai_prices")

PRICED = "claude-sonnet-4-5"
UNPRICED = "claude-no-such-model-9"
USAGE = {"input_tokens": 1200, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


@pytest.fixture
def server() -> Iterator[AnthropicServer]:
    with start_anthropic_server() as s:
        yield s


def claude(server: AnthropicServer, model: str) -> iModel:
    return iModel(provider="anthropic", model=model, base_url=server.base_url, api_key="k-1")


def reply(text: str, model: str) -> Message:
    return Message(text, model=model, usage={**USAGE, "output_tokens": 1}, output_tokens=40)


async def inspected(server: AnthropicServer, model: str) -> tuple[Branch, list[str]]:
    """A branch that talked to ``model`` once, and what its inspector shows: rows, the
    expanded reply, the static fallback and its text."""
    branch = Branch(chat_model=claude(server, model))
    provenance_of(branch)
    server.script(reply("Hello.", model))
    await branch.communicate("hi")
    view = inspect(branch)
    try:
        shown = [*view.rows_html(), view.detail_html(1), view.static_html(), view.static_text()]
    finally:
        view.close()
    return branch, shown


async def flowed(server: AnthropicServer, model: str) -> tuple[Flow, list[str]]:
    """A two-node flow on the local engine against ``model``, and what its view shows."""
    server.script(reply("outline", model), reply("intro", model))
    flow = Flow(name="talk")
    branch = Branch(chat_model=claude(server, model))
    first = flow.add("communicate", instruction="Outline", branch=branch)
    flow.add("communicate", instruction="Intro", depends_on=[first])
    view = FlowView(flow, refresh_interval=0)
    try:
        await flow.run()
        view.channel.flush()
        parts = {key: html for key, html, *_ in view.state_parts()}
        shown = [
            parts["head"],
            *(html for key, html in parts.items() if key.startswith("n")),
            view.static_html(),
            view.static_text(),
        ]
    finally:
        view.close()
    return flow, shown


async def test_the_inspector_shows_an_api_models_price(server) -> None:
    branch, shown = await inspected(server, PRICED)
    expected = cost_usd("anthropic", PRICED, Usage(1200, 40))
    assert expected == pytest.approx((1200 * 3 + 40 * 15) * 1e-6)
    run = provenance_of(branch).runs[-1]
    assert run.total_cost_usd == pytest.approx(expected)
    assert branch.messages[-1].metadata["usage"]["total_cost_usd"] == pytest.approx(expected)
    line = format_usage({"input_tokens": 1200, "output_tokens": 40, "total_cost_usd": expected})
    assert line == "1,200 in · 40 out · $0.0042"
    rows, detail, static, text = shown[:-3], shown[-3], shown[-2], shown[-1]
    assert any(line in r for r in rows)  # the reply's row and its run's header
    assert line in detail and "&quot;total_cost_usd&quot;: 0.0042" in detail  # card, metadata
    assert static.count(line) >= 3  # header totals, run log, the reply's card
    assert line in text


async def test_the_inspector_shows_no_cost_for_an_unpriced_model(server) -> None:
    branch, shown = await inspected(server, UNPRICED)
    assert provenance_of(branch).runs[-1].total_cost_usd is None
    assert "total_cost_usd" not in branch.messages[-1].metadata["usage"]
    assert any("1,200 in · 40 out" in s for s in shown)
    for html in shown:
        assert "$" not in html and "total_cost_usd" not in html


async def test_the_flow_view_shows_each_nodes_price_and_their_sum(server) -> None:
    flow, shown = await flowed(server, PRICED)
    one = cost_usd("anthropic", PRICED, Usage(1200, 40))
    assert one is not None
    nodes = flow.nodes
    assert [n.usage.total_cost_usd for n in nodes] == [pytest.approx(one)] * 2
    header, rows, static, text = shown[0], shown[1:-2], shown[-2], shown[-1]
    assert "2,400 in · 80 out · $0.0084" in header and "$0.0084" in static
    assert all("1,200 in · 40 out · $0.0042" in r for r in rows) and len(rows) == 2
    assert text.count("$0.0042") == 2


async def test_the_flow_view_shows_no_cost_for_an_unpriced_model(server) -> None:
    flow, shown = await flowed(server, UNPRICED)
    nodes = flow.nodes
    assert [n.usage.total_cost_usd for n in nodes] == [None, None]
    assert "2,400 in · 80 out" in shown[0]
    for html in shown:
        assert "$" not in html


def test_a_cheap_call_keeps_its_digits_instead_of_reading_as_zero() -> None:
    cheap = cost_usd("anthropic", "claude-haiku-4-5", Usage(3, 2))
    assert cheap == pytest.approx((3 * 1 + 2 * 5) * 1e-6)
    assert format_cost(cheap) == "$0.000013"
    assert format_usage({"output_tokens": 2, "total_cost_usd": cheap}) == "2 out · $0.000013"
    assert format_cost(0.0042) == "$0.0042" and format_cost(0.0) == "$0.0000"
    assert format_cost(1e-9) == "<$0.000001"
    end = RunEnd(
        branch_id=uuid.uuid4(), run_id=uuid.uuid4(), operation="communicate", duration_ms=900,
        input_tokens=3, output_tokens=2, total_cost_usd=cheap,
    )  # fmt: skip
    assert status_of(end) == ("done", "communicate done in 0.9 s · 3 in / 2 out tokens · $0.000013")


async def test_a_sum_that_leaves_unpriced_calls_out_says_so(server) -> None:
    branch = Branch(chat_model=claude(server, PRICED))
    server.script(reply("one", PRICED), reply("two", UNPRICED))
    await branch.communicate("first")
    branch.chat_model = claude(server, UNPRICED)
    await branch.communicate("second")
    view = inspect(branch)
    try:
        head = view.static_html()
    finally:
        view.close()
    assert "2,400 in · 80 out · $0.0042 + 1 unpriced reply" in head

    server.script(reply("outline", PRICED), reply("intro", UNPRICED))
    flow = Flow(name="mixed")
    first = flow.add(
        "communicate", instruction="a", branch=Branch(chat_model=claude(server, PRICED))
    )
    flow.add(
        "communicate", instruction="b", depends_on=[first], chat_model=claude(server, UNPRICED)
    )
    view = FlowView(flow, refresh_interval=0)
    try:
        await flow.run()
        view.channel.flush()
        header = next(html for key, html, *_ in view.state_parts() if key == "head")
    finally:
        view.close()
    assert [n.status.value for n in flow.nodes] == ["completed"] * 2
    assert "2,400 in · 80 out · $0.0042 + 1 unpriced node" in header
