"""``lion_nb.tokens(message).rendered_html()``: one tinted element per token."""

from __future__ import annotations

import json
import math
import re
from html import unescape

import pytest

import lion_nb
from lion_nb.messages import AssistantResponse, TokenChoice
from lion_nb.render.tokens_html import (
    TOKEN_BINS,
    TokenView,
    samples_html,
    samples_title,
    token_bin,
)
from lion_nb.samples import Samples
from lion_nb.tokens import estimate_tokens

REPLY = AssistantResponse(
    response="Paris <b>& co",
    tokens=[
        {"text": "Paris", "logprob": -0.01, "top": [["Paris", -0.01], ["Lyon", -4.8]]},
        {"text": " <b>", "logprob": -0.4, "top": []},
        {"text": "&", "logprob": -1.0, "top": [["&", -1.0], ["and", -1.1]]},
        {"text": " co", "logprob": -2.0, "top": []},
        {"text": "", "logprob": -9.0, "top": []},
    ],
)


def spans(html: str) -> list[str]:
    return re.findall(r'<span class="lion-tok lion-tok-b\d"[^>]*>.*?</span>', html)


def test_one_element_per_token_with_its_index_probability_and_alternatives() -> None:
    html = lion_nb.tokens(REPLY).rendered_html()
    found = spans(html)
    assert len(found) == len(REPLY.tokens or [])
    indexes = [int(i) for i in re.findall(r'data-token-index="(\d+)"', html)]
    assert indexes == list(range(5))
    assert [float(p) for p in re.findall(r'data-p="([\d.]+)"', html)][:2] == [0.99, 0.6703]
    top = json.loads(unescape(re.search(r'data-top="([^"]*)"', html).group(1)))  # type: ignore[union-attr]
    assert top == [["Paris", 0.99], ["Lyon", 0.0082]]
    # the text is escaped, never markup, and joins back to the reply
    assert "<b>" not in html and "&lt;b&gt;" in html
    texts = [unescape(re.sub(r"<[^>]+>", "", s)) for s in found]
    assert "".join(texts) == REPLY.response


def test_tints_follow_the_five_bins_and_the_legend_names_them() -> None:
    assert [token_bin(lp) for lp in (0.0, -0.105, -0.2, -0.6, -1.5, -2.4, -50)] == [
        0,
        0,
        1,
        2,
        3,
        4,
        4,
    ]
    html = TokenView(REPLY).rendered_html()
    bins = re.findall(r'lion-tok-b(\d)" data-token-index', html)
    assert bins == ["0", "1", "2", "3", "4"]
    legend = re.search(r'<span class="lion-tokens-legend"[^>]*>(.*?)</span></div>', html)
    assert legend is not None
    assert len(re.findall(r"lion-tokens-key", legend.group(1))) == len(TOKEN_BINS)
    assert "p ≥ 0.9" in html and "p &lt; 0.1" in html


def test_shown_in_a_notebook_it_carries_the_stylesheet_with_the_tint_scale() -> None:
    shown = TokenView(REPLY)._repr_html_()
    assert shown.count("data-token-index") == 5
    assert "--lion-tok-b4" in shown and ".lion-tok-b4" in shown


def test_a_message_without_tokens_says_how_to_get_them_and_the_module_still_counts() -> None:
    with pytest.raises(ValueError, match="logprobs=K"):
        lion_nb.tokens(AssistantResponse(response="hi"))
    assert estimate_tokens(["abcd", "efgh"]) == 2
    assert lion_nb.tokens.estimate_tokens is estimate_tokens


def test_a_token_sampled_outside_its_stored_alternatives_says_so() -> None:
    relic = AssistantResponse(
        response="A relic",
        tokens=[
            {"text": "A", "logprob": -0.1, "top": [["A", -0.1], ["The", -2.5]]},
            {
                "text": " relic",
                "logprob": math.log(0.011),
                "top": [[" ruin", -0.5], [" tomb", -1]],
            },
        ],
    )
    titles = [unescape(t) for t in re.findall(r'title="([^"]*)"', TokenView(relic).rendered_html())]
    assert "not among" not in titles[0]  # the chosen token is among its alternatives
    assert titles[1].endswith(" · “ relic” (1.1%) is not among the 2 most likely shown")


class _Reply:
    def __init__(self, text: str, tokens: list[str] | None = None) -> None:
        self.text = text
        self.tokens = (
            None if tokens is None else [TokenChoice(text=t, logprob=-0.1) for t in tokens]
        )


def test_a_sample_set_title_says_what_it_compares() -> None:
    by_words = Samples([], [_Reply("The sky is blue."), _Reply("The sky is grey.")], 0.8, 0.95)
    assert samples_title(by_words) == "2 samples at temperature 0.8, top-p 0.95 · 3 words shared"
    tokens = [_Reply("ab", ["a", "b"]), _Reply("ac", ["a", "c"]), _Reply("ad", ["a", "d"])]
    assert samples_title(Samples([], tokens, 1.2, None)) == (
        "3 samples at temperature 1.2 · 1 token shared"
    )
    assert samples_title(Samples([], tokens)) == (
        "3 samples at the model's own temperature · 1 token shared"
    )
    assert samples_title(by_words) in samples_html(by_words)
