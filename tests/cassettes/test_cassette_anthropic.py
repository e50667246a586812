"""Cassettes over the Anthropic provider and its loopback server: a tool loop with signed
thinking, recorded and replayed after the server is stopped, the same deltas, messages and
cost; the key never reaches the file."""

from __future__ import annotations

from pathlib import Path

import lion_nb
from lion_nb import Branch, iModel
from lion_nb.signals import RunEnd
from tests.servers.anthropic_server import Message, start_anthropic_server
from tests.support.cassette_traces import Trace, messages

KEY = "sk-ant-api03-cassetteKEY0123456789abcdefghij"
THINK = {"type": "enabled", "budget_tokens": 1024}


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def claude(base_url: str) -> iModel:
    return iModel(
        provider="anthropic",
        model="claude-sonnet-4-5",
        base_url=base_url,
        api_key=KEY,
        thinking=THINK,
        max_retries=0,
    )


async def _session(model: iModel) -> tuple[Branch, Trace, list[RunEnd]]:
    branch = Branch(system="Use the tool.", chat_model=model, tools=[add])
    trace = Trace(branch)
    ends: list[RunEnd] = []
    branch.observe(handler=lambda s: ends.append(s) if isinstance(s, RunEnd) else None)
    await branch.operate(instruction="2+3?", actions=True)
    await branch.communicate("So?")
    return branch, trace, ends


async def test_a_thinking_tool_loop_replays_with_the_server_stopped(tmp_path: Path) -> None:
    path = tmp_path / "anthropic.jsonl"
    server = start_anthropic_server(key=KEY)
    server.script(
        Message(
            "Adding.",
            thinking="Use add.",
            signature="sig-xyz",
            tool_uses=[{"id": "toolu_9", "name": "add", "input": {"a": 2, "b": 3}}],
        ),
        Message("It is 5.", chunk_size=3),
    )
    try:
        model = claude(server.base_url)
        with lion_nb.cassette(path, mode="record", speed=None):
            branch, trace, ends = await _session(model)
        recorded = (messages(branch), trace.deltas(), trace.signals())
        costs = [e.total_cost_usd for e in ends]
        await model.aclose()
        port = server._httpd.server_address[1]
    finally:
        server.stop()
    assert len(server.requests) == 2
    assert KEY not in path.read_text() and "sig-xyz" in path.read_text()

    model = claude(f"http://127.0.0.1:{port}")
    with lion_nb.cassette(path, mode="replay", speed=None):
        branch, trace, ends = await _session(model)
    assert (messages(branch), trace.deltas(), trace.signals()) == recorded
    assert [e.total_cost_usd for e in ends] == costs
    assert branch.messages[2].metadata["thinking_blocks"][0]["signature"] == "sig-xyz"
    assert ("thinking", "Use ", 4) in trace.deltas()
    assert model._provider is None  # replay never built the HTTP provider
