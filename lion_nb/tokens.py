"""Tokens: estimates for when no tokenizer is available offline (labelled as estimates),
``NextTurn`` (what the next turn of a branch sends, computed by ``operations.window.next_turn``),
and a reply's tokens with their log-probabilities.

The module is callable: ``lion_nb.tokens(message)`` is ``token_view(message)``, the token view
of a reply recorded with ``logprobs=K`` (``.rendered_html()``: each token tinted by its
probability). The helpers here are shared by the providers (``tokens_from_bytes``, the
``"tokens"`` delta form), the operations (``check_logprobs``) and the views (``agreement``).

Imports stay light: pydantic values (``TokenChoice``) are imported where they are built.
"""

from __future__ import annotations

import codecs
import json
import math
import sys
import types
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lion_nb.sampling import sample_distribution

if TYPE_CHECKING:
    from lion_nb.messages import TokenChoice
    from lion_nb.render.tokens_html import TokenView

__all__ = [
    "MAX_LOGPROBS",
    "NextTurn",
    "Samples",
    "TokenDecoder",
    "agreement",
    "check_logprobs",
    "decode_tokens_delta",
    "encode_tokens_delta",
    "estimate_tokens",
    "fit_tokens",
    "sample_distribution",
    "sampling_label",
    "shared_units",
    "token_choice",
    "token_view",
    "tokens_from_bytes",
]

MAX_LOGPROBS = 20
"""The most alternatives per position ``logprobs=K`` may ask for (OpenAI's own limit)."""


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
        return self.tokens / self.window if self.window else None


# ----- log-probabilities ------------------------------------------------------------------------


def check_logprobs(value: Any) -> int | None:
    """``logprobs=K`` as given (an iModel default or one call's option): the number of
    alternatives per position, 0-20, or None for off (None or False). Anything else raises
    ``ConfigurationError``."""
    if value is None or value is False:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_LOGPROBS:
        from lion_nb.errors import ConfigurationError

        raise ConfigurationError(
            f"logprobs={value!r}: give the number of alternatives per token, an integer from 0 "
            f"to {MAX_LOGPROBS} (0: each token's own log-probability only), or None for off"
        )
    return value


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
    from lion_nb.messages import TokenChoice

    # checked here (types, finite, <= 0): built without pydantic's validation, once per token
    return TokenChoice.model_construct(
        text=str(text),
        logprob=_clamp(logprob),
        top=[(str(alt[0]), _clamp(alt[1])) for alt in top],
    )


def tokens_from_bytes(
    pieces: Iterable[tuple[bytes, float, Sequence[tuple[bytes, float]]]],
) -> list[TokenChoice]:
    """Tokens as the model produced them (bytes, logprob, alternatives as bytes) -> a list of
    ``TokenChoice`` whose texts join to the UTF-8 text of all the bytes (``TokenDecoder``)."""
    decoder = TokenDecoder()
    out = [t for raw, lp, top in pieces for t in decoder.feed(raw, lp, top)]
    return out + decoder.finish()


class TokenDecoder:
    """Turns tokens as bytes into ``TokenChoice``s as they stream: ``feed`` returns the tokens
    completed by one more token, ``finish`` the rest.

    A token that ends inside a multi-byte character (a byte-level tokenizer splits an emoji
    or an accented letter over tokens) is joined with the tokens that complete it: one
    ``TokenChoice`` whose logprob is the sum (the probability of the sequence) and whose
    alternatives are the first token's. Bytes that never form a character decode as U+FFFD."""

    __slots__ = ("_decoder", "_logprob", "_text", "_top")

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._text, self._logprob = "", 0.0
        self._top: Sequence[tuple[bytes, float]] | None = None

    def feed(
        self, raw: bytes, logprob: float, top: Sequence[tuple[bytes, float]] = ()
    ) -> list[TokenChoice]:
        if self._top is None:
            self._top = top
        self._text += self._decoder.decode(raw)
        self._logprob += float(logprob)
        if self._decoder.getstate()[0]:  # a character is open: wait for the rest of it
            return []
        return [self._take()]

    def finish(self) -> list[TokenChoice]:
        self._text += self._decoder.decode(b"", final=True)
        return [self._take()] if self._top is not None else []

    def _take(self) -> TokenChoice:
        top = [(a.decode("utf-8", "replace"), lp) for a, lp in self._top or ()]
        token = token_choice(self._text, self._logprob, top)
        self._text, self._logprob, self._top = "", 0.0, None
        return token


