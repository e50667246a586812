"""Malformed streams end to end — through ``Branch.run`` on a real CLI process and through
``Branch.communicate`` over real HTTP.

Property-based (hypothesis, bounded example counts): recorded agent streams and generated SSE
replies, split at random bytes, cut anywhere, with garbage lines, invalid UTF-8, unknown event
types, long lines, error events, and agents exiting non-zero with stderr. Whatever happens, the
verb ends — never a hang — either normally or with a classified ``lion_nb.errors`` error, and
the text received before the fault is kept: recorded in ``branch.messages`` for ``run()``, on
``exc.partial_text`` for the API, and exactly what the ``StreamDelta`` signals showed.

The expected text is computed independently of the I/O under test: for the CLI, by feeding
the same bytes to the sans-I/O decoder and the provider's event mapper and applying the
documented failure policy of ``CLIProviderBase.stream``; for the API, from the events the
generator built and the byte offset where each one is complete.

Provider-level unit tests (``tests/models``) already cover each decoder and fault in
isolation; these tests check the whole path: pipes and sockets, the assembler, recording,
signals, lifecycle and cleanup.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import event as note_case
from hypothesis import strategies as st

from lion_nb import Branch, iModel
from lion_nb.errors import (
    CLIError,
    ConnectionLost,
    MalformedResponse,
    ProviderError,
    ProviderTimeout,
    RateLimitError,
)
from lion_nb.messages import AssistantResponse
from lion_nb.models.cli_stream import CLIProviderBase
from lion_nb.models.jsonl import JSONLinesDecoder, MalformedLine
from lion_nb.signals import RunEnd, RunFailed, RunStart, StreamDelta
from tests.servers.chat_server import ChatServer, RawReply, Reply
from tests.support.fake_cli import process_alive, recording

BYTE_AGENT = Path(__file__).resolve().parents[1] / "support" / "byte_agent.py"
HYPOTHESIS = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
}

# -- a CLI agent that writes exact bytes ------------------------------------------------------


@dataclass
class ByteAgent:
    path: Path  # an executable wrapper, passed as cli_path
    plan_path: Path
    pid_path: Path

    def env(
        self,
        pieces: list[bytes],
        *,
        delay: float = 0.0,
        stall_after: int | None = None,
        stderr: str = "",
        exit_code: int = 0,
    ) -> dict[str, str]:
        plan = {
            "pieces": [p.decode("latin-1") for p in pieces],
            "delay": delay,
            "stall_after": stall_after,
            "stderr": stderr,
            "exit": exit_code,
            "pid_file": str(self.pid_path),
        }
        self.pid_path.unlink(missing_ok=True)
        self.plan_path.write_text(json.dumps(plan), encoding="utf-8")
        return {"BYTE_AGENT_PLAN": str(self.plan_path)}

    def pid(self) -> int:
        return int(self.pid_path.read_text())


@pytest.fixture
def byte_agent(tmp_path: Path) -> ByteAgent:
    wrapper = tmp_path / "byte-agent"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{BYTE_AGENT}" "$@"\n')
    wrapper.chmod(0o755)
    return ByteAgent(wrapper, tmp_path / "plan.json", tmp_path / "agent.pid")


@pytest.fixture
def runner() -> Iterator[asyncio.Runner]:
    """One event loop for all the examples of a hypothesis test."""
    with asyncio.Runner() as loop:
        yield loop


@dataclass
class Outcome:
    branch: Branch
    error: BaseException | None
    signals: list[Any]

    @property
    def recorded_text(self) -> str:
        return "".join(m.response for m in self.branch.messages if isinstance(m, AssistantResponse))

    @property
    def shown_text(self) -> str:
        """What a view showed: the text deltas, in order."""
        return "".join(
            s.delta for s in self.signals if isinstance(s, StreamDelta) and s.kind == "text"
        )

    def lifecycle(self) -> list[str]:
        return [
            type(s).__name__ for s in self.signals if isinstance(s, RunStart | RunEnd | RunFailed)
        ]


async def consume(branch: Branch, verb: Callable[[Branch], Any], limit: float = 20.0) -> Outcome:
    """Run ``verb`` to its end under a hard limit; a hang fails the test, it never blocks it."""
    signals: list[Any] = []
    branch.observe(handler=signals.append)
    error: BaseException | None = None
    try:
        async with asyncio.timeout(limit):
            await verb(branch)
    except TimeoutError:
        pytest.fail(f"the verb did not end within {limit} s")
    except Exception as exc:  # what kind of exception is exactly what the tests check
        error = exc
    return Outcome(branch, error, signals)


async def run_to_end(branch: Branch, **kw: Any) -> None:
    async for _ in branch.run("go", **kw):
        pass


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    bounds = sorted({0, len(data), *(min(c, len(data)) for c in cuts)})
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


# -- the CLI oracle -----------------------------------------------------------------------------


def cli_expectation(
    provider: CLIProviderBase, data: bytes, exit_code: int
) -> tuple[str, type[BaseException] | None, bool]:
    """(text kept, error class or None, whether a malformed line was skipped) for an agent
    that wrote ``data`` and exited with ``exit_code``, per ``CLIProviderBase.stream``'s
    documented policy: malformed lines are skipped; the first error chunk ends the stream
    (a benign one normally); a last line cut mid-way is ConnectionLost; otherwise a non-zero
    exit is the provider's ``exit_error``."""
    decoder = JSONLinesDecoder(source=provider.name)
    mapper = provider.new_mapper()
    text: list[str] = []
    skipped = False

    def apply(chunks: list[Any]) -> tuple[bool, type[BaseException] | None]:
        for chunk in chunks:
            if chunk.type == "text":
                text.append(chunk.text)
            elif chunk.type == "error":
                if chunk.benign_eos:
                    return True, None
                return True, type(chunk.error) if chunk.error is not None else ProviderError
        return False, None

    for item in decoder.feed(data):
        if isinstance(item, MalformedLine):
            skipped = True
            continue
        ended, error = apply(mapper.map(item))
        if ended:
            return "".join(text), error, skipped
    for item in decoder.finish():
        if isinstance(item, MalformedLine):
            if item.reason == "truncated":
                return "".join(text), ConnectionLost, skipped
            skipped = True
            continue
        ended, error = apply(mapper.map(item))
        if ended:
            return "".join(text), error, skipped
    ended, error = apply(mapper.finish())
    if ended:
        return "".join(text), error, skipped
    if exit_code != 0:
        return "".join(text), type(provider.exit_error(exit_code, "")), skipped
    return "".join(text), None, skipped


