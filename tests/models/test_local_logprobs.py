"""Log-probabilities and prefixes on the embedded model (llama.cpp + SmolLM2), for real.

Temperature 0 and seed 0: greedy decoding picks the most likely token, so each token must be
its position's first alternative."""

from __future__ import annotations

import math
import os
from typing import Any

import pytest

from lion_nb.messages import AssistantResponse
from lion_nb.models.base import ModelRequest
from lion_nb.models.imodel import iModel, local_model_available
from lion_nb.session.branch import Branch
from lion_nb.signals import StreamDelta

if not local_model_available():
    if os.environ.get("LION_NB_REQUIRE_LOCAL"):
        raise RuntimeError("LION_NB_REQUIRE_LOCAL is set but lion_nb[local] is not installed")
    pytest.skip("the embedded model (lion_nb[local]) is not installed", allow_module_level=True)

pytestmark = pytest.mark.local_model

SYSTEM = "You are a helpful assistant."


def model(**kw: Any) -> iModel:
    return iModel(provider="local", temperature=0, seed=0, **kw)


async def test_greedy_tokens_are_their_positions_most_likely_and_spell_the_reply() -> None:
    branch = Branch(system=SYSTEM, chat_model=model(max_tokens=24, logprobs=5))
    deltas: list[StreamDelta] = []
    branch.subscribe((StreamDelta,), deltas.append)
    text = await branch.communicate("Name three colours.")
    reply = branch.messages[-1]
    assert isinstance(reply, AssistantResponse) and reply.tokens
    assert "".join(t.text for t in reply.tokens) == text
    for token in reply.tokens:
        assert token.logprob <= 0
        assert len(token.top) == 5
        assert [lp for _, lp in token.top] == sorted((lp for _, lp in token.top), reverse=True)
        assert sum(math.exp(lp) for _, lp in token.top) <= 1 + 1e-4
        assert token.top[0] == pytest.approx((token.text, token.logprob), abs=1e-4)
    streamed = [d for d in deltas if d.kind == "tokens"]
    assert [d.token_index for d in streamed] == list(range(len(reply.tokens)))
    # the same reply without them: reading the logits changes nothing, and no logits_all
    plain = Branch(system=SYSTEM, chat_model=model(max_tokens=24))
    assert await plain.communicate("Name three colours.") == text
    assert plain.messages[-1].tokens is None  # type: ignore[attr-defined]
    assert branch.chat_model.provider.loaded().llama._logits_all is False


async def test_k_per_call_and_a_character_split_over_tokens() -> None:
    m = model(max_tokens=40)
    response = await m.complete(
        ModelRequest(
            messages=[{"role": "user", "content": "Write the word café in French, then Zürich."}],
            options={"logprobs": 0},
        )
    )
    assert response.tokens is not None
    assert "".join(t.text for t in response.tokens) == response.text
    assert all(t.top == [] for t in response.tokens)
    assert "\ufffd" not in response.text


async def test_a_prefix_is_continued_over_the_chat_template() -> None:
    m = model(max_tokens=12, logprobs=2)
    messages = [{"role": "user", "content": "What is the capital of France?"}]
    response = await m.complete(
        ModelRequest(messages=messages, prefix="The capital of France is Lyon")
    )
    assert response.text and not response.text.startswith("The capital")
    assert response.tokens is not None
    assert "".join(t.text for t in response.tokens) == response.text


async def test_fork_at_token_continues_the_reply_on_the_embedded_model() -> None:
    branch = Branch(system=SYSTEM, chat_model=model(max_tokens=16, logprobs=3))
    await branch.communicate("Tell me about cats.")
    reply = branch.messages[-1]
    assert isinstance(reply, AssistantResponse) and reply.tokens and len(reply.tokens) > 3
    alternative = reply.tokens[2].top[1][0]  # the second most likely token at position 2
    before = list(branch.messages)
    fork = await branch.fork_at_token(reply.id, 2, alternative)
    assert list(branch.messages) == before
    forked = fork.messages[-1]
    assert isinstance(forked, AssistantResponse) and forked.tokens
    start = "".join(t.text for t in reply.tokens[:2]) + alternative
    assert forked.response.startswith(start) and len(forked.response) > len(start)
    assert "".join(t.text for t in forked.tokens) == forked.response
    assert fork.metadata["forked_from"]["token_index"] == 2
