"""What an API call cost, from the maintained price table of ``genai-prices``.

``cost_usd(provider, model, usage)`` prices one call's ``Usage``: input tokens (which count the
cached ones), cache reads and cache writes each at their own price, output tokens (thinking
included). None — never a made-up number — when the provider has no price table (a local
server), the model is not in it, or the usage is unknown. ``iModel.complete`` fills
``Usage.total_cost_usd`` with it for a provider whose registry entry names its price table
(``ProviderSpec.prices``) when the provider did not report a cost itself (OpenRouter does;
Claude Code reports its own, which stays as it is). Any provider can call it too.

``genai_prices`` is imported on the first priced call (it takes ~0.4 s to import): never by
``import lion_nb``.
"""

from __future__ import annotations

import logging
from typing import Any

from lion_nb.usage import Usage

__all__ = ["cost_usd", "price_response"]

log = logging.getLogger(__name__)


def cost_usd(provider: str | None, model: str | None, usage: Usage) -> float | None:
    """The price in USD of ``usage`` on ``model`` at ``provider`` (its id in genai-prices:
    ``"anthropic"``, ``"openai"``, ``"google"``, ``"openrouter"``), or None when unknown."""
    if not provider or not model or (usage.input_tokens is None and usage.output_tokens is None):
        return None
    try:  # genai-prices is a core dependency, but only a priced call needs its price data
        from genai_prices import Usage as PriceUsage  # lazy: genai-prices costs ~190 ms
        from genai_prices import calc_price  # lazy: genai-prices costs ~190 ms
    except ImportError:  # a core dependency; a broken install prices nothing
        log.debug("genai-prices is not installed: costs are unknown")
        return None
    counts: dict[str, Any] = {
        "input_tokens": usage.input_tokens or 0,
        "output_tokens": usage.output_tokens or 0,
    }
    if usage.cache_read_tokens:
        counts["cache_read_tokens"] = usage.cache_read_tokens
    if usage.cache_write_tokens:
        counts["cache_write_tokens"] = usage.cache_write_tokens
    try:
        price = calc_price(PriceUsage(**counts), model, provider_id=provider)
    except (LookupError, ValueError) as exc:  # an unknown model or provider: no price
        log.debug("no price for %s/%s: %s", provider, model, exc)
        return None
    return float(price.total_price)


def price_response(provider: str | None, model: str | None, usage: Usage) -> None:
    """Set ``usage.total_cost_usd`` from the price table unless the provider reported it."""
    if usage.total_cost_usd is None:
        usage.total_cost_usd = cost_usd(provider, model, usage)