RECORDINGS = {  # the first of each is used by the stall test
    "claude_code": (
        "claude/text_partial",
        "claude/tool_read_partial",
        "claude/thinking_partial",
        "claude/error_429_partial",
    ),
    "codex": ("codex/text", "codex/reasoning_shell", "codex/shell", "codex/error_500"),
    "gemini_cli": ("gemini/text", "gemini/tool_read", "gemini/tool_error", "gemini/error_429"),
}
EXTRA_LINES = {
    "garbage": b"{this is not json\n",
    "not_object": b'["a", "list"]\n',
    "unknown": b'{"type": "x_future_event", "payload": {"text": "not for the transcript"}}\n',
    "invalid_utf8": b'{"type": "x_future_event", "note": "\xff\xfe caf\xc3"}\n',
    "blank": b"\r\n",
    "long": b'{"type": "x_future_event", "pad": "' + b"a" * 300_000 + b'"}\n',
}


@st.composite
def agent_streams(draw: st.DrawFn, provider: str) -> tuple[bytes, list[int], int, str]:
    """A recorded stream with random damage: inserted lines, a corrupted byte, a cut; the
    byte offsets where writes are split; the exit code; stderr."""
    name = draw(st.sampled_from(RECORDINGS[provider]))
    lines = recording(name).read_bytes().splitlines(keepends=True)
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from([*EXTRA_LINES, "corrupt"]))
        at = draw(st.integers(0, len(lines)))
        if kind == "corrupt":  # one byte of a recorded line becomes invalid UTF-8
            index = min(at, len(lines) - 1)
            line = lines[index]
            pos = draw(st.integers(0, max(0, len(line) - 2)))
            lines[index] = line[:pos] + b"\xff" + line[pos + 1 :]
        else:
            lines.insert(at, EXTRA_LINES[kind])
    data = b"".join(lines)
    end = draw(st.one_of(st.just(len(data)), st.integers(0, len(data))))
    cuts = draw(st.lists(st.integers(0, end), max_size=4))
    exit_code = draw(st.sampled_from([0, 0, 1, 2]))
    stderr = draw(st.sampled_from(["", "fatal: the agent crashed\n"]))
    return data[:end], cuts, exit_code, stderr


