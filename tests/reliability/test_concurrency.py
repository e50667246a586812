"""Many branches in one event loop, no cross-talk; lifecycle pairs intact."""

import asyncio
from collections import Counter

import pytest

from lion_nb import Branch, Session, iModel
from lion_nb.signals import RunEnd, RunFailed, RunStart

N = 100


def _lifecycle_recorder(target):
    seen: list = []
    target.observe(RunStart, RunEnd, RunFailed, handler=seen.append)
    return seen


def _assert_pairs(signals, branches):
    per_branch = Counter((s.branch_id, type(s).__name__) for s in signals)
    for b in branches:
        assert per_branch[(b.id, "RunStart")] == 1
        assert per_branch[(b.id, "RunEnd")] == 1
        assert per_branch[(b.id, "RunFailed")] == 0
    starts = {s.run_id: s.branch_id for s in signals if isinstance(s, RunStart)}
    for end in (s for s in signals if isinstance(s, RunEnd)):
        assert starts[end.run_id] == end.branch_id


@pytest.mark.parametrize("shared_session", [False, True])
async def test_hundred_branches_communicate_over_http_concurrently(chat_server, shared_session):
    model = iModel(provider="openai", model="m", base_url=chat_server.base_url, api_key_env=None)
    session = Session() if shared_session else None
    branches = [Branch(system=f"sys {i}", chat_model=model, name=f"b{i}") for i in range(N)]
    signals: list = []
    if session is not None:
        session.include_branches(*branches)
        signals = _lifecycle_recorder(session)
    else:
        for b in branches:
            b.observe(RunStart, RunEnd, RunFailed, handler=signals.append)
    async with model:
        replies = await asyncio.gather(
            *(b.communicate(f"question {i}") for i, b in enumerate(branches))
        )
    assert replies == [f"question {i}" for i in range(N)]  # the server echoes
    for i, b in enumerate(branches):
        assert [m.role for m in b.messages] == ["system", "user", "assistant"]
        assert b.messages[1].instruction == f"question {i}"
        assert b.messages[2].response == f"question {i}"
    _assert_pairs(signals, branches)
    # each request carried exactly its own branch's system prompt and question
    sent = {tuple(m["content"] for m in r.body["messages"]) for r in chat_server.requests}
    assert sent == {(f"sys {i}", f"question {i}") for i in range(N)}


async def test_hundred_cli_runs_concurrently_in_one_session():
    session = Session()
    branches = []
    for i in range(N):
        model = iModel(
            provider="scripted",
            cli=True,
            delay=0.001,
            replies=[
                {
                    "text": f"answer {i} " * 5,
                    "tool_calls": [{"name": "Read", "arguments": {"i": i}, "output": f"out {i}"}],
                }
            ],
        )
        branches.append(session.new_branch(chat_model=model, name=f"r{i}"))
    signals = _lifecycle_recorder(session)

    async def consume(b):
        return [m async for m in b.run(f"go {b.name}")]

    results = await asyncio.gather(*(consume(b) for b in branches))
    for i, (b, yielded) in enumerate(zip(branches, results, strict=True)):
        assert list(b.messages) == yielded
        assert yielded[0].instruction == f"go r{i}"
        texts = [m.response for m in yielded if m.role == "assistant" and m.response]
        assert texts and all(f"answer {i}" in t for t in texts)
        outputs = [m.output for m in yielded if m.role == "action_response"]
        assert outputs == [f"out {i}"]
    _assert_pairs(signals, branches)
