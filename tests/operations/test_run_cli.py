"""Branch.run() through real CLI subprocesses: the fake CLI (tests/support/fake_agent.py)
replays each genuine recording in tests/fixtures/cli/ as a real process for the three providers.

Covers: every recording through run() (same messages as the sans-I/O path, errors classified),
live deltas, resume across runs, persistence of raw events, the stream deadline, and the
process group being gone as soon as the facade generator's ``aclose()`` returns (or the
consumer task is cancelled), including an agent that ignores SIGTERM.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from pathlib import Path

import pytest

from lion_nb import Branch, iModel
from lion_nb.errors import CLIError, ProviderError, ProviderTimeout
from lion_nb.messages import ActionResponse, AssistantResponse
from lion_nb.models.cli_process import group_alive
from lion_nb.models.jsonl import JSONLinesDecoder
from lion_nb.operations.assemble import StreamAssembler
from lion_nb.signals import MessageAdded, RunEnd, StreamDelta
from tests.support.fake_cli import FakeCLI, all_recordings, make_fake_cli, process_alive, recording

PROVIDER = {"claude": "claude_code", "codex": "codex", "gemini": "gemini_cli"}
# Exit codes of the recorded runs (fixtures README); every other run exited 0.
EXIT_CODES = {
    "claude/error_429": 1, "claude/error_429_partial": 1, "claude/error_500": 1,
    "claude/error_401": 1, "claude/error_midstream": 1,
    "codex/error_500": 1, "codex/error_429": 1, "codex/error_401": 1, "codex/error_failed": 1,
    "gemini/error_400": 144, "gemini/error_429": 173, "gemini/error_500": 244,
    "gemini/error_429_default_retries": 124,
}  # fmt: skip
# What the scripted vendor server answered (fixtures README): the final assistant text.
FINAL_TEXT = {
    "claude/text_partial": "Hello! How can I help you today?",
    "claude/thinking_partial": "Hello there, nice to meet you!",
    "claude/tool_read_partial": "The file hello.txt contains: hello from file",
    "claude/tool_two_partial": "Both the Read tool and cat show: hello from file",
    "claude/retry_529": "Hello after a retry!",
    "codex/text": "Hello! How can I help you today?",
    "codex/shell": "hello.txt contains: hello from file",
    "codex/retry_stream": "Hello after a reconnect!",
    "gemini/text": "Hello! How can I help you today?",
    "gemini/tool_shell": "cat printed: hello from file",
}
# The point where a stream is held open (fake CLI "hang" after N lines) for the stop tests:
# every listed recording has yielded an ActionResponse by then.
HANG_AFTER_TOOL = {
    "claude": ("claude/tool_read_partial", 17),
    "codex": ("codex/shell", 4),
    "gemini": ("gemini/tool_shell", 4),
}


@pytest.fixture
def fake_cli(tmp_path: Path) -> FakeCLI:
    return make_fake_cli(tmp_path)


def model_for(name: str, fake: FakeCLI, *, grace: float = 2.0, **env_kw) -> iModel:
    env = fake.env(
        recording(name), delay=env_kw.pop("delay", 0.0), exit_code=EXIT_CODES.get(name), **env_kw
    )
    return iModel(
        provider=PROVIDER[name.split("/")[0]],
        cli_path=str(fake.path),
        env=env,
        terminate_grace=grace,
    )


def shape(message) -> tuple:
    return (
        message.role,
        message.text,
        getattr(message, "call_id", None),
        getattr(message, "is_error", None),
        message.metadata.get("thinking"),
    )


def expected(name: str, model: iModel) -> tuple[list[tuple], type | None]:
    """The messages and error the sans-I/O path (decoder -> mapper -> assembler) gives."""
    decoder, mapper = JSONLinesDecoder(), model.provider.new_mapper()
    items = decoder.feed(recording(name).read_bytes()) + decoder.finish()
    chunks = [c for item in items if isinstance(item, dict) for c in mapper.map(item)]
    chunks += mapper.finish()
    asm, out = StreamAssembler(), []
    for chunk in chunks:
        out += asm.feed(chunk)
        if asm.ended:
            break
    error = type(asm.error) if asm.error is not None else None
    if asm.error is None:
        out += asm.finish()
        if EXIT_CODES.get(name):
            error = CLIError  # a failed exit the stream itself did not explain
    return [shape(m) for m in out], error


@pytest.mark.parametrize("name", all_recordings())
async def test_every_recording_through_run_on_a_real_process(name, fake_cli):
    model = model_for(name, fake_cli)
    want, want_error = expected(name, model)
    branch = Branch(chat_model=model)
    seen: list = []
    branch.observe(handler=seen.append)
    got, error = [], None
    try:
        async for message in branch.run("Do the task."):
            got.append(message)
    except ProviderError as exc:
        error = exc
    assert [shape(m) for m in got[1:]] == want
    assert type(error) is want_error if want_error else error is None
    assert list(branch.messages) == got  # everything yielded was recorded, nothing else
    terminal = [s for s in seen if type(s).__name__ in ("RunEnd", "RunFailed")]
    assert len(terminal) == 1 and (type(terminal[0]).__name__ == "RunFailed") == bool(error)
    assert model.provider_session_id  # every recording reports its session / thread id
    if name in FINAL_TEXT:
        assert got[-1].response == FINAL_TEXT[name] and not error
    for response in got:
        if isinstance(response, ActionResponse):
            request = next(m for m in got if m.id == response.action_request_id)
            assert request.call_id == response.call_id
    record = fake_cli.record()
    assert record["pgid"] == record["pid"] and not group_alive(record["pgid"])


async def test_claude_partial_messages_stream_deltas_before_the_response_is_recorded(fake_cli):
    branch = Branch(chat_model=model_for("claude/thinking_partial", fake_cli))
    seen: list = []
    branch.observe(StreamDelta, MessageAdded, handler=seen.append)
    out = [m async for m in branch.run("hi")]
    final = out[-1]
    deltas = [s for s in seen if isinstance(s, StreamDelta) and s.message_id == final.id]
    text_deltas = [d for d in deltas if d.kind == "text"]
    assert len(text_deltas) > 1 and text_deltas[-1].snapshot == final.response
    assert any(d.kind == "thinking" for d in deltas) and final.metadata["thinking"]
    recorded_at = next(
        i for i, s in enumerate(seen) if isinstance(s, MessageAdded) and s.message.id == final.id
    )
    assert seen.index(text_deltas[-1]) < recorded_at


@pytest.mark.parametrize("cli", ["claude", "codex", "gemini"])
async def test_second_run_resumes_the_agent_session(cli, fake_cli):
    model = model_for(f"{cli}/resume_step1", fake_cli)
    branch = Branch(chat_model=model)
    first = [m async for m in branch.run("Remember pineapple.")]
    session = model.provider_session_id
    assert session and session not in fake_cli.record()["argv"]  # the first run is new
    model.provider.env["FAKE_CLI_RECORDING"] = str(recording(f"{cli}/resume_step2"))
    second = [m async for m in branch.run("What did I ask?")]
    argv = fake_cli.record()["argv"]
    assert session in argv  # --resume <id> (claude, gemini) or `resume <id>` (codex)
    assert "pineapple" in first[-1].response and "pineapple" in second[-1].response


async def test_persisted_buffer_keeps_each_chunks_raw_provider_event(fake_cli, tmp_path):
    branch = Branch(
        chat_model=model_for("claude/tool_read_partial", fake_cli, delay=0.0, mode="hang", lines=17)
    )
    gen = branch.run("go", stream_persist=True, persist_dir=str(tmp_path / "runs"))
    async for message in gen:
        if isinstance(message, ActionResponse):
            break
    buffer = tmp_path / "runs" / f"{branch.id}.buffer.jsonl"
    entries = [json.loads(line) for line in buffer.read_text().splitlines()[1:]]
    assert entries and all(isinstance(e["chunk"]["raw"], dict) for e in entries)
    assert {e["chunk"]["raw"]["type"] for e in entries} >= {"system", "stream_event", "user"}
    await gen.aclose()
    assert not buffer.exists() and (tmp_path / "runs" / f"{branch.id}.json").is_file()


async def test_deadline_ends_a_hung_agent_and_kills_its_group(fake_cli):
    model = model_for("codex/shell", fake_cli, mode="hang", lines=2)
    branch = Branch(chat_model=model)
    started = time.monotonic()
    with pytest.raises(ProviderTimeout):
        [m async for m in branch.run("go", timeout=0.5)]
    assert time.monotonic() - started < 3.0
    assert not group_alive(fake_cli.record()["pgid"])


async def _hold_at_tool_response(cli: str, fake: FakeCLI, **kw):
    name, lines = HANG_AFTER_TOOL[cli]
    branch = Branch(
        chat_model=model_for(name, fake, mode=kw.pop("mode", "hang"), lines=lines, **kw)
    )
    seen: list = []
    branch.observe(RunEnd, handler=seen.append)
    gen = branch.run("go")
    async for message in gen:
        if isinstance(message, ActionResponse):
            break
    record = fake.record()
    assert group_alive(record["pgid"])  # the agent is still running (hung) at this point
    return branch, gen, record, seen


@pytest.mark.parametrize("cli", ["claude", "codex", "gemini"])
async def test_process_group_is_gone_when_the_facade_aclose_returns(cli, fake_cli):
    # a 5 s grace: finishing well inside it shows SIGTERM ended the group, not SIGKILL
    _, gen, record, seen = await _hold_at_tool_response(
        cli, fake_cli, mode="hang,spawn_child", grace=5.0
    )
    (grandchild,) = record["children"]
    started = time.monotonic()
    await gen.aclose()
    elapsed = time.monotonic() - started
    assert not group_alive(record["pgid"]) and not process_alive(grandchild)
    assert elapsed < 2.5, f"aclose took {elapsed:.3f}s"
    assert len(seen) == 1 and seen[0].stopped


async def test_an_agent_ignoring_sigterm_is_killed_within_its_grace(fake_cli):
    _, gen, record, _ = await _hold_at_tool_response(
        "claude", fake_cli, mode="hang,ignore_term", grace=0.3
    )
    started = time.monotonic()
    await gen.aclose()
    elapsed = time.monotonic() - started
    assert not group_alive(record["pgid"])
    assert 0.25 < elapsed < 3.0, f"aclose took {elapsed:.3f}s"


async def test_cancelling_the_consumer_keeps_partial_text_and_kills_the_agent(fake_cli):
    # hang in the middle of the final answer's text deltas
    model = model_for("claude/tool_read_partial", fake_cli, mode="hang", lines=22)
    branch = Branch(chat_model=model)
    got_text = asyncio.Event()
    branch.observe(StreamDelta, handler=lambda s: got_text.set() if s.length > 8 else None)

    async def consume():
        async for _ in branch.run("go"):
            pass

    task = asyncio.create_task(consume())
    await asyncio.wait_for(got_text.wait(), 10)
    await asyncio.sleep(0.05)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert not group_alive(fake_cli.record()["pgid"])
    last = branch.messages[-1]
    assert isinstance(last, AssistantResponse) and last.metadata["stopped"] is True
    assert "The file hello.txt contains: hello from file".startswith(last.response)
    assert len(last.response) > 8


async def test_abandoned_stream_is_cleaned_up_by_the_event_loop(fake_cli):
    _, gen, record, seen = await _hold_at_tool_response("gemini", fake_cli)
    del gen  # the consumer just walks away
    # the event loop finalises the generator soon; a busy machine may take seconds to get there
    deadline = time.monotonic() + 15
    for _ in range(1500):  # polls a process group, which has no event to wait on
        if not group_alive(record["pgid"]) or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.01)
    assert not group_alive(record["pgid"]) and len(seen) == 1 and seen[0].stopped