def _cli_property(provider: str) -> Callable[..., None]:
    @settings(max_examples=20, **HYPOTHESIS)
    @given(stream=agent_streams(provider))
    def check(byte_agent: ByteAgent, runner: asyncio.Runner, caplog, stream) -> None:
        data, cuts, exit_code, stderr = stream
        caplog.clear()
        env = byte_agent.env(split(data, cuts), delay=0.001, exit_code=exit_code, stderr=stderr)
        model = iModel(provider=provider, cli_path=str(byte_agent.path), env=env)
        outcome = runner.run(consume(Branch(chat_model=model), run_to_end))

        text, error_cls, skipped = cli_expectation(model.provider, data, exit_code)
        note_case(f"expected {getattr(error_cls, '__name__', 'success')}")
        assert outcome.recorded_text == text  # every delta received before the fault is kept
        assert outcome.shown_text == text
        if error_cls is None:
            assert outcome.error is None, repr(outcome.error)
            assert outcome.lifecycle() == ["RunStart", "RunEnd"]
        else:
            assert isinstance(outcome.error, error_cls), (error_cls, repr(outcome.error))
            assert isinstance(outcome.error, ProviderError)  # classified, never a stray error
            assert outcome.lifecycle() == ["RunStart", "RunFailed"]
            if isinstance(outcome.error, CLIError) and stderr:
                assert "the agent crashed" in str(outcome.error)  # the stderr tail says why
        if skipped:
            assert "skipped malformed output line" in caplog.text
        assert not process_alive(byte_agent.pid())  # the agent was reaped on every path

    return check


test_claude_code_damaged_streams_through_run = _cli_property("claude_code")
test_codex_damaged_streams_through_run = _cli_property("codex")
test_gemini_cli_damaged_streams_through_run = _cli_property("gemini_cli")


@pytest.mark.parametrize("provider", sorted(RECORDINGS))
async def test_an_agent_stalling_mid_stream_hits_the_deadline_and_keeps_its_text(
    provider: str, byte_agent: ByteAgent
) -> None:
    lines = recording(RECORDINGS[provider][0]).read_bytes().splitlines(keepends=True)
    stall = len(lines) // 2
    env = byte_agent.env(lines, stall_after=stall)
    model = iModel(provider=provider, cli_path=str(byte_agent.path), env=env)
    outcome = await consume(Branch(chat_model=model), lambda b: run_to_end(b, timeout=0.8))
    assert isinstance(outcome.error, ProviderTimeout), repr(outcome.error)
    text, _, _ = cli_expectation(model.provider, b"".join(lines[:stall]), 0)
    assert outcome.recorded_text == text == outcome.shown_text
    assert outcome.lifecycle() == ["RunStart", "RunFailed"]
    assert not process_alive(byte_agent.pid())


