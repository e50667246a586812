"""A reply cut off by the token limit says so: ``metadata["finish_reason"] == "length"`` on the
recorded reply, for every provider that reports it.

* OpenAI-compatible: over the loopback chat server (streamed and one JSON body), and over a
  real ``llama_cpp.server`` at the end (``local_model``, slow).
* The embedded model: llama.cpp's own ``"length"``.
* Claude Code: its ``result.stop_reason`` (``max_tokens`` -> ``"length"``), through the event
  mapper and through a real process. The genuine recordings all end with ``end_turn``; the
  truncated stream is the genuine ``claude/text`` recording with only that field changed.
* Codex and Gemini CLI report no stop reason in their streams (fixtures README): nothing is
  claimed for them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from lion_nb.models import iModel
from lion_nb.models.base import Chunk
from lion_nb.models.claude_code import ClaudeEventMapper
from lion_nb.models.codex import CodexEventMapper
from lion_nb.models.gemini_cli import GeminiEventMapper
from lion_nb.models.jsonl import JSONLinesDecoder
from lion_nb.session.branch import Branch
from tests.servers import ChatServer, Reply, start_chat_server
from tests.support.fake_cli import FakeCLI, recording


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with start_chat_server() as s:
        yield s


# -- OpenAI-compatible ----------------------------------------------------------------------


@pytest.mark.parametrize("json_body", [False, True])
async def test_openai_length_reaches_the_recorded_reply(server: ChatServer, json_body: bool):
    server.script(Reply("Once upon a time there", finish_reason="length", json_body=json_body))
    model = iModel(provider="openai", model="m", base_url=server.base_url, api_key="sk-x")
    try:
        branch = Branch(chat_model=model)
        await branch.communicate("Tell me a story.", max_tokens=5)
    finally:
        await model.provider.aclose()
    assert server.last_request.body["max_tokens"] == 5
    assert branch.messages[-1].metadata["finish_reason"] == "length"


async def test_openai_a_complete_reply_says_stop(server: ChatServer) -> None:
    server.script(Reply("Done."))
    model = iModel(provider="openai", model="m", base_url=server.base_url, api_key="sk-x")
    try:
        branch = Branch(chat_model=model)
        await branch.communicate("Hi")
    finally:
        await model.provider.aclose()
    assert branch.messages[-1].metadata["finish_reason"] == "stop"


# -- Claude Code ----------------------------------------------------------------------------


def truncated_claude(tmp_path: Path, name: str = "claude/text") -> Path:
    """The genuine recording with the result's stop reason changed to ``max_tokens``."""
    lines = recording(name).read_bytes().splitlines()
    out = []
    for line in lines:
        event = json.loads(line)
        if event.get("type") == "result":
            event["stop_reason"] = "max_tokens"
            line = json.dumps(event, separators=(",", ":")).encode()
        out.append(line)
    path = tmp_path / "claude_max_tokens.jsonl"
    path.write_bytes(b"\n".join(out) + b"\n")
    return path


def chunks(path: Path, mapper: object) -> list[Chunk]:
    decoder = JSONLinesDecoder()
    items = decoder.feed(path.read_bytes()) + decoder.finish()
    return [c for item in items for c in mapper.map(item)] + mapper.finish()  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("name", "finish"), [("claude/text", "stop"), ("claude/tool_read", "stop")]
)
def test_claude_genuine_stop_reasons(name: str, finish: str) -> None:
    result = next(c for c in chunks(recording(name), ClaudeEventMapper()) if c.type == "result")
    assert result.metadata["stop_reason"] == "end_turn"
    assert result.metadata["finish_reason"] == finish


def test_claude_max_tokens_is_length(tmp_path: Path) -> None:
    found = chunks(truncated_claude(tmp_path), ClaudeEventMapper())
    result = next(c for c in found if c.type == "result")
    assert result.metadata["finish_reason"] == "length"
    assert not [c for c in found if c.type == "error"]


async def test_claude_truncated_reply_through_a_process(fake_cli: FakeCLI, tmp_path: Path):
    model = iModel(
        provider="claude_code",
        cli_path=str(fake_cli.path),
        env=fake_cli.env(truncated_claude(tmp_path)),
    )
    branch = Branch(chat_model=model)
    await branch.run_and_collect("Say hello.")
    reply = branch.messages[-1]
    assert reply.role == "assistant" and reply.text == "Hello! How can I help you today?"
    assert reply.metadata["finish_reason"] == "length"


@pytest.mark.parametrize(
    ("name", "mapper"), [("codex/text", CodexEventMapper), ("gemini/text", GeminiEventMapper)]
)
def test_codex_and_gemini_report_no_finish_reason(name: str, mapper: type) -> None:
    result = next(c for c in chunks(recording(name), mapper()) if c.type == "result")
    assert "finish_reason" not in result.metadata


# -- the embedded model ---------------------------------------------------------------------


@pytest.mark.local_model
async def test_local_length_reaches_the_recorded_reply() -> None:
    model = iModel(provider="local", temperature=0, seed=0, max_tokens=6)
    branch = Branch(system="You are a helpful assistant.", chat_model=model)
    await branch.communicate("Tell me a long story about the sea.")
    reply = branch.messages[-1]
    assert reply.metadata["finish_reason"] == "length"
    assert reply.metadata["usage"]["output_tokens"] == 6
    await branch.communicate("Say yes.", max_tokens=64)
    assert branch.messages[-1].metadata["finish_reason"] == "stop"
