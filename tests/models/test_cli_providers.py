"""The three CLI providers: argv building, and real subprocesses through the fake CLI.

The fake CLI (tests/support/fake_agent.py) replays a recording as a real process, so these
tests cover spawning, decoding from a pipe, exit codes, stderr, and process-group cleanup.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import statistics
import time
from pathlib import Path
from typing import Any

import pytest

from lion_nb.errors import (
    AuthenticationError,
    CLIError,
    CLINotFound,
    ConnectionLost,
    RateLimitError,
)
from lion_nb.models import iModel
from lion_nb.models.base import Chunk, CLIProvider, CLIRequest
from lion_nb.models.claude_code import ClaudeCodeProvider, ClaudeEventMapper
from lion_nb.models.cli_process import group_alive
from lion_nb.models.codex import CodexEventMapper, CodexProvider
from lion_nb.models.gemini_cli import GeminiCLIProvider, GeminiEventMapper
from lion_nb.models.jsonl import JSONLinesDecoder
from tests.support.fake_cli import FakeCLI, all_recordings, chunk_key, process_alive, recording

PROVIDERS = {"claude": ClaudeCodeProvider, "codex": CodexProvider, "gemini": GeminiCLIProvider}
MAPPERS = {"claude": ClaudeEventMapper, "codex": CodexEventMapper, "gemini": GeminiEventMapper}

# Exit codes of the recorded runs (fixtures README); every other run exited 0.
EXIT_CODES = {
    "claude/error_429": 1,
    "claude/error_429_partial": 1,
    "claude/error_500": 1,
    "claude/error_401": 1,
    "claude/error_midstream": 1,
    "codex/error_500": 1,
    "codex/error_429": 1,
    "codex/error_401": 1,
    "codex/error_failed": 1,
    "gemini/error_400": 144,
    "gemini/error_429": 173,
    "gemini/error_500": 244,
    "gemini/error_429_default_retries": 124,
}


async def collect(provider: Any, request: CLIRequest) -> list[Chunk]:
    return [chunk async for chunk in provider.stream(request)]


def mapped(name: str) -> list[Chunk]:
    mapper, decoder = MAPPERS[name.split("/")[0]](), JSONLinesDecoder()
    items = decoder.feed(recording(name).read_bytes()) + decoder.finish()
    return [c for item in items for c in mapper.map(item)] + mapper.finish()


# -- argv -----------------------------------------------------------------------------------


def test_claude_argv() -> None:
    provider = ClaudeCodeProvider()
    assert provider.build_argv(CLIRequest(prompt="hi")) == [
        "claude",
        "-p",
        "hi",
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-partial-messages",
    ]
    provider = ClaudeCodeProvider(
        "sonnet",
        cli_path="/opt/claude",
        extra_args=["--bare"],
        allowed_tools=["Read", "Bash(git log:*)"],
        permission_mode="acceptEdits",
        max_turns=3,
    )
    argv = provider.build_argv(CLIRequest(prompt="hi", system="Be brief.", resume="sid-1"))
    assert argv == [
        "/opt/claude",
        "-p",
        "hi",
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-partial-messages",
        "--resume",
        "sid-1",
        "--model",
        "sonnet",
        "--append-system-prompt",
        "Be brief.",
        "--max-turns",
        "3",
        "--allowedTools",
        "Read",
        "Bash(git log:*)",
        "--permission-mode",
        "acceptEdits",
        "--bare",
    ]


def test_claude_argv_options_per_request() -> None:
    provider = ClaudeCodeProvider(include_partial_messages=False, disallowed_tools="Bash,Write")
    argv = provider.build_argv(
        CLIRequest(prompt="hi", system="S", options={"system_prompt_mode": "replace"})
    )
    assert "--include-partial-messages" not in argv
    assert argv[-5:] == ["--system-prompt", "S", "--disallowedTools", "Bash", "Write"]
    argv = provider.build_argv(CLIRequest(prompt="hi", options={"include_partial_messages": True}))
    assert "--include-partial-messages" in argv


def test_claude_prompt_starting_with_dash_goes_to_stdin() -> None:
    provider, request = ClaudeCodeProvider(), CLIRequest(prompt="--help me")
    assert "--help me" not in provider.build_argv(request)
    assert provider.stdin_for(request) == b"--help me"
    assert provider.stdin_for(CLIRequest(prompt="hi")) is None


def test_codex_argv_and_stdin() -> None:
    provider = CodexProvider()
    request = CLIRequest(prompt="Say hello")
    assert provider.build_argv(request) == ["codex", "exec", "--json", "--skip-git-repo-check", "-"]
    assert provider.stdin_for(request) == b"Say hello"
    provider = CodexProvider(
        "gpt-5.5",
        sandbox="read-only",
        skip_git_repo_check=False,
        config={"model_reasoning_effort": "low", "x": 1},
        extra_args=["--ephemeral"],
    )
    argv = provider.build_argv(CLIRequest(prompt="p", system='Say "hi"\nok', resume="t-1"))
    assert argv == [
        "codex",
        "exec",
        "--json",
        "-m",
        "gpt-5.5",
        "-s",
        "read-only",
        "-c",
        'developer_instructions="Say \\"hi\\"\\nok"',
        "-c",
        "model_reasoning_effort=low",
        "-c",
        "x=1",
        "--ephemeral",
        "resume",
        "t-1",
        "-",
    ]


def test_gemini_argv() -> None:
    provider = GeminiCLIProvider()
    assert provider.build_argv(CLIRequest(prompt="hi")) == [
        "gemini",
        "-p",
        "hi",
        "--output-format",
        "stream-json",
    ]
    provider = GeminiCLIProvider("gemini-2.5-pro", approval_mode="yolo")
    argv = provider.build_argv(CLIRequest(prompt="hi", system="Sys", resume="latest"))
    assert argv == [
        "gemini",
        "-p",
        "Sys\n\nhi",
        "--output-format",
        "stream-json",
        "-m",
        "gemini-2.5-pro",
        "--approval-mode",
        "yolo",
        "--resume",
        "latest",
    ]
    assert provider.build_argv(CLIRequest(prompt="-x"))[1] == "--prompt=-x"
    assert provider.stdin_for(CLIRequest(prompt="hi")) is None


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("claude_code", ClaudeCodeProvider),
        ("codex", CodexProvider),
        ("gemini_cli", GeminiCLIProvider),
    ],
)
def test_registry_builds_the_provider(name: str, cls: type) -> None:
    model = iModel(
        provider=name,
        model="m",
        api_key="sk-secret-1",
        cli_path="/x/cli",
        cwd="/tmp",
        env={"A": "1"},
        extra_args=["--v"],
        timeout=30,
    )
    provider = model.provider
    assert type(provider) is cls and model.is_cli and isinstance(provider, CLIProvider)
    assert (provider.name, provider.model, provider.cli_path, provider.cwd) == (
        name,
        "m",
        "/x/cli",
        "/tmp",
    )
    assert provider.options == {"timeout": 30} and provider.session_id is None
    assert "sk-secret-1" not in repr(provider)


# -- end to end through a real process ------------------------------------------------------


@pytest.mark.parametrize("name", all_recordings())
async def test_every_recording_through_a_process(fake_cli: FakeCLI, name: str) -> None:
    cli = name.split("/")[0]
    stderr_file = recording(name).with_suffix(".stderr.txt")
    exit_code = EXIT_CODES.get(name, 0)
    env = fake_cli.env(
        recording(name),
        delay=0,
        exit_code=exit_code,
        stderr=stderr_file.read_text() if stderr_file.exists() else None,
    )
    provider = PROVIDERS[cli](cli_path=str(fake_cli.path), env=env)
    chunks = await collect(provider, CLIRequest(prompt="Say hello."))

    expected = [chunk_key(c) for c in mapped(name)]
    if exit_code and not any(c.type == "error" for c in mapped(name)):
        # Only the exit code tells: Gemini killed by `timeout` while retrying.
        assert isinstance(chunks[-1].error, CLIError) and chunks[-1].error.status == exit_code
        chunks = chunks[:-1]
    assert [chunk_key(c) for c in chunks] == expected
    assert provider.session_id == mapped(name)[0].session_id
    assert all(isinstance(c.metadata["duration_ms"], int) for c in chunks if c.type == "result")
    assert not group_alive(fake_cli.record()["pgid"])


async def test_argv_stdin_cwd_and_env_reach_the_process(
    fake_cli: FakeCLI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LION_TEST_REMOVED", "present")
    work = tmp_path / "work"
    work.mkdir()
    env = fake_cli.env(
        recording("codex/text"),
        env_keys=("LION_TEST_SET", "LION_TEST_REMOVED", "CODEX_API_KEY", "OPENAI_API_KEY", "PATH"),
    )
    provider = CodexProvider(
        "gpt-5.5",
        api_key="sk-test-123",
        cli_path=str(fake_cli.path),
        cwd=str(work),
        env={**env, "LION_TEST_SET": "yes", "LION_TEST_REMOVED": None},
    )
    request = CLIRequest(prompt="Remember -- the word pineapple.\n", resume="t-9")
    await collect(provider, request)
    record = fake_cli.record()
    assert record["argv"] == provider.build_argv(request)[1:]
    assert record["stdin"] == "Remember -- the word pineapple.\n"
    assert record["cwd"] == str(work)
    assert record["env"] == {
        "LION_TEST_SET": "yes",
        "LION_TEST_REMOVED": None,
        "CODEX_API_KEY": "sk-test-123",
        "OPENAI_API_KEY": "sk-test-123",
        "PATH": os.environ["PATH"],
    }


async def test_claude_gets_dev_null_stdin(fake_cli: FakeCLI) -> None:
    provider = ClaudeCodeProvider(
        cli_path=str(fake_cli.path), env=fake_cli.env(recording("claude/text"))
    )
    await collect(provider, CLIRequest(prompt="hi"))
    assert fake_cli.record()["stdin"] == ""


async def test_secrets_are_redacted_from_errors(fake_cli: FakeCLI) -> None:
    # The recorded 401 message quotes the key ("Incorrect API key provided: sk-local").
    env = fake_cli.env(recording("codex/error_401"), exit_code=1, stderr="key=sk-local\n")
    provider = CodexProvider(api_key="sk-local", cli_path=str(fake_cli.path), env=env)
    chunks = await collect(provider, CLIRequest(prompt="hi"))
    error = chunks[-1]
    assert isinstance(error.error, AuthenticationError)
    assert "sk-local" not in error.text and "[REDACTED]" in error.text
    assert "sk-local" not in str(error.error) and error.error.args == (error.error.message,)


@pytest.mark.parametrize(
    ("cls", "package"),
    [
        (ClaudeCodeProvider, "@anthropic-ai/claude-code"),
        (CodexProvider, "@openai/codex"),
        (GeminiCLIProvider, "@google/gemini-cli"),
    ],
)
async def test_missing_executable_names_the_npm_package(
    tmp_path: Path, cls: type, package: str
) -> None:
    provider = cls(env={"PATH": str(tmp_path)})  # nothing on this PATH
    with pytest.raises(CLINotFound, match=f"npm install -g {package}") as info:
        await collect(provider, CLIRequest(prompt="hi"))
    assert "not found on PATH" in str(info.value) and info.value.provider == provider.name
    provider = cls(cli_path=str(tmp_path / "nope" / cls.executable))
    with pytest.raises(CLINotFound, match="does not exist"):
        await collect(provider, CLIRequest(prompt="hi"))


async def test_missing_working_directory(fake_cli: FakeCLI, tmp_path: Path) -> None:
    provider = GeminiCLIProvider(cli_path=str(fake_cli.path), cwd=str(tmp_path / "missing"))
    with pytest.raises(CLIError, match="working directory"):
        await collect(provider, CLIRequest(prompt="hi"))


async def test_nonzero_exit_is_a_cli_error_with_stderr_tail(fake_cli: FakeCLI) -> None:
    noise = "".join(f"log line {i}\n" for i in range(2000))  # far more than the tail keeps
    env = fake_cli.env(
        recording("gemini/text"), exit_code=3, stderr=noise + "Fatal: config is broken\n"
    )
    provider = GeminiCLIProvider(cli_path=str(fake_cli.path), env=env)
    chunks = await collect(provider, CLIRequest(prompt="hi"))
    assert "".join(c.text for c in chunks if c.type == "text") == "Hello! How can I help you today?"
    error = chunks[-1].error
    assert type(error) is CLIError and error.status == 3
    assert chunks[-1].raw == {"type": "process_exit", "exit_code": 3}
    assert str(error).startswith("[gemini_cli] gemini_cli exited with code 3: Fatal: config")
    assert error.stderr.endswith("Fatal: config is broken\n") and len(error.stderr) <= 8192


@pytest.mark.parametrize(
    ("exit_code", "cls", "status"), [(173, RateLimitError, 429), (41, AuthenticationError, 41)]
)
async def test_gemini_exit_codes_are_classified(
    fake_cli: FakeCLI, exit_code: int, cls: type, status: int
) -> None:
    env = fake_cli.env(
        recording("gemini/error_429_default_retries"),
        exit_code=exit_code,
        stderr="Attempt 1 failed: Resource has been exhausted\n    at x (y.js)\n",
    )
    provider = GeminiCLIProvider(cli_path=str(fake_cli.path), env=env)
    chunks = await collect(provider, CLIRequest(prompt="hi"))
    assert type(chunks[-1].error) is cls and chunks[-1].error.status == status
    assert "Resource has been exhausted" in chunks[-1].text


async def test_process_dying_mid_line(fake_cli: FakeCLI) -> None:
    # Lines 0-4 of text_partial end with the first text delta; line 5 is cut in half.
    env = fake_cli.env(
        recording("claude/text_partial"), mode="die_mid_line", lines=5, stderr="unused"
    )
    provider = ClaudeCodeProvider(cli_path=str(fake_cli.path), env=env)
    chunks = await collect(provider, CLIRequest(prompt="hi"))
    assert [c.type for c in chunks] == ["system", "text", "error"]
    assert chunks[1].text == "Hello! How can "
    error = chunks[-1].error
    assert type(error) is ConnectionLost and error.status == 1 and error.retryable
    assert "ended in the middle of a line (exit code 1)" in error.message
    assert chunks[-1].raw["reason"] == "truncated"


async def test_malformed_line_is_skipped_and_counted(
    fake_cli: FakeCLI, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    lines = recording("claude/text").read_bytes().splitlines(keepends=True)
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(lines[0] + b"oops {not json\n" + b"".join(lines[1:]))
    provider = ClaudeCodeProvider(cli_path=str(fake_cli.path), env=fake_cli.env(broken))
    with caplog.at_level(logging.WARNING, logger="lion_nb.models.cli_stream"):
        chunks = await collect(provider, CLIRequest(prompt="hi"))
    assert "".join(c.text for c in chunks if c.type == "text") == "Hello! How can I help you today?"
    assert not [c for c in chunks if c.type == "error"]
    assert chunks[-1].metadata["malformed_lines"] == 1
    assert "skipped malformed output line 2 (invalid_json)" in caplog.text


# -- cleanup: the process group is gone when aclose() returns -------------------------------


async def _first_chunk_then_close(
    fake_cli: FakeCLI, mode: str, grace: float = 2.0
) -> tuple[dict, float]:
    env = fake_cli.env(recording("claude/text_partial"), delay=0.05, mode=mode, lines=5)
    provider = ClaudeCodeProvider(cli_path=str(fake_cli.path), env=env, terminate_grace=grace)
    stream = provider.stream(CLIRequest(prompt="hi"))
    first = await anext(stream)
    assert first.type == "system"
    record = fake_cli.record()
    assert record["pid"] == record["pgid"] and group_alive(record["pgid"])
    started = time.perf_counter()
    await stream.aclose()
    return record, time.perf_counter() - started


async def test_aclose_after_first_chunk_ends_the_process_group(fake_cli: FakeCLI) -> None:
    record, elapsed = await _first_chunk_then_close(fake_cli, mode="")
    with pytest.raises(ProcessLookupError):
        os.killpg(record["pgid"], 0)
    assert elapsed < 1.0


async def test_aclose_kills_a_fake_that_ignores_sigterm(fake_cli: FakeCLI) -> None:
    record, elapsed = await _first_chunk_then_close(fake_cli, mode="ignore_term,hang", grace=0.3)
    with pytest.raises(ProcessLookupError):
        os.killpg(record["pgid"], 0)
    assert 0.3 <= elapsed < 0.3 + 1.0  # TERM ignored for the grace period, then KILL


async def test_aclose_ends_grandchildren_too(fake_cli: FakeCLI) -> None:
    record, elapsed = await _first_chunk_then_close(fake_cli, mode="spawn_child,hang")
    (grandchild,) = record["children"]
    # A dead grandchild is re-parented to PID 1; in this container PID 1 never reaps, so its
    # zombie may linger (and keep killpg(pgid, 0) succeeding). What matters: nothing runs.
    assert not process_alive(grandchild)
    assert not group_alive(record["pgid"])
    assert elapsed < 1.0


async def test_grandchild_holding_stdout_does_not_hang_the_stream(fake_cli: FakeCLI) -> None:
    env = fake_cli.env(recording("codex/shell"), mode="spawn_child")
    provider = CodexProvider(cli_path=str(fake_cli.path), env=env)
    started = time.perf_counter()
    chunks = await collect(provider, CLIRequest(prompt="hi"))
    assert time.perf_counter() - started < 3.0
    assert [chunk_key(c) for c in chunks] == [chunk_key(c) for c in mapped("codex/shell")]
    (grandchild,) = fake_cli.record()["children"]
    assert not process_alive(grandchild)


async def test_cancellation_cleans_up(fake_cli: FakeCLI) -> None:
    env = fake_cli.env(recording("gemini/text"), mode="hang", lines=2)
    provider = GeminiCLIProvider(cli_path=str(fake_cli.path), env=env)
    stream = provider.stream(CLIRequest(prompt="hi"))
    assert (await anext(stream)).type == "system"
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(anext(stream), timeout=0.3)  # hangs after two lines
    with pytest.raises(ProcessLookupError):
        os.killpg(fake_cli.record()["pgid"], 0)
    with pytest.raises(StopAsyncIteration):  # the generator is finished
        await anext(stream)


async def test_break_out_of_async_for(fake_cli: FakeCLI) -> None:
    env = fake_cli.env(recording("codex/reasoning_shell"), delay=0.05)
    provider = CodexProvider(cli_path=str(fake_cli.path), env=env)
    async with contextlib.aclosing(provider.stream(CLIRequest(prompt="hi"))) as stream:
        async for chunk in stream:
            if chunk.type == "thinking":
                break
    with pytest.raises(ProcessLookupError):
        os.killpg(fake_cli.record()["pgid"], 0)


async def test_aclose_before_the_first_item_starts_nothing(fake_cli: FakeCLI) -> None:
    provider = ClaudeCodeProvider(
        cli_path=str(fake_cli.path), env=fake_cli.env(recording("claude/text"))
    )
    stream = provider.stream(CLIRequest(prompt="hi"))
    await stream.aclose()
    assert not fake_cli.record_path.exists()


async def test_measure_aclose_to_group_exit(fake_cli: FakeCLI) -> None:
    """Prints the time from aclose() to process-group exit (run with -s to see it)."""
    polite, stubborn = [], []
    for _ in range(8):
        polite.append((await _first_chunk_then_close(fake_cli, mode="hang"))[1])
    for _ in range(3):
        stubborn.append(
            (await _first_chunk_then_close(fake_cli, mode="ignore_term,hang", grace=0.2))[1]
        )
    print(
        f"\naclose -> group exit, SIGTERM honoured: median {statistics.median(polite) * 1000:.1f}"
        f" ms, max {max(polite) * 1000:.1f} ms (n={len(polite)}); SIGTERM ignored, grace "
        f"0.2 s: median {statistics.median(stubborn) * 1000:.1f} ms"
    )
    assert statistics.median(polite) < 0.5
    assert all(0.2 <= t < 1.2 for t in stubborn)
