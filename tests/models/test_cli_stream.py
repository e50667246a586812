"""Every recorded CLI stream through decoder + event mapper (no processes): typed chunks."""

from __future__ import annotations

import json
import logging
import random
from dataclasses import dataclass, field
from typing import Any

import pytest

from lion_nb.errors import (
    AuthenticationError,
    ProviderError,
    ProviderTimeout,
    RateLimitError,
    ServerError,
)
from lion_nb.models.base import Chunk
from lion_nb.models.claude_code import ClaudeEventMapper
from lion_nb.models.cli_stream import EMPTY_ERROR, classify_error
from lion_nb.models.codex import CodexEventMapper
from lion_nb.models.gemini_cli import GeminiEventMapper
from lion_nb.models.jsonl import JSONLinesDecoder, MalformedLine
from tests.support.fake_cli import all_recordings, chunk_key, recording

MAPPERS = {"claude": ClaudeEventMapper, "codex": CodexEventMapper, "gemini": GeminiEventMapper}


def chunks_of(name: str, blocks: list[bytes] | None = None, mapper: Any = None) -> list[Chunk]:
    data = recording(name).read_bytes()
    mapper = mapper or MAPPERS[name.split("/")[0]]()
    decoder = JSONLinesDecoder()
    items: list[Any] = []
    for block in blocks if blocks is not None else [data]:
        items += decoder.feed(block)
    items += decoder.finish()
    assert not [i for i in items if isinstance(i, MalformedLine)]
    return [c for item in items for c in mapper.map(item)] + mapper.finish()


@dataclass
class Expect:
    texts: list[str]  # assistant text, one entry per stretch between tool calls
    tools: list[tuple[str, bool]] = field(default_factory=list)  # (name, result is_error)
    thinking: str | None = None
    error: type[ProviderError] | None = None
    status: int | None = None
    result: bool = True


HELLO = ["Hello! How can I help you today?"]
NICE = ["Hello there, nice to meet you!"]
CLAUDE_THINK = "The user just wants a short greeting. One friendly sentence is enough."
READ = ["I'll read the file.", "The file hello.txt contains: hello from file"]
TWO = [
    "I'll read the file and also print it with cat.",
    "Both the Read tool and cat show: hello from file",
]
SUB = [
    "I'll delegate this to a subagent.",
    "The subagent reports that hello.txt says: hello from file",
]
STEP1, STEP2 = (
    ["Got it, I'll remember the word pineapple."],
    ["You asked me to remember the word pineapple."],
)