async def test_a_line_over_the_decoder_limit_is_skipped_and_the_text_around_it_kept(
    byte_agent: ByteAgent, caplog
) -> None:
    from lion_nb.models.jsonl import MAX_LINE_BYTES

    lines = recording("claude/text_partial").read_bytes().splitlines(keepends=True)
    huge = b'{"type": "x_future_event", "pad": "' + b"z" * (MAX_LINE_BYTES + 1024) + b'"}\n'
    middle = len(lines) // 2
    data = [*lines[:middle], huge, *lines[middle:]]
    model = iModel(provider="claude_code", cli_path=str(byte_agent.path), env=byte_agent.env(data))
    outcome = await consume(Branch(chat_model=model), run_to_end)
    assert outcome.error is None, repr(outcome.error)
    text, _, _ = cli_expectation(model.provider, b"".join(lines), 0)
    assert text and outcome.recorded_text == text
    assert "too_long" in caplog.text


# -- the API path ------------------------------------------------------------------------------


@dataclass
class Event:
    raw: bytes
    text: str = ""  # content it adds
    kind: str = "filler"  # content | finish | usage | done | error | bad_json | filler


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-x",
        "object": "chat.completion.chunk",
        "model": "test-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


FILLERS = [
    b": keep-alive\n\n",
    b'event: ping\ndata: {"type": "ping"}\n\n',
    b"id: 7\nretry: 250\n\n",
    b"data:\n\n",
    b"event: x-future\ndata: not json at all\n\n",
]


@st.composite
def sse_replies(draw: st.DrawFn) -> tuple[list[Event], bool]:
    """Events of a streamed reply (content, fillers the client must skip, maybe one fault)
    and whether lines end in CRLF."""
    crlf = draw(st.booleans())
    alphabet = st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="\x00")
    events: list[Event] = []
    deltas = draw(st.lists(st.text(alphabet, min_size=1, max_size=6), min_size=1, max_size=6))
    for i, delta in enumerate(deltas):
        for _ in range(draw(st.integers(0, 1))):
            events.append(Event(draw(st.sampled_from(FILLERS))))
        payload = {"role": "assistant", "content": delta} if i == 0 else {"content": delta}
        if draw(st.integers(0, 5)) == 0:  # invalid UTF-8 in the middle of this delta
            raw = b"data: " + json.dumps(_chunk({**payload, "content": delta + "\x00"})).encode()
            raw = raw.replace(b"\\u0000", b"\xff") + b"\n\n"
            events.append(Event(raw, delta + "\ufffd", "content"))
        else:
            events.append(
                Event(b"data: " + json.dumps(_chunk(payload)).encode() + b"\n\n", delta, "content")
            )
    fault = draw(st.sampled_from(["none", "none", "error", "bad_json"]))
    if fault != "none":
        at = draw(st.integers(0, len(events)))
        raw = (
            b'data: {"error": {"message": "slow down", "code": "rate_limit_exceeded"}}\n\n'
            if fault == "error"
            else b'data: {"choices": [ {oops\n\n'
        )
        events.insert(at, Event(raw, kind=fault))
    events.append(
        Event(b"data: " + json.dumps(_chunk({}, "stop")).encode() + b"\n\n", kind="finish")
    )
    usage = {"prompt_tokens": 3, "completion_tokens": len(deltas), "total_tokens": 3 + len(deltas)}
    usage_chunk = {
        "id": "chatcmpl-x",
        "object": "chat.completion.chunk",
        "choices": [],
        "usage": usage,
    }
    events.append(Event(b"data: " + json.dumps(usage_chunk).encode() + b"\n\n", kind="usage"))
    events.append(Event(b"data: [DONE]\n\n", kind="done"))
    if crlf:
        for event in events:
            event.raw = event.raw.replace(b"\n", b"\r\n")
    return events, crlf


def api_expectation(events: list[Event], end: int, crlf: bool) -> tuple[str, str | None, bool]:
    """(text of the events complete within ``end`` bytes, up to the first fault; the fault
    kind met first, if any; whether the finish event was complete). An event is complete once
    its blank line arrived (with CRLF, its final "\\n" is not needed: a lone CR ends a line)."""
    text, offset = [], 0
    for event in events:
        offset += len(event.raw)
        if offset - (1 if crlf else 0) > end:
            return "".join(text), None, False
        if event.kind in ("error", "bad_json"):
            return "".join(text), event.kind, False
        if event.kind == "finish":
            return "".join(text), None, True
        text.append(event.text)
    return "".join(text), None, False


