"""Token usage, and its accumulation per run.

A run (``observed_run`` / ``observed_stream`` in ``port/lifecycle.py``) installs a ``RunUsage``
in a ContextVar while its own code executes; every model call made there (and in tasks it
starts) adds to it, so ``RunEnd`` reports the usage of this run only, not of the whole history.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

FIELDS = (
    "input_tokens",
    "output_tokens",
    "total_cost_usd",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)


@dataclass(slots=True)
class Usage:
    """One call's usage. ``input_tokens`` counts every input token, the cached ones included
    (``cache_read_tokens`` read from a prompt cache, ``cache_write_tokens`` written to one);
    ``output_tokens`` includes ``reasoning_tokens`` (thinking). ``total_cost_usd``: what the
    provider reported, or the price table's figure (``models/cost.py``); None when unknown."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_cost_usd: float | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None

    def as_dict(self) -> dict[str, Any]:
        """The fields the call reported (None ones left out): the form saved in a reply's
        ``metadata["usage"]``."""
        return {k: v for k in FIELDS if (v := getattr(self, k)) is not None}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Usage:
        """The ``Usage`` an ``as_dict()`` describes; missing fields (and a None dict) are None."""
        data = data or {}
        return cls(**{k: data.get(k) for k in FIELDS})


class RunUsage:
    """Sums usage; a field stays None until some call reports it."""

    __slots__ = FIELDS

    def __init__(self) -> None:
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None
        self.total_cost_usd: float | None = None
        self.cache_read_tokens: int | None = None
        self.cache_write_tokens: int | None = None
        self.reasoning_tokens: int | None = None

    def as_dict(self) -> dict[str, Any]:
        """The fields some call reported (as ``Usage.as_dict``)."""
        return {k: v for k in FIELDS if (v := getattr(self, k)) is not None}

    def add(self, usage: Usage | None) -> None:
        """Add one call's usage: each field it reports is summed; None adds nothing."""
        if usage is None:
            return
        for name in FIELDS:
            value = getattr(usage, name)
            if value is not None:
                current = getattr(self, name)
                setattr(self, name, value if current is None else current + value)


def format_cost(cost: float) -> str:
    """``"$0.0123"``; a call cheaper than a hundredth of a cent keeps its own digits
    (``"$0.000013"``) rather than reading as ``"$0.0000"``, which would be a made-up zero."""
    if 0 < cost < 0.0000005:
        return "<$0.000001"
    if 0 < cost < 0.0001:
        return f"${cost:.6f}"
    return f"${cost:.4f}"


current_run_usage: ContextVar[RunUsage | None] = ContextVar("lion_nb_run_usage", default=None)


def record_usage(usage: Usage | None) -> None:
    """Add one model call's usage to the run that is active in this task, if any."""
    acc = current_run_usage.get()
    if acc is not None:
        acc.add(usage)