EXPECTED: dict[str, Expect] = {
    "claude/text": Expect(HELLO),
    "claude/text_partial": Expect(HELLO),
    "claude/text_bare": Expect(HELLO),
    "claude/thinking": Expect(NICE, thinking=CLAUDE_THINK),
    "claude/thinking_partial": Expect(NICE, thinking=CLAUDE_THINK),
    "claude/tool_read": Expect(READ, [("Read", False)]),
    "claude/tool_read_partial": Expect(READ, [("Read", False)]),
    "claude/tool_two": Expect(TWO, [("Read", False), ("Bash", False)]),
    "claude/tool_two_partial": Expect(TWO, [("Read", False), ("Bash", False)]),
    "claude/tool_two_bypass": Expect(TWO, [("Read", False), ("Bash", False)]),
    "claude/tool_denied": Expect(
        ["I was not allowed to write bye.txt, so I stopped."], [("Write", True)]
    ),
    "claude/tool_disallowed": Expect(
        ["The Bash tool is not available to me here."], [("Bash", True)]
    ),
    "claude/subagent": Expect(SUB, [("Agent", False), ("Read", False)]),
    "claude/subagent_partial": Expect(SUB, [("Agent", False), ("Read", False)]),
    "claude/error_429": Expect([], error=RateLimitError, status=429),
    "claude/error_429_partial": Expect([], error=RateLimitError, status=429),
    "claude/error_500": Expect([], error=ServerError, status=500),
    "claude/error_401": Expect([], error=AuthenticationError, status=401),
    "claude/error_midstream": Expect(["Let me start answering"], error=ServerError),
    "claude/retry_529": Expect(["Hello after a retry!"]),
    "claude/resume_step1": Expect(STEP1),
    "claude/resume_step2": Expect(STEP2),
    "codex/text": Expect(HELLO),
    "codex/reasoning": Expect(
        NICE,
        thinking="**Greeting the user**\n\nThe user only wants a "
        "short hello, so one sentence will do.",
    ),
    "codex/shell": Expect(["hello.txt contains: hello from file"], [("command_execution", False)]),
    "codex/reasoning_shell": Expect(
        ["I'll print the file.", "hello.txt contains: hello from file"],
        [("command_execution", False)],
        thinking="**Reading the file**\n\nI should look at hello.txt with cat.",
    ),
    "codex/shell_fail": Expect(["missing.txt does not exist."], [("command_execution", True)]),
    "codex/shell_denied": Expect(["The sandbox did not let me create bye.txt."]),
    "codex/patch": Expect(
        ["I'll create bye.txt and edit hello.txt.", "Done: added bye.txt and updated hello.txt."],
        [("file_change", False)],
    ),
    "codex/error_500": Expect([], error=ServerError, result=False),
    "codex/error_429": Expect([], error=RateLimitError, status=429, result=False),
    "codex/error_401": Expect([], error=AuthenticationError, status=401, result=False),
    "codex/error_failed": Expect([], error=ServerError, result=False),
    "codex/retry_500": Expect(["Hello after a retry!"]),
    "codex/retry_stream": Expect(["Hello after a reconnect!"]),
    "codex/resume_step1": Expect(STEP1),
    "codex/resume_step2": Expect(STEP2),
    "gemini/text": Expect(HELLO),
    "gemini/thinking": Expect(NICE),  # Gemini CLI does not print thoughts
    "gemini/tool_read": Expect(READ, [("read_file", False)]),
    "gemini/tool_shell": Expect(["cat printed: hello from file"], [("run_shell_command", False)]),
    "gemini/tool_error": Expect(["missing.txt does not exist."], [("read_file", True)]),
    "gemini/tool_denied": Expect(
        ["I could not run the shell command."], [("run_shell_command", True)]
    ),
    "gemini/error_400": Expect([], error=AuthenticationError, status=400),
    "gemini/error_429": Expect([], error=RateLimitError),
    "gemini/error_500": Expect([], error=ServerError, status=500),
    # Killed by `timeout` while Gemini retried: no result line; the exit code (124) is the
    # error, reported by the provider (tests/models/test_cli_providers.py).
    "gemini/error_429_default_retries": Expect([], result=False),
    "gemini/retry_500": Expect(["Hello after a retry!"]),
    "gemini/resume_step1": Expect(STEP1),
    "gemini/resume_step2": Expect(STEP2),
}


def test_every_recording_has_an_expectation() -> None:
    assert sorted(EXPECTED) == all_recordings()


def text_stretches(chunks: list[Chunk]) -> list[str]:
    """Assistant text grouped the way run() flushes it: a tool call ends a stretch."""
    stretches, current = [], ""
    for chunk in chunks:
        if chunk.type == "text":
            current += chunk.text
        elif chunk.type == "tool_use":
            stretches.append(current)
            current = ""
    return [s for s in [*stretches, current] if s]


