"""Sampling, explained: what the samplers leave of a distribution over the next token.

``sample_distribution(top, temperature=, top_k=, top_p=, min_p=)`` is pure and exact over the
alternatives it is given (a reply token's ``.top``, or what ``iModel.next_tokens`` returned):
each alternative's probability once the samplers have reshaped the distribution, in the order
llama.cpp (and so the embedded model and ``llama-server``) applies them —

1. **top-k**: the ``top_k`` most likely stay (0 or None: no cut, as in llama.cpp);
2. **top-p**: the smallest run of most likely alternatives whose probability reaches ``top_p``;
3. **min-p**: those at least ``min_p`` times as likely as the most likely;
4. **temperature**: a softmax of the remaining log-probabilities divided by ``temperature``
   (0: only the most likely is left) —

renormalised after each step; what a step cuts stays at 0. ``temperature_first=True`` applies
the temperature before the cuts, as Hugging Face transformers does: a temperature above 1
flattens the distribution first, so top-p then keeps more alternatives (the order changes
what survives). Ties keep the order they are given in. The probabilities are over the given
alternatives only (renormalised to sum to 1 before the first step): what lies beyond the top
K was not stored, so it cannot be sampled here either.

A value module: no imports from the rest of lion_nb but ``errors``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from lion_nb.errors import ConfigurationError

__all__ = ["TokenProbability", "sample_distribution"]

# Relative slack when a running sum "reaches" top_p or a ratio meets min_p: the exp/log
# round-trips of stored log-probabilities must not move a token across the line.
_REACHED = 1e-9


class TokenProbability(NamedTuple):
    """One possible next token and its probability (a plain ``(text, probability)`` pair
    too: it unpacks and compares as one)."""

    text: str
    probability: float

    @property
    def logprob(self) -> float:
        """The natural log of ``probability`` (``-inf`` for 0)."""
        return math.log(self.probability) if self.probability > 0 else -math.inf


def sample_distribution(
    top: Iterable[Any],
    *,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    min_p: float | None = None,
    temperature_first: bool = False,
) -> list[TokenProbability]:
    """The probability of each alternative in ``top`` after the samplers (see the module), in
    the order given. ``top``: ``(text, logprob)`` pairs, most likely first (a ``TokenChoice``'s
    ``.top``), or ``TokenProbability`` values (what ``iModel.next_tokens`` returns), read by
    their probability."""
    texts, logprobs = _read(top)
    _check(temperature, top_k, top_p, min_p)
    if not texts or max(logprobs) == -math.inf:
        return [TokenProbability(t, 0.0) for t in texts]
    order = sorted(range(len(texts)), key=lambda i: -logprobs[i])  # stable: ties keep order
    alive = [True] * len(texts)
    probs = _softmax(logprobs, alive, 1.0)
    if temperature_first:
        probs = _temperature(logprobs, alive, order, temperature)
    if top_k is not None and _top_k(alive, order, top_k):
        probs = _renormalised(probs, alive)
    if top_p is not None and _top_p(probs, alive, order, top_p):
        probs = _renormalised(probs, alive)
    if min_p is not None and _min_p(probs, alive, order, min_p):
        probs = _renormalised(probs, alive)
    if not temperature_first:
        probs = _temperature(logprobs, alive, order, temperature)
    return [TokenProbability(t, p) for t, p in zip(texts, probs, strict=True)]


def _read(top: Iterable[Any]) -> tuple[list[str], list[float]]:
    texts: list[str] = []
    logprobs: list[float] = []
    for item in top:
        if isinstance(item, TokenProbability):
            text, logprob = item.text, item.logprob
        else:
            text, logprob = item[0], float(item[1])
        # rounding may leave a certain token's log-probability a hair above 0
        if math.isnan(logprob) or logprob > 1e-6:
            raise ConfigurationError(
                f"{text!r} has the log-probability {logprob!r}: give (text, logprob) pairs, "
                "log-probabilities <= 0 (a token's .top), or what next_tokens returned"
            )
        texts.append(str(text))
        logprobs.append(min(logprob, 0.0))
    return texts, logprobs


def _check(temperature: float, top_k: int | None, top_p: float | None, min_p: float | None) -> None:
    problems = []
    if not (isinstance(temperature, int | float) and 0 <= temperature < math.inf):
        problems.append(f"temperature={temperature!r} (0 or more; 0 keeps the most likely)")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0):
        problems.append(f"top_k={top_k!r} (a whole number; 0 or None: no cut)")
    for name, value in (("top_p", top_p), ("min_p", min_p)):
        if value is not None and not (isinstance(value, int | float) and 0 <= value <= 1):
            problems.append(f"{name}={value!r} (from 0 to 1, or None: no cut)")
    if problems:
        raise ConfigurationError("sampling settings out of range: " + "; ".join(problems))


def _softmax(logprobs: Sequence[float], alive: Sequence[bool], temperature: float) -> list[float]:
    top = max(lp for lp, on in zip(logprobs, alive, strict=True) if on)
    weights = [
        math.exp((lp - top) / temperature) if on else 0.0
        for lp, on in zip(logprobs, alive, strict=True)
    ]
    total = math.fsum(weights)
    return [w / total for w in weights]


def _renormalised(probs: Sequence[float], alive: Sequence[bool]) -> list[float]:
    total = math.fsum(p for p, on in zip(probs, alive, strict=True) if on)
    return [p / total if on else 0.0 for p, on in zip(probs, alive, strict=True)]


def _temperature(
    logprobs: Sequence[float], alive: list[bool], order: Sequence[int], temperature: float
) -> list[float]:
    """A softmax of the surviving log-probabilities / ``temperature``; 0 leaves the most
    likely survivor alone (llama.cpp's greedy temperature)."""
    if temperature == 0:
        best = next(i for i in order if alive[i])
        for i in range(len(alive)):
            alive[i] = i == best
        return [1.0 if on else 0.0 for on in alive]
    return _softmax(logprobs, alive, float(temperature))


def _top_k(alive: list[bool], order: Sequence[int], k: int) -> bool:
    """Keep the ``k`` most likely survivors; True when something was cut."""
    if k <= 0:
        return False
    survivors = [i for i in order if alive[i]]
    for i in survivors[k:]:
        alive[i] = False
    return len(survivors) > k


def _top_p(probs: Sequence[float], alive: list[bool], order: Sequence[int], p: float) -> bool:
    """Keep the smallest run of most likely survivors whose probability reaches ``p``."""
    if p >= 1:
        return False
    reached, cut, running = False, False, 0.0
    for i in order:
        if not alive[i]:
            continue
        if reached:
            alive[i], cut = False, True
            continue
        running += probs[i]
        reached = running >= p * (1 - _REACHED)
    return cut


def _min_p(probs: Sequence[float], alive: list[bool], order: Sequence[int], m: float) -> bool:
    """Keep the survivors at least ``m`` times as likely as the most likely."""
    if m <= 0:
        return False
    floor = m * max(p for p, on in zip(probs, alive, strict=True) if on) * (1 - _REACHED)
    cut = False
    for i in order:
        if alive[i] and probs[i] < floor:
            alive[i], cut = False, True
    return cut
