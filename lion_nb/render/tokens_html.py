"""A reply's tokens tinted by probability, as sanitized HTML: what
``lion_nb.tokens(message)`` shows, the static form of the chat view's token view.

One ``<span class="lion-tok lion-tok-bN">`` per token, in order, carrying ``data-token-index``,
``data-p`` (its probability), ``data-top`` (its alternatives, ``[[text, p], ...]`` as JSON,
most likely first) and a ``title`` that says the same in words (hovering shows it without a
script). The tint is one of five bins of probability (``TOKEN_BINS``, the same as the page's
``widgets/tokens.js``), drawn by ``widgets/tokens.css`` as one hue in five steps of lightness
mixed into the theme's page colour: a sequential scale, read without telling hues apart
(colour-blind safe), with the least likely bin underlined too, and the theme's ink on every
step (WCAG AA in JupyterLab Light and Dark). A legend names the bins.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any

from lion_nb.render.escape import escape

__all__ = [
    "TOKEN_BINS",
    "TokenView",
    "outside_top_note",
    "samples_html",
    "samples_title",
    "token_bin",
    "tokens_html",
]

TOKEN_BINS: tuple[tuple[float, str], ...] = (
    (0.10, "p ≥ 0.9"),  # the largest surprise (-ln p) in each bin: -ln 0.9 = 0.105
    (0.51, "0.6–0.9"),
    (1.20, "0.3–0.6"),
    (2.30, "0.1–0.3"),
    (math.inf, "p < 0.1"),
)
"""Five bins of probability: the largest surprise (-ln p, in nats, to the hundredth) in each,
and its label in the legend."""


def token_bin(logprob: float) -> int:
    """The tint bin (0: most likely ... 4: least likely) of a token's log-probability."""
    surprise = round(-logprob * 100) / 100 if logprob > -1e6 else math.inf
    for i, (upper, _) in enumerate(TOKEN_BINS):
        if surprise <= upper:
            return i
    return len(TOKEN_BINS) - 1


def _p(logprob: float) -> float:
    return math.exp(logprob) if logprob > -700 else 0.0


def _percent(p: float) -> str:
    return f"{p * 100:.1f}%" if p >= 0.001 else "<0.1%"


def _shown(text: str) -> str:
    """A token's text in a tooltip: whitespace made visible."""
    return repr(text)[1:-1] if text.strip() != text or not text else text


def outside_top_note(text: str, p: float, shown: int) -> str:
    """What a token sampled from outside its stored alternatives says (the page's popup says
    the same): ``"“ relic” (1.1%) is not among the 8 most likely shown"``."""
    return f"“{text}” ({_percent(p)}) is not among the {shown} most likely shown"


def _span(i: int, token: Any) -> str:
    p = _p(token.logprob)
    alts = [(str(t), _p(lp)) for t, lp in token.top]
    top = [[t, round(q, 4)] for t, q in alts]
    words = f"{_shown(token.text)}: p = {_percent(p)}"
    if alts:
        words += " · " + ", ".join(f"{_shown(t)} {_percent(q)}" for t, q in alts)
        if all(t != token.text for t, _ in alts):  # sampled from outside the top K
            words += " · " + outside_top_note(_shown(token.text), p, len(alts))
    data_top = json.dumps(top, ensure_ascii=False, separators=(",", ":"))
    return (
        f'<span class="lion-tok lion-tok-b{token_bin(token.logprob)}" data-token-index="{i}" '
        f'data-p="{p:.4f}" data-top="{escape(data_top)}" title="{escape(words)}">'
        f"{escape(token.text)}</span>"
    )


def legend_html() -> str:
    keys = "".join(
        f'<span class="lion-tok lion-tok-b{b} lion-tokens-key">{escape(label)}</span>'
        for b, (_, label) in enumerate(TOKEN_BINS)
    )
    return f'<span class="lion-tokens-legend" aria-label="Tint legend">{keys}</span>'


