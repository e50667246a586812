"""What a call costs, from genai-prices (models/cost.py): cache tokens at their own prices,
None when unknown, a provider's own figure kept."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lion_nb import Branch, iModel
from lion_nb.models.cost import cost_usd, price_response
from lion_nb.signals import RunEnd
from lion_nb.usage import Usage
from tests.servers.anthropic_server import AnthropicServer, Message, start_anthropic_server

pytest.importorskip("genai_prices")

# Claude Sonnet 4.5's list prices per million tokens: input 3, output 15, cache read 0.30,
# cache write (5 minutes) 3.75.
PER_M = 1e-6


def test_cache_tokens_are_priced_as_such() -> None:
    plain = cost_usd("anthropic", "claude-sonnet-4-5", Usage(1000, 500))
    cached = cost_usd(
        "anthropic",
        "claude-sonnet-4-5",
        Usage(1000, 500, cache_read_tokens=200, cache_write_tokens=100),
    )
    assert plain == pytest.approx((1000 * 3 + 500 * 15) * PER_M)
    assert cached == pytest.approx((700 * 3 + 200 * 0.30 + 100 * 3.75 + 500 * 15) * PER_M)
    dated = cost_usd("anthropic", "claude-sonnet-4-5-20250929", Usage(1000, 500))
    assert dated == plain  # the API reports dated names


def test_unknown_is_none_never_a_guess() -> None:
    assert cost_usd("anthropic", "no-such-model", Usage(10, 10)) is None
    assert cost_usd("no-such-provider", "claude-sonnet-4-5", Usage(10, 10)) is None
    assert cost_usd(None, "gpt-4o", Usage(10, 10)) is None
    assert cost_usd("openai", "gpt-4o", Usage()) is None
    reported = Usage(10, 10, total_cost_usd=0.5)
    price_response("openai", "gpt-4o", reported)
    assert reported.total_cost_usd == 0.5  # a provider's own figure (OpenRouter) stays


@pytest.fixture
def server() -> Iterator[AnthropicServer]:
    with start_anthropic_server() as s:
        yield s


async def test_run_end_carries_the_cost_of_an_api_model(server) -> None:
    model = iModel(
        provider="anthropic", model="claude-sonnet-4-5", base_url=server.base_url, api_key="k-123"
    )
    branch = Branch(chat_model=model)
    ends: list[RunEnd] = []
    branch.observe(handler=lambda s: ends.append(s) if isinstance(s, RunEnd) else None)
    server.script(Message("hi"))  # usage: 25 in, 15 out
    await branch.communicate("hello")
    assert ends[-1].total_cost_usd == pytest.approx((25 * 3 + 15 * 15) * PER_M)
    assert branch.messages[-1].metadata["usage"]["total_cost_usd"] == ends[-1].total_cost_usd


async def test_a_model_without_prices_costs_none() -> None:
    branch = Branch(
        chat_model=iModel(
            provider="scripted",
            replies=[{"text": "x", "usage": {"input_tokens": 3, "output_tokens": 4}}],
        )
    )
    ends: list[RunEnd] = []
    branch.observe(handler=lambda s: ends.append(s) if isinstance(s, RunEnd) else None)
    await branch.communicate("q")
    assert ends[-1].input_tokens == 3 and ends[-1].total_cost_usd is None


def test_openai_cached_prompt_tokens_are_read_from_the_details() -> None:
    from lion_nb.models.chat_format import usage_from

    usage = usage_from(
        {
            "prompt_tokens": 1000,
            "completion_tokens": 100,
            "prompt_tokens_details": {"cached_tokens": 800},
            "completion_tokens_details": {"reasoning_tokens": 60},
        }
    )
    assert (usage.cache_read_tokens, usage.reasoning_tokens) == (800, 60)
    # gpt-4.1-mini per million: input 0.40, cached input 0.10, output 1.60
    expected = (200 * 0.40 + 800 * 0.10 + 100 * 1.60) * PER_M
    assert cost_usd("openai", "gpt-4.1-mini", usage) == pytest.approx(expected)