def first_session_id(name: str) -> str:
    first = json.loads(recording(name).read_bytes().splitlines()[0])
    return first.get("session_id") or first["thread_id"]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_recording_maps_to_typed_chunks(name: str) -> None:
    expect = EXPECTED[name]
    chunks = chunks_of(name)
    assert all(c.raw is not None for c in chunks)

    assert text_stretches(chunks) == expect.texts
    thinking = "".join(c.text for c in chunks if c.type == "thinking")
    assert thinking == (expect.thinking or "")

    # session id: the first chunk, equal to the id the CLI printed first
    assert chunks[0].type == "system"
    assert chunks[0].session_id == first_session_id(name)

    uses = [c for c in chunks if c.type == "tool_use"]
    results = {c.tool_id: c for c in chunks if c.type == "tool_result"}
    assert [(u.name, results[u.tool_id].is_error) for u in uses] == expect.tools
    assert all(isinstance(u.arguments, dict) and u.arguments for u in uses)

    result = [c for c in chunks if c.type == "result"]
    assert len(result) == (1 if expect.result else 0)
    if result:
        usage = result[0].metadata["usage"]
        assert isinstance(usage["input_tokens"], int)
        assert isinstance(usage["output_tokens"], int)
        assert result[0].metadata["is_error"] is (expect.error is not None)

    errors = [c for c in chunks if c.type == "error"]
    if expect.error is None:
        assert errors == []
    else:
        assert len(errors) == 1 and chunks[-1] is errors[0]  # the last word
        error = errors[0].error
        assert type(error) is expect.error
        assert error.provider in ("claude_code", "codex", "gemini_cli")
        assert errors[0].text == error.message and errors[0].text
        assert not errors[0].benign_eos
        if expect.status is not None:
            assert error.status == expect.status


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_byte_split_gives_the_same_chunks(name: str) -> None:
    data = recording(name).read_bytes()
    whole = [chunk_key(c) for c in chunks_of(name)]
    rng = random.Random(name)
    for _ in range(25):
        cuts = sorted(rng.randrange(len(data) + 1) for _ in range(rng.randrange(1, 10)))
        blocks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
        assert [chunk_key(c) for c in chunks_of(name, blocks)] == whole


@pytest.mark.parametrize(
    "name", ["codex/reasoning_shell", "codex/error_500", "gemini/error_429", "claude/thinking"]
)
def test_byte_split_at_every_offset(name: str) -> None:
    data = recording(name).read_bytes()
    whole = [chunk_key(c) for c in chunks_of(name)]
    for cut in range(len(data) + 1):
        assert [chunk_key(c) for c in chunks_of(name, [data[:cut], data[cut:]])] == whole, cut


# -- Claude Code specifics ------------------------------------------------------------------


@pytest.mark.parametrize(
    "case", ["text", "thinking", "tool_read", "tool_two", "subagent", "error_429"]
)
def test_claude_partial_messages_do_not_double_emit(case: str) -> None:
    plain, partial = chunks_of(f"claude/{case}"), chunks_of(f"claude/{case}_partial")

    def summary(chunks: list[Chunk]) -> tuple:
        return (
            text_stretches(chunks),
            "".join(c.text for c in chunks if c.type == "thinking"),
            [
                (c.type, c.name, c.tool_id is not None)
                for c in chunks
                if c.type in ("tool_use", "tool_result", "error")
            ],
        )

    assert summary(partial) == summary(plain)


def test_claude_partials_arrive_as_deltas() -> None:
    texts = [c.text for c in chunks_of("claude/text_partial") if c.type == "text"]
    assert texts == ["Hello! How can ", "I help you ", "today?"]


def test_claude_without_partials_emits_whole_blocks() -> None:
    texts = [c.text for c in chunks_of("claude/text") if c.type == "text"]
    assert texts == ["Hello! How can I help you today?"]


def test_claude_result_metadata() -> None:
    result = next(c for c in chunks_of("claude/tool_denied") if c.type == "result")
    meta = result.metadata
    assert meta["num_turns"] == 2 and meta["is_error"] is False
    assert meta["session_id"] == "44034e22-f3eb-4ea0-a60d-a07fbac1ae73"
    assert isinstance(meta["total_cost_usd"], float) and isinstance(meta["duration_ms"], int)
    assert [d["tool_name"] for d in meta["permission_denials"]] == ["Write"]