def tokens_html(tokens: Sequence[Any], *, title: str = "Tokens by probability") -> str:
    """The tokens as a panel: a head (title, legend) and the tinted text (a fragment)."""
    spans = "".join(_span(i, t) for i, t in enumerate(tokens))
    head = (
        f'<div class="lion-tokens-head"><span class="lion-tokens-title">{escape(title)}</span>'
        f"{legend_html()}</div>"
    )
    return (
        f'<div class="lion-tokens" data-tokens="{len(tokens)}">{head}'
        f'<div class="lion-tokens-text">{spans}</div></div>'
    )


class TokenView:
    """``lion_nb.tokens(message)``: the tokens of a reply recorded with ``logprobs=K``.

    ``rendered_html()`` is the tinted panel (a fragment styled by the lion_nb stylesheet);
    shown in a notebook it carries the stylesheet with it. ``tokens``, ``text`` and
    ``surprise()`` give the data."""

    def __init__(self, message: Any) -> None:
        tokens = message if isinstance(message, list | tuple) else getattr(message, "tokens", None)
        if tokens is None:
            raise ValueError(
                "this message has no tokens: ask the model for them with logprobs=K "
                "(iModel(..., logprobs=5), or per call: branch.communicate(..., logprobs=5))"
            )
        self.message = None if isinstance(message, list | tuple) else message
        self.tokens = list(tokens)

    @property
    def text(self) -> str:
        return "".join(t.text for t in self.tokens)

    def surprise(self) -> list[float]:
        """-ln p of each token, in nats (the strip above the text in the chat view)."""
        return [-t.logprob for t in self.tokens]

    def rendered_html(self) -> str:
        return tokens_html(self.tokens)

    def _repr_html_(self) -> str:
        from lion_nb.render.html import css_style_tag

        return f'{css_style_tag()}<div class="lion-view">{self.rendered_html()}</div>'

    def __len__(self) -> int:
        return len(self.tokens)

    def __repr__(self) -> str:
        return f"<TokenView of {len(self.tokens)} tokens: {self.text[:40]!r}>"


def samples_html(samples: Any) -> str:
    """A sample set (``lion_nb.samples.Samples``) as a list: its label, then each reply with
    the prefix all of them share marked and, where it has tokens, its tokens tinted."""
    shared = samples.shared
    rows = []
    for i, reply in enumerate(samples.replies):
        tokens = getattr(reply, "tokens", None)
        if tokens:
            units = [_span(k, t) for k, t in enumerate(tokens)]
        else:
            units = [escape(u) for u in _words(getattr(reply, "text", ""))]
        same = "".join(units[:shared])
        rest = "".join(units[shared:])
        rows.append(
            f'<li class="lion-sample" data-sample="{i + 1}"><span class="lion-tokens-text">'
            f'<span class="lion-sample-shared" title="shared by every sample">{same}</span>'
            f"{rest}</span></li>"
        )
    head = (
        f'<div class="lion-tokens-head"><span class="lion-tokens-title">'
        f"{escape(samples_title(samples))}</span>{legend_html()}</div>"
    )
    note = getattr(samples, "failure_note", lambda: "")()
    if note:  # a failed sample is said, never drawn as an empty reply
        head += f'<div class="lion-samples-failed lion-failed" role="status">{escape(note)}</div>'
    return f'<div class="lion-tokens lion-samples">{head}<ol>{"".join(rows)}</ol></div>'


def samples_title(samples: Any) -> str:
    """What a sample set's panel compares, in words: ``"5 samples at temperature 0.8, top-p
    0.95 · 26 tokens shared"`` (words, for replies without tokens)."""
    t, p = samples.temperature, samples.top_p
    at = "at the model's own temperature" if t is None else f"at temperature {t:g}"
    if p is not None:
        at += f", top-p {p:g}"
    by_tokens = bool(samples.replies) and all(getattr(r, "tokens", None) for r in samples.replies)
    unit = "token" if by_tokens else "word"
    shared = samples.shared
    return f"{samples.count_label()} {at} · {shared} {unit}{'' if shared == 1 else 's'} shared"


def _words(text: str) -> list[str]:
    return re.findall(r"\S+\s*|\s+", text)