def fit_tokens(tokens: Sequence[TokenChoice], text: str) -> list[TokenChoice] | None:
    """``tokens`` cut to spell exactly ``text``, the reply as it was returned (a stop string
    or the token limit may end it inside a token, or before tokens that were sampled); None
    when they do not spell its start."""
    out: list[TokenChoice] = []
    pos = 0
    for token in tokens:
        if pos >= len(text):
            break
        if text.startswith(token.text, pos):
            out.append(token)
            pos += len(token.text)
            continue
        rest = text[pos:]
        if not token.text.startswith(rest):
            return None
        out.append(token.model_copy(update={"text": rest}))
        pos = len(text)
    return out if pos == len(text) else None


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


# ----- sampling: where replies agree ---------------------------------------------------------


def _units(reply: Any) -> list[str]:
    """A reply as the units compared: its token texts, else its words."""
    tokens = getattr(reply, "tokens", None)
    if tokens:
        return [t.text for t in tokens]
    text = reply if isinstance(reply, str) else getattr(reply, "text", str(reply))
    import re

    return re.findall(r"\S+\s*|\s+", text)


def agreement(replies: Sequence[Any]) -> list[float]:
    """Per position, the share of ``replies`` that agree with each other up to and including
    it: position ``i`` is the size of the largest group of replies sharing the same first
    ``i + 1`` units (tokens when they have them, else words) divided by the number of replies.
    1.0 while all agree; it falls where they diverge and never rises again. Positions run to
    the end of the longest reply."""
    seqs = [_units(r) for r in replies]
    n = len(seqs)
    if n == 0:
        return []
    longest = max(len(s) for s in seqs)
    out: list[float] = []
    groups: list[list[int]] = [list(range(n))]
    for i in range(longest):
        split: list[list[int]] = []
        for group in groups:
            by_unit: dict[str, list[int]] = {}
            for j in group:
                if i < len(seqs[j]):
                    by_unit.setdefault(seqs[j][i], []).append(j)
            split.extend(by_unit.values())
        groups = split
        out.append(max((len(g) for g in groups), default=0) / n)
    return out


def shared_units(replies: Sequence[Any]) -> int:
    """How many leading units (tokens, else words) all ``replies`` share."""
    return sum(1 for a in agreement(replies) if a >= 1.0)