def test_claude_subagent_calls_are_marked_with_their_parent() -> None:
    chunks = chunks_of("claude/subagent")
    agent = next(c for c in chunks if c.type == "tool_use" and c.name == "Agent")
    read = next(c for c in chunks if c.type == "tool_use" and c.name == "Read")
    assert read.metadata == {"parent_tool_use_id": agent.tool_id}
    assert "parent_tool_use_id" not in agent.metadata
    report = next(c for c in chunks if c.type == "tool_result" and c.tool_id == agent.tool_id)
    assert report.output.startswith("hello.txt contains: hello from file")


def test_claude_api_retry_is_a_system_chunk() -> None:
    retry = [c for c in chunks_of("claude/retry_529") if c.type == "system"][1]
    assert retry.metadata["subtype"] == "api_retry"
    assert retry.metadata["error_status"] == 529 and retry.session_id is None


def test_claude_api_error_without_result_line_is_still_reported() -> None:
    lines = recording("claude/error_401").read_bytes().splitlines(keepends=True)
    mapper, decoder = ClaudeEventMapper(), JSONLinesDecoder()
    chunks = [c for item in decoder.feed(b"".join(lines[:-1])) for c in mapper.map(item)]
    assert [c.type for c in chunks] == ["system"]  # the synthetic API error is not text
    (error,) = mapper.finish()
    assert isinstance(error.error, AuthenticationError)
    assert error.text == "Invalid API key · Fix external API key"


def test_claude_resume_keeps_the_session_id() -> None:
    ids = {first_session_id(f"claude/resume_step{i}") for i in (1, 2)}
    assert ids == {"45934ca1-7a3a-4cad-90ec-cd9832ea4ddf"}


# -- Codex specifics ------------------------------------------------------------------------


def test_codex_resume_reports_marginal_usage() -> None:
    totals: dict[str, dict[str, int]] = {}
    step1 = chunks_of("codex/resume_step1", mapper=CodexEventMapper(thread_totals=totals))
    step2 = chunks_of("codex/resume_step2", mapper=CodexEventMapper(thread_totals=totals))
    u1 = next(c for c in step1 if c.type == "result").metadata
    u2 = next(c for c in step2 if c.type == "result").metadata
    assert step1[0].session_id == step2[0].session_id == "01a22a0b-3b46-7d50-8dd3-780b7876c74c"
    assert u1["usage"]["input_tokens"] == 9518 and u1["usage"]["output_tokens"] == 60
    # Codex reports the thread's running total (19136 / 121); this turn is the difference.
    assert u2["thread_usage"]["input_tokens"] == 19136
    assert u2["usage"]["input_tokens"] == 19136 - 9518
    assert u2["usage"]["output_tokens"] == 121 - 60
    assert totals["01a22a0b-3b46-7d50-8dd3-780b7876c74c"]["input_tokens"] == 19136


def test_codex_reconnect_notice_is_not_an_error(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="lion_nb.models.codex"):
        chunks = chunks_of("codex/retry_stream")
    assert not [c for c in chunks if c.type == "error"]
    assert "Reconnecting... 1/1" in caplog.text


def test_codex_error_line_and_turn_failed_give_one_error() -> None:
    chunks = chunks_of("codex/error_401")
    errors = [c for c in chunks if c.type == "error"]
    assert len(errors) == 1 and errors[0].raw["type"] == "turn.failed"


def test_codex_benign_end_of_stream() -> None:
    mapper = CodexEventMapper()
    (chunk,) = mapper.map({"type": "error", "error": {}})
    assert chunk.type == "error" and chunk.benign_eos and chunk.error is None
    assert mapper.finish() == []


def test_codex_null_error_payload_is_a_real_empty_error() -> None:
    mapper = CodexEventMapper()
    assert mapper.map({"type": "error", "error": None}) == []
    (chunk,) = mapper.finish()
    assert not chunk.benign_eos and chunk.text == EMPTY_ERROR
    assert isinstance(chunk.error, ProviderError) and chunk.error.message == EMPTY_ERROR


