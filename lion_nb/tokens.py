"""Tokens as values: estimates for when no tokenizer is available offline (labelled as
estimates), ``NextTurn`` (what the next turn of a branch sends, computed by
``operations.window.next_turn``), a reply's tokens with their log-probabilities
(``token_choice``) and the wire form of a ``"tokens"`` delta (``encode_tokens_delta`` /
``decode_tokens_delta``: what a provider streams and ``StreamDelta.tokens`` reads).

Where the rest went (each still importable from here): ``Samples``, ``agreement``,
``shared_units`` and ``sampling_label`` to ``lion_nb.samples`` (values too, re-exported);
``check_logprobs``, ``MAX_LOGPROBS``, ``TokenDecoder``, ``tokens_from_bytes`` and ``fit_tokens``
to ``lion_nb.models.logprobs`` (what the providers use); ``TokenView`` to
``lion_nb.render.tokens_html``. Those of a layer above resolve here for one release with a
``DeprecationWarning``.

The module is callable: ``lion_nb.tokens(message)`` is the token view of a reply recorded with
``logprobs=K`` (``.rendered_html()``: each token tinted by its probability). Being a view, that
call is the top package's (``lion_nb/__init__.py`` makes this module callable when
``lion_nb`` is imported); nothing here imports a renderer.

Imports stay light (this module is loaded with ``lion_nb``): pydantic values (``TokenChoice``)
are imported where they are built.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lion_nb.samples import Samples, agreement, sampling_label, shared_units
from lion_nb.sampling import sample_distribution

if TYPE_CHECKING:
    from lion_nb.messages import TokenChoice

__all__ = [
    "NextTurn",
    "Samples",
    "agreement",
    "decode_tokens_delta",
    "encode_tokens_delta",
    "estimate_tokens",
    "sample_distribution",
    "sampling_label",
    "shared_units",
    "token_choice",
]


def estimate_tokens(texts: Iterable[str]) -> int:
    """About 4 characters per token for English text: a labelled estimate, never exact."""
    return sum((len(t) + 3) // 4 for t in texts)


@dataclass(frozen=True, slots=True)
class NextTurn:
    """What the next turn of a branch sends (the inspector's header)."""

    messages: int  # chat-completions messages the next request would carry
    tokens: int
    exact: bool  # counted by the provider's tokenizer, not estimated
    window: int | None
    cli: bool
    recorded: int = 0  # branch messages they are compiled from (tool calls merge into turns)

    @property
    def fraction(self) -> float | None:
        """The share of the window the next turn fills (above 1: it does not fit); None: unknown."""
        return self.tokens / self.window if self.window else None


# ----- a reply's tokens -------------------------------------------------------------------


def _clamp(logprob: float) -> float:
    """A log-probability as stored: finite and <= 0 (rounding can make a certain token's
    log-softmax a hair above 0; an impossible one is -inf, stored as the float minimum)."""
    value = float(logprob)
    if math.isnan(value):
        raise ValueError("a log-probability is NaN")
    if value > 0.0:
        return 0.0
    return max(value, -1e30)


def token_choice(text: str, logprob: float, top: Iterable[Sequence[Any]] = ()) -> TokenChoice:
    """A ``TokenChoice`` from plain values (log-probabilities clamped to <= 0)."""
    from lion_nb.messages import TokenChoice  # lazy: pydantic stays out of `import lion_nb`

    # checked here (types, finite, <= 0): built without pydantic's validation, once per token
    return TokenChoice.model_construct(
        text=str(text),
        logprob=_clamp(logprob),
        top=[(str(alt[0]), _clamp(alt[1])) for alt in top],
    )


def encode_tokens_delta(tokens: Iterable[TokenChoice]) -> str:
    """Tokens as the ``delta`` of a ``"tokens"`` delta (what a provider's ``DeltaSink`` is
    given while a reply streams with log-probabilities): compact JSON
    ``[[text, logprob, [[alt, logprob], ...]], ...]``."""
    return json.dumps(
        [[t.text, t.logprob, [list(a) for a in t.top]] for t in tokens],
        ensure_ascii=False,
        separators=(",", ":"),
    )


def decode_tokens_delta(delta: str) -> list[TokenChoice]:
    """The tokens of a ``"tokens"`` delta (``encode_tokens_delta``)."""
    data = json.loads(delta)
    return [token_choice(text, logprob, top) for text, logprob, top in data]


def __getattr__(name: str) -> Any:
    """``TokenChoice`` is importable from here too (resolved on use)."""
    if name == "TokenChoice":
        from lion_nb.messages import TokenChoice  # lazy: pydantic stays out of `import lion_nb`

        return TokenChoice
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