@pytest.fixture
def api_branch_factory(chat_server: ChatServer) -> Iterator[Callable[[], Branch]]:
    model = iModel(
        provider="openai", model="test-model", base_url=chat_server.base_url, max_retries=0
    )
    yield lambda: Branch(chat_model=model)


@settings(max_examples=60, **HYPOTHESIS)
@given(reply=sse_replies(), data=st.data())
def test_damaged_sse_replies_through_communicate(
    chat_server: ChatServer, api_branch_factory, runner: asyncio.Runner, reply, data
) -> None:
    events, crlf = reply
    body = b"".join(e.raw for e in events)
    end = data.draw(st.one_of(st.just(len(body)), st.integers(0, len(body))), label="end")
    cuts = data.draw(st.lists(st.integers(0, end), max_size=5), label="cuts")
    chat_server.script(
        RawReply(split(body[:end], cuts), content_type="text/event-stream", drop=True)
    )
    requests = len(chat_server.requests)
    branch = api_branch_factory()
    outcome = runner.run(consume(branch, lambda b: b.communicate("hello")))

    text, fault, finished = api_expectation(events, end, crlf)
    note_case(f"got {type(outcome.error).__name__ if outcome.error else 'success'}")
    assert len(chat_server.requests) == requests + 1  # text may have been shown: no retry
    if outcome.error is None:
        # Success only for a reply whose finish event arrived whole, with all of its text.
        assert finished and fault is None
        assert [m.role for m in branch.messages] == ["user", "assistant"]
        assert outcome.recorded_text == text == outcome.shown_text
        assert outcome.lifecycle() == ["RunStart", "RunEnd"]
        return
    error = outcome.error
    assert isinstance(error, ProviderError), repr(error)
    if fault == "error":
        assert isinstance(error, RateLimitError), repr(error)
    elif fault == "bad_json":
        assert isinstance(error, MalformedResponse), repr(error)
    else:  # cut: after the finish event only a cut inside a later event may fail the call
        assert isinstance(error, ConnectionLost), repr(error)
    assert error.partial_text == text == outcome.shown_text  # type: ignore[attr-defined]
    assert list(branch.messages) == []  # a failed communicate records nothing
    assert outcome.lifecycle() == ["RunStart", "RunFailed"]


async def test_a_server_stalling_mid_reply_hits_the_timeout_and_keeps_the_text(
    chat_server: ChatServer,
) -> None:
    chat_server.script(Reply("abcdefghij", chunk_size=2, stall_after=3))
    model = iModel(
        provider="openai", model="test-model", base_url=chat_server.base_url, max_retries=3
    )
    outcome = await consume(Branch(chat_model=model), lambda b: b.communicate("x", timeout=0.5))
    assert isinstance(outcome.error, ProviderTimeout), repr(outcome.error)
    assert outcome.error.partial_text == "abcdef" == outcome.shown_text  # type: ignore[attr-defined]
    assert len(chat_server.requests) == 1  # text was shown: never retried
    assert outcome.lifecycle() == ["RunStart", "RunFailed"]


async def test_an_sse_line_over_the_limit_is_a_malformed_response_keeping_the_text(
    chat_server: ChatServer,
) -> None:
    first = b"data: " + json.dumps(_chunk({"role": "assistant", "content": "kept"})).encode()
    huge = b"data: " + b"x" * (16 * 1024 * 1024 + 16)  # no line end: memory must stay bounded
    chat_server.script(
        RawReply([first + b"\n\n", huge], content_type="text/event-stream", drop=True)
    )
    model = iModel(provider="openai", model="test-model", base_url=chat_server.base_url)
    outcome = await consume(Branch(chat_model=model), lambda b: b.communicate("x"))
    assert isinstance(outcome.error, MalformedResponse), repr(outcome.error)
    assert outcome.error.partial_text == "kept" == outcome.shown_text  # type: ignore[attr-defined]