@dataclass
class Samples:
    """``n`` replies to the same turn, sampled concurrently as forks (``Conversation.asample``,
    ``view.asample``): where they agree and where they diverge.

    ``branches[i]`` holds ``replies[i]`` (its last message); ``temperature`` and ``top_p`` are
    what the set was sampled with (None: the model's default). ``agreement`` is per position
    (``lion_nb.tokens.agreement``): 1.0 over the prefix all share, then the share of replies
    that still agree, counted over the replies received. ``errors``: why each sample that
    failed failed, in the order they were asked (their forks are gone, nothing of them is
    recorded); ``asked``: how many were asked for. A failed sample is never an empty reply:
    ``failure_note()`` (and every rendering) says "2 of 5 failed: ..."."""

    branches: list[Any]
    replies: list[Any]
    temperature: float | None = None
    top_p: float | None = None
    errors: list[BaseException] = field(default_factory=list)
    asked: int | None = None  # None: the replies and the failures together

    @property
    def failed(self) -> int:
        """How many samples failed (``errors`` says why)."""
        return len(self.errors)

    @property
    def total(self) -> int:
        """How many samples were asked for."""
        return self.asked if self.asked is not None else len(self.replies) + len(self.errors)

    def failure_note(self) -> str:
        """``"2 of 5 failed: ConnectionLost: ... (×2)"``: each distinct reason once, with how
        many samples it ended; ``""`` when none failed."""
        if not self.errors:
            return ""
        reasons: dict[str, int] = {}
        for error in self.errors:
            reason = f"{type(error).__name__}: {error}".rstrip(": ")
            reasons[reason] = reasons.get(reason, 0) + 1
        why = "; ".join(f"{r} (×{k})" if k > 1 else r for r, k in reasons.items())
        return f"{self.failed} of {self.total} failed: {why}"

    @property
    def agreement(self) -> list[float]:
        return agreement(self.replies)

    @property
    def texts(self) -> list[str]:
        return [getattr(r, "text", "") for r in self.replies]

    @property
    def shared(self) -> int:
        """How many leading tokens (words, for replies without tokens) every sample shares."""
        return shared_units(self.replies)

    @property
    def shared_prefix(self) -> str:
        """The text every sample starts with, as far as their units agree."""
        units = _units(self.replies[0]) if self.replies else []
        return "".join(units[: self.shared])

    @property
    def diverges_at(self) -> int | None:
        """The first position where the samples disagree (None: all the same)."""
        n = self.shared
        return None if all(len(_units(r)) == n for r in self.replies) else n

    def count_label(self) -> str:
        """``"3 samples"`` (``"1 sample"``): the replies received."""
        return f"{len(self.replies)} sample{'' if len(self.replies) == 1 else 's'}"

    def label(self) -> str:
        """``"temperature 0.8 · top-p 0.95"`` (what the view's labels say)."""
        return sampling_label(self.temperature, self.top_p)

    def __len__(self) -> int:
        return len(self.replies)

    def _repr_html_(self) -> str:
        from lion_nb.render.tokens_html import samples_html

        return samples_html(self)

    def __str__(self) -> str:
        """The set as text: its heading, each reply received, and what failed."""
        head = f"{self.count_label()} · {self.label()} · {self.shared} shared"
        lines = [head, *(f"{i}. {text}" for i, text in enumerate(self.texts, 1))]
        return "\n".join([*lines, self.failure_note()] if self.errors else lines)

    def __rich__(self) -> Any:
        from rich.text import Text

        return Text(str(self))

    def __repr__(self) -> str:
        failed = f"; {self.failed} of {self.total} failed" if self.errors else ""
        return f"<Samples {len(self.replies)} × {self.label()}: shared {self.shared} units{failed}>"


def sampling_label(temperature: float | None, top_p: float | None) -> str:
    """How a sample set is labelled: its temperature and top-p (or "default")."""
    t = "default" if temperature is None else f"{temperature:g}"
    label = f"temperature {t}"
    return label if top_p is None else f"{label} · top-p {top_p:g}"


# ----- the module is callable: lion_nb.tokens(message) ---------------------------------------


def token_view(message: Any) -> TokenView:
    """The token view of ``message`` (an ``AssistantResponse`` recorded with ``logprobs=K``):
    ``.rendered_html()`` draws each token tinted by its probability."""
    from lion_nb.render.tokens_html import TokenView

    return TokenView(message)


def __getattr__(name: str) -> Any:
    """``TokenChoice`` and ``TokenView`` are importable from here too (resolved on use)."""
    if name == "TokenChoice":
        from lion_nb.messages import TokenChoice

        return TokenChoice
    if name == "TokenView":
        from lion_nb.render.tokens_html import TokenView

        return TokenView
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _CallableModule(types.ModuleType):
    def __call__(self, message: Any) -> TokenView:
        return token_view(message)


sys.modules[__name__].__class__ = _CallableModule
