"""``iModel.tokenize`` and ``iModel.next_tokens`` on the embedded model (llama.cpp + SmolLM2),
for real: the prompt its chat handler feeds it, and the distribution its sampler starts from."""

from __future__ import annotations

import asyncio
import math
import os
import time
from pathlib import Path

import pytest

from lion_nb.cassettes import cassette
from lion_nb.errors import ContextWindowError
from lion_nb.models.base import ModelRequest
from lion_nb.models.imodel import iModel, local_model_available
from lion_nb.sampling import TokenProbability
from lion_nb.session.branch import Branch

if not local_model_available():
    if os.environ.get("LION_NB_REQUIRE_LOCAL"):
        raise RuntimeError("LION_NB_REQUIRE_LOCAL is set but lion_nb[local] is not installed")
    pytest.skip("the embedded model (lion_nb[local]) is not installed", allow_module_level=True)

pytestmark = pytest.mark.local_model

CONVERSATION = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Où est Zürich? 😀"},
]
TEMPLATED = (
    "<|im_start|>system\nYou are terse.<|im_end|>\n"
    "<|im_start|>user\nOù est Zürich? 😀<|im_end|>\n"
    "<|im_start|>assistant\n"
)


def model() -> iModel:
    return iModel(provider="local", temperature=0, seed=0)


async def test_tokenize_is_the_templated_prompt_with_its_markers() -> None:
    m = model()
    tokens = await m.tokenize(CONVERSATION)
    assert "".join(t.text for t in tokens) == TEMPLATED
    starts = [t for t in tokens if t.text == "<|im_start|>"]
    assert len(starts) == 3 and all(t.special and t.id == 1 for t in starts)
    assert [t.text for t in tokens if t.special] == ["<|im_start|>", "<|im_end|>"] * 2 + [
        "<|im_start|>"
    ]
    assert "".join(t.text for t in tokens if t.message == 0) == "You are terse."
    assert "".join(t.text for t in tokens if t.message == 1) == "Où est Zürich? 😀"
    assert "".join(t.text for t in tokens if t.message is None) == (
        "<|im_start|>system\n<|im_end|>\n<|im_start|>user\n<|im_end|>\n<|im_start|>assistant\n"
    )
    llama = m.provider.loaded().llama  # the ids its chat handler evaluates
    assert [t.id for t in tokens] == llama.tokenize(TEMPLATED.encode(), add_bos=False, special=True)
    # " " holds the emoji's first bytes too; the token that completes it spells it
    assert [t.text for t in tokens if t.message == 1][-2:] == [" ", "😀"]


async def test_a_text_is_one_user_turn_after_the_templates_own_system_prompt() -> None:
    tokens = await model().tokenize("Hi")
    assert "".join(t.text for t in tokens if t.message == 0) == "Hi"
    assert "You are a helpful AI assistant named SmolLM" in "".join(
        t.text for t in tokens if t.message is None
    )


async def test_next_tokens_are_the_first_reply_tokens_distribution() -> None:
    m = model()
    top = await m.next_tokens(CONVERSATION, k=5)
    assert len(top) == 5 and all(isinstance(t, TokenProbability) for t in top)
    probabilities = [p for _, p in top]
    assert probabilities == sorted(probabilities, reverse=True)
    assert 0 < sum(probabilities) <= 1 + 1e-6
    # the same numbers a one-token reply with logprobs=5 reads (greedy: its own token is first)
    request = ModelRequest(messages=CONVERSATION, options={"logprobs": 5, "max_tokens": 1})
    reply = await m.complete(request)
    assert reply.tokens is not None
    assert [t for t, _ in reply.tokens[0].top] == [t for t, _ in top]
    assert [math.exp(lp) for _, lp in reply.tokens[0].top] == pytest.approx(probabilities)


async def test_a_prefix_continues_the_reply_and_the_cache_stays_right() -> None:
    m = model()
    before = await Branch(chat_model=m).communicate("Name a colour.", max_tokens=8)
    first = await m.next_tokens("What is the capital of France?", prefix="The capital")
    assert first[0].text == " of" and first[0].probability > 0.5
    longer = await m.next_tokens("What is the capital of France?", prefix="The capital of")
    assert longer[0].text != " of"
    again = await m.next_tokens("What is the capital of France?", prefix="The capital")
    assert again == [(t, pytest.approx(p, abs=1e-6)) for t, p in first]
    # a generation after the reads (its prompt shares their KV cache start) says the same
    assert await Branch(chat_model=m).communicate("Name a colour.", max_tokens=8) == before


async def test_k_larger_than_the_default_and_special_tokens_among_them() -> None:
    question = "What is the capital of France? One sentence."
    top = await model().next_tokens(question, k=40, prefix="Paris is the capital of France.")
    assert len(top) == 40
    assert top[0].text == "<|im_end|>" and top[0].probability > 0.5  # the reply ends here


async def test_reads_are_recorded_and_replayed_without_the_model(tmp_path: Path) -> None:
    path = tmp_path / "reads.jsonl"
    with cassette(path, mode="record"):
        tokens = await model().tokenize(CONVERSATION)
        top = await model().next_tokens(CONVERSATION, k=3, prefix="Zürich")
    fresh = model()
    with cassette(path, mode="replay"):
        assert await fresh.tokenize(CONVERSATION) == tokens
        assert await fresh.next_tokens(CONVERSATION, k=3, prefix="Zürich") == [
            (t, pytest.approx(p)) for t, p in top
        ]
    assert fresh.provider_or_none is None  # nothing was loaded or even constructed


LONG = [{"role": "user", "content": "The lighthouse keeper counted the waves. " * 150}]


async def test_a_prompt_beyond_the_window_says_so() -> None:
    m = model()
    tokens = await m.tokenize(LONG * 3)  # reading the prompt needs no window
    assert len(tokens) > 2048
    with pytest.raises(ContextWindowError, match="n_ctx=2048") as caught:
        await m.next_tokens(LONG * 3)
    assert caught.value.window == 2048 and caught.value.tokens == len(tokens)


async def test_a_cancelled_read_lets_the_model_go_at_once() -> None:
    m = model()
    task = asyncio.create_task(m.next_tokens(LONG))  # ~1,300 tokens to evaluate: seconds
    await asyncio.sleep(0.3)
    start = time.perf_counter()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.perf_counter() - start < 2.5  # generous: the worker stops between graph nodes
    assert (await m.next_tokens("Hi", k=2))[0].text  # the model is free and right again


async def test_a_marker_typed_in_a_message_is_read_as_the_marker() -> None:
    # the chat handler parses special tokens in the whole templated prompt, contents included
    tokens = await model().tokenize("Stop here<|im_end|> and go on")
    inside = [t for t in tokens if t.message == 0]
    assert [t.text for t in inside if t.special] == ["<|im_end|>"]
    assert "".join(t.text for t in inside) == "Stop here<|im_end|> and go on"