def test_codex_turn_failed_without_message_is_empty_error() -> None:
    (chunk,) = CodexEventMapper().map({"type": "turn.failed", "error": {}})
    assert chunk.text == "(empty error)" and isinstance(chunk.error, ProviderError)


def test_codex_tool_items_without_a_start_line() -> None:
    mapper = CodexEventMapper()
    event = {
        "type": "item.completed",
        "item": {
            "id": "item_5",
            "type": "mcp_tool_call",
            "server": "docs",
            "tool": "search",
            "arguments": {"q": "x"},
            "status": "failed",
            "error": {"message": "boom"},
        },
    }
    use, result = mapper.map(event)
    assert (use.type, use.name, use.arguments) == ("tool_use", "docs.search", {"q": "x"})
    assert (result.type, result.is_error, result.output) == ("tool_result", True, "boom")


def test_codex_consecutive_messages_are_separated() -> None:
    mapper = CodexEventMapper()
    texts = [
        mapper.map(
            {"type": "item.completed", "item": {"id": f"i{n}", "type": "agent_message", "text": t}}
        )[0].text
        for n, t in enumerate(["One.", "Two."])
    ]
    assert "".join(texts) == "One.\n\nTwo."


# -- Gemini specifics -----------------------------------------------------------------------


def test_gemini_skips_the_user_echo() -> None:
    chunks = chunks_of("gemini/text")
    assert "Say hello" not in "".join(c.text for c in chunks)


def test_gemini_tool_error_keeps_its_type() -> None:
    result = next(c for c in chunks_of("gemini/tool_denied") if c.type == "tool_result")
    assert result.is_error and result.metadata["error"]["type"] == "tool_not_registered"


def test_gemini_result_error_without_message() -> None:
    mapper = GeminiEventMapper()
    result, error = mapper.map({"type": "result", "status": "error", "error": {}})
    assert result.metadata["is_error"] is True
    assert error.text == EMPTY_ERROR


def test_gemini_error_event_only_counts_without_a_good_result() -> None:
    mapper = GeminiEventMapper()
    assert mapper.map({"type": "error", "severity": "error", "message": "quota exceeded"}) == []
    (error,) = mapper.finish()
    assert isinstance(error.error, RateLimitError)
    mapper = GeminiEventMapper()
    mapper.map({"type": "error", "severity": "error", "message": "loop detected"})
    mapper.map({"type": "result", "status": "success", "stats": {}})
    assert mapper.finish() == []


# -- classification -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "kw", "cls", "status"),
    [
        ("anything", {"status": 429}, RateLimitError, 429),
        ("anything", {"status": 403}, AuthenticationError, 403),
        ("anything", {"status": 503}, ServerError, 503),
        ("anything", {"status": 408}, ProviderTimeout, 408),
        ("Bad request", {"status": 400}, ProviderError, 400),
        ("API Error: Overloaded", {"kind": "unknown"}, ServerError, None),
        ("whatever", {"kind": "rate_limit"}, RateLimitError, None),
        ("unexpected status 401 Unauthorized: nope", {}, AuthenticationError, 401),
        ("Request rejected (429) · slow down", {}, RateLimitError, 429),
        ('[API Error: {"error":{"code":503,"message":"x"}}]', {}, ServerError, 503),
        ("request timed out", {}, ProviderTimeout, None),
        ("something odd", {}, ProviderError, None),
    ],
)
def test_classify_error(message: str, kw: dict, cls: type, status: int | None) -> None:
    error = classify_error(message, provider="p", **kw)
    assert type(error) is cls and error.status == status and error.provider == "p"


def test_classify_empty_message() -> None:
    assert classify_error("  ", provider=None).message == "(empty error)"
    assert classify_error(None, provider=None).message == "(empty error)"
