"""``iModel.tokenize`` and ``iModel.next_tokens`` on llama.cpp's own ``llama-server``
(``/apply-template``, ``/tokenize`` with pieces, ``/completion`` with ``n_probs``), against
the embedded model on the same SmolLM2 weights (``tests/servers/real.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lion_nb import iModel
from lion_nb.cassettes import cassette
from lion_nb.models import capabilities
from tests.servers.real import RealServer

pytestmark = [pytest.mark.real_server, pytest.mark.slow, pytest.mark.local_model]

CONVERSATION = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Où est Zürich? 😀"},
    {"role": "assistant", "content": "In Switzerland."},
    {"role": "user", "content": "And Paris?"},
]
QUESTION = "What is the capital of France?"


@pytest.fixture(autouse=True)
def _forget_servers() -> Iterator[None]:
    yield
    capabilities.forget()


def served(server: RealServer) -> iModel:
    return iModel(provider="openai", model="SmolLM2", base_url=server.v1, timeout=300)


async def test_tokenize_agrees_with_the_embedded_model(llama_server_1: RealServer) -> None:
    remote = await served(llama_server_1).tokenize(CONVERSATION)
    local = await iModel(provider="local").tokenize(CONVERSATION)
    assert [(t.id, t.text, t.special, t.message) for t in remote] == [
        (t.id, t.text, t.special, t.message) for t in local
    ]
    assert [t.text for t in remote if t.special].count("<|im_start|>") == 5
    assert "".join(t.text for t in remote if t.message == 3) == "And Paris?"


async def test_next_tokens_agree_with_the_embedded_model(llama_server_1: RealServer) -> None:
    for prefix in (None, "The capital"):
        remote = await served(llama_server_1).next_tokens(QUESTION, k=8, prefix=prefix)
        local = await iModel(provider="local").next_tokens(QUESTION, k=8, prefix=prefix)
        probabilities = [p for _, p in remote]
        assert len(remote) == 8 and probabilities == sorted(probabilities, reverse=True)
        assert sum(probabilities) <= 1 + 1e-6
        assert remote[0].text == local[0].text
        # two builds of llama.cpp (llama-cpp-python's and the server's) on the same Q4_1
        # weights, with different CPU kernels: close, not bit for bit (seen: 0.134 vs 0.101)
        theirs = dict(local)
        shared = [(p, theirs[t]) for t, p in remote if t in theirs]
        assert len(shared) >= 6
        assert all(abs(a - b) <= 0.06 for a, b in shared), shared


async def test_the_distribution_is_over_the_whole_vocabulary(llama_server_1: RealServer) -> None:
    top = await served(llama_server_1).next_tokens(QUESTION, k=60)
    assert len(top) == 60  # not cut to the server's top-k of 40
    assert sum(p for _, p in top) < 0.99  # raw: the rest of the vocabulary holds the remainder


async def test_reads_replay_without_the_server(llama_server_1: RealServer, tmp_path: Path) -> None:
    path = tmp_path / "reads.jsonl"
    with cassette(path, mode="record"):
        tokens = await served(llama_server_1).tokenize(QUESTION)
        top = await served(llama_server_1).next_tokens(QUESTION, k=3)
    gone = iModel(provider="openai", model="SmolLM2", base_url="http://127.0.0.1:9/v1")
    with cassette(path, mode="replay"):
        assert await gone.tokenize(QUESTION) == tokens
        assert await gone.next_tokens(QUESTION, k=3) == top
