"""Log-probabilities as the providers take and give them: ``check_logprobs`` (the
``logprobs=K`` option, checked once for an iModel default and once per call), ``TokenDecoder``
and ``tokens_from_bytes`` (a byte-level tokenizer's tokens -> ``TokenChoice``s whose texts join
to the reply, as they stream) and ``fit_tokens`` (the tokens cut to the reply as returned).

The values they build - ``TokenChoice`` and the ``"tokens"`` delta's wire form - are
``lion_nb.tokens``'s; these names were importable from there first.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from lion_nb.errors import ConfigurationError
from lion_nb.tokens import token_choice

if TYPE_CHECKING:
    from lion_nb.messages import TokenChoice

__all__ = ["MAX_LOGPROBS", "TokenDecoder", "check_logprobs", "fit_tokens", "tokens_from_bytes"]

MAX_LOGPROBS = 20
"""The most alternatives per position ``logprobs=K`` may ask for (OpenAI's own limit)."""


def check_logprobs(value: Any) -> int | None:
    """``logprobs=K`` as given (an iModel default or one call's option): the number of
    alternatives per position, 0-20, or None for off (None or False). Anything else raises
    ``ConfigurationError``."""
    if value is None or value is False:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_LOGPROBS:
        raise ConfigurationError(
            f"logprobs={value!r}: give the number of alternatives per token, an integer from 0 "
            f"to {MAX_LOGPROBS} (0: each token's own log-probability only), or None for off"
        )
    return value


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
