"""stream_persist files and recover_branch (ADR D3), including a real kill -9."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

import lion_nb
from lion_nb import Branch, iModel
from lion_nb.errors import RateLimitError, ServerError
from lion_nb.messages import ActionResponse, AssistantResponse
from lion_nb.models.base import Chunk
from lion_nb.port.lifecycle import suppress_lifecycle
from lion_nb.port.stream_persist import chunk_from_dict, chunk_to_dict, read_buffer
from lion_nb.session.recover import recover_branch
from tests.support.chunk_provider import (
    chunk_model,
    result,
    system,
    text,
    tool_result,
    tool_use,
    use_chunk_provider,
)

HELPERS = Path(__file__).parent / "support"


@pytest.fixture(autouse=True)
def _chunk_provider(monkeypatch):
    use_chunk_provider(monkeypatch)


def cli(*replies, **kw) -> iModel:
    return iModel(provider="scripted", cli=True, replies=list(replies), **kw)


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def snapshot_roles(path: Path) -> list[str]:
    return [m["role"] for m in json.loads(path.read_text())["messages"]]


TOOL_SCRIPT = [
    system("sess-9"),
    text("Let me read."),
    tool_use("t1", "Read", file_path="a"),
    text("Half of "),
    text("the answer"),
    tool_result("t1", "file body"),
    text(" and the rest."),
    result(usage={"input_tokens": 5, "output_tokens": 2}),
]


async def test_files_are_named_written_and_removed_as_the_run_goes(tmp_path):
    branch = Branch(system="sys", chat_model=chunk_model(TOOL_SCRIPT))
    snap = tmp_path / f"{branch.id}.json"
    buf = tmp_path / f"{branch.id}.buffer.jsonl"
    gen = branch.run("go", stream_persist=True, persist_dir=str(tmp_path))
    await anext(gen)  # the instruction: the stream has not started
    assert not snap.exists() and not buf.exists()
    first = await anext(gen)  # "Let me read." (flushed by the tool call)
    assert isinstance(first, AssistantResponse)
    assert snapshot_roles(snap) == ["system", "user"]  # written before the stream started
    body = lines(buf)
    assert body[0]["format"] == "lion_nb.run-buffer/1" and body[0]["branch_id"] == str(branch.id)
    assert body[0]["instruction_id"] == str(branch.messages[1].id)
    assert [entry["chunk"]["type"] for entry in body[1:]] == ["system", "text", "tool_use"]
    assert body[3]["chunk"]["arguments"] == {"file_path": "a"} and body[3]["seq"] == 3
    rest = [m async for m in gen]
    assert [m.role for m in rest] == ["action_request", "action_response", "assistant"]
    assert not buf.exists()  # removed once the final snapshot was written
    final = json.loads(snap.read_text())
    assert final["id"] == str(branch.id) and len(final["messages"]) == len(branch.messages)
    assert stat.S_IMODE(snap.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == [snap.name]  # no temp files left


async def test_snapshot_dir_falls_back_to_persist_dir_and_may_differ(tmp_path):
    snaps, bufs = tmp_path / "snaps", tmp_path / "bufs"
    branch = Branch(chat_model=cli("a b c"))
    gen = branch.run("go", stream_persist=True, persist_dir=str(bufs), snapshot_dir=str(snaps))
    await anext(gen)
    await anext(gen)  # the whole reply (the scripted model has no tool calls)
    assert (snaps / f"{branch.id}.json").is_file() and not (bufs / f"{branch.id}.json").exists()
    await gen.aclose()
    assert not (bufs / f"{branch.id}.buffer.jsonl").exists()


async def test_default_persist_dir_is_the_per_user_data_dir_never_the_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    branch = Branch(chat_model=cli("x"))
    [m async for m in branch.run("go", stream_persist=True)]
    runs = Path(os.environ["LION_NB_HOME"]) / "runs"
    assert (runs / f"{branch.id}.json").is_file()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("how", ["error", "aclose", "cancel", "nested"])
async def test_every_exit_writes_the_final_snapshot_and_removes_the_buffer(tmp_path, how):
    script = [
        text("partial "),
        text("text"),
        tool_use("t", "T"),
        text("pending"),
        0.05,
        tool_result("t", "x"),
        5.0,
        text("late"),
    ]
    if how == "error":
        script = [text("partial "), text("text"), Chunk(type="error", text="server error 500")]
    branch = Branch(chat_model=chunk_model(script))

    async def consume():
        async for message in branch.run("go", stream_persist=True, persist_dir=str(tmp_path)):
            if how == "aclose" and isinstance(message, ActionResponse):
                break

    if how == "error":
        with pytest.raises(ServerError):
            await consume()
    elif how == "aclose":
        gen = branch.run("go", stream_persist=True, persist_dir=str(tmp_path))
        async for message in gen:
            if isinstance(message, ActionResponse):
                break
        await gen.aclose()
    elif how == "cancel":
        task = asyncio.create_task(consume())
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    else:
        with suppress_lifecycle(branch):
            gen = branch.run("go", stream_persist=True, persist_dir=str(tmp_path))
            async for message in gen:
                if isinstance(message, ActionResponse):
                    break
            await gen.aclose()
    assert not (tmp_path / f"{branch.id}.buffer.jsonl").exists()
    saved = json.loads((tmp_path / f"{branch.id}.json").read_text())["messages"]
    assert len(saved) == len(branch.messages)
    assert saved[-1]["role"] == "assistant"
    assert saved[-1]["response"] in ("partial text", "pending")


async def test_buffer_is_kept_when_the_final_snapshot_cannot_be_written(tmp_path, caplog):
    branch = Branch(chat_model=chunk_model(TOOL_SCRIPT))
    snap = tmp_path / f"{branch.id}.json"
    gen = branch.run("go", stream_persist=True, persist_dir=str(tmp_path))
    await anext(gen)
    await anext(gen)
    initial = snap.read_text()
    snap.unlink()
    snap.mkdir()  # os.replace onto a directory fails: the final snapshot cannot be written
    out = [m async for m in gen]  # the run itself still ends normally
    assert out[-1].response == "Half of the answer and the rest."
    assert "final snapshot" in caplog.text
    buf = tmp_path / f"{branch.id}.buffer.jsonl"
    assert buf.is_file()
    snap.rmdir()
    snap.write_text(initial)
    recovered = recover_branch(tmp_path)  # the one leftover buffer names the branch
    assert [m.id for m in recovered.messages] == [m.id for m in branch.messages]
    assert [m.text for m in recovered.messages] == [m.text for m in branch.messages]


async def test_recover_mid_run_rebuilds_every_message_with_the_same_ids(tmp_path):
    branch = Branch(system="sys", chat_model=chunk_model(TOOL_SCRIPT))
    crash = tmp_path / "crash"
    gen = branch.run("go", stream_persist=True, persist_dir=str(tmp_path / "live"))
    async for message in gen:
        if isinstance(message, ActionResponse):  # "Half of the answer" is pending right now
            shutil.copytree(tmp_path / "live", crash)  # what a kill -9 here would leave
            break
    live_ids = [m.id for m in branch.messages]
    await gen.aclose()
    recovered = recover_branch(crash / f"{branch.id}.json")
    assert [m.id for m in recovered.messages][: len(live_ids)] == live_ids
    assert [m.role for m in recovered.messages] == [
        "system",
        "user",
        "assistant",
        "action_request",
        "action_response",
        "assistant",
    ]
    partial = recovered.messages[-1]
    assert partial.response == "Half of the answer" and partial.metadata["recovered"] is True
    assert partial.id == branch.messages[-1].id  # the id run() recorded it under on stop
    assert recovered.messages[4].action_request_id == recovered.messages[3].id
    assert recovered.chat_model.provider_session_id == "sess-9"  # the next run resumes it


async def test_leftover_buffer_after_a_complete_run_is_idempotent(tmp_path):
    branch = Branch(chat_model=chunk_model(TOOL_SCRIPT))
    live = tmp_path / "live"
    gen = branch.run("go", stream_persist=True, persist_dir=str(live))
    saved = None
    async for message in gen:
        buf = live / f"{branch.id}.buffer.jsonl"
        if buf.exists():  # from the second item on; keep it as it stands at each yield
            saved = buf.read_bytes()
        del message
    assert saved is not None and b'"result"' in saved  # every chunk, the result included
    # the run ended: final snapshot written, buffer removed. Put the last buffer back, as if
    # the process died right after the snapshot and before the removal.
    (live / f"{branch.id}.buffer.jsonl").write_bytes(saved)
    recovered = recover_branch(live, branch.id)
    assert [m.id for m in recovered.messages] == [m.id for m in branch.messages]
    assert [m.text for m in recovered.messages] == [m.text for m in branch.messages]


def test_recover_without_a_buffer_returns_the_snapshot_and_lookup_errors_are_clear(tmp_path):
    branch = Branch(system="s")
    (tmp_path / f"{branch.id}.json").write_text(json.dumps(branch.to_dict()))
    assert [m.text for m in recover_branch(tmp_path, branch.id).messages] == ["s"]
    assert lion_nb.recover_branch is recover_branch
    with pytest.raises(ValueError, match="branch_id"):
        recover_branch(tmp_path)  # no leftover buffer: which snapshot?
    with pytest.raises(FileNotFoundError):
        recover_branch(tmp_path, "00000000-0000-0000-0000-000000000000")
    with pytest.raises(FileNotFoundError):
        recover_branch(tmp_path / "missing")


def test_buffer_of_another_branch_is_refused(tmp_path):
    a, b = Branch(), Branch()
    (tmp_path / f"{a.id}.json").write_text(json.dumps(a.to_dict()))
    (tmp_path / "other.jsonl").write_text(
        json.dumps({"format": "lion_nb.run-buffer/1", "branch_id": str(b.id)}) + "\n"
    )
    with pytest.raises(ValueError, match="belongs to branch"):
        recover_branch(tmp_path / f"{a.id}.json", buffer_path=tmp_path / "other.jsonl")


def test_recovery_drops_a_line_cut_by_the_crash_and_replays_errors(tmp_path):
    branch = Branch()
    (tmp_path / f"{branch.id}.json").write_text(json.dumps(branch.to_dict()))
    err = RateLimitError("slow down", provider="codex", status=429)
    entries = [
        {
            "format": "lion_nb.run-buffer/1",
            "branch_id": str(branch.id),
            "run_id": "6f1c2a0e-0000-4000-8000-000000000001",
            "sender": "codex/gpt",
        }
    ]
    for seq, chunk in enumerate(
        [text("so "), text("far"), Chunk(type="error", text="slow down", error=err)], 1
    ):
        entries.append({"seq": seq, "chunk": chunk_to_dict(chunk)})
    body = "".join(json.dumps(e) + "\n" for e in entries) + '{"seq": 4, "chunk": {"ty'
    (tmp_path / f"{branch.id}.buffer.jsonl").write_text(body)
    header, chunks = read_buffer(tmp_path / f"{branch.id}.buffer.jsonl")
    assert header["sender"] == "codex/gpt" and len(chunks) == 3
    assert isinstance(chunks[2].error, RateLimitError) and chunks[2].error.status == 429
    recovered = recover_branch(tmp_path)
    last = recovered.messages[-1]
    assert last.response == "so far" and "slow down" in last.metadata["error"]
    assert last.sender == "codex/gpt"


def test_chunk_round_trips_through_its_buffer_form():
    chunk = Chunk(
        type="tool_result",
        tool_id="t",
        output={"rows": [1, 2]},
        is_error=True,
        metadata={"k": 1},
        raw={"type": "user", "n": [1]},
    )
    back = chunk_from_dict(json.loads(json.dumps(chunk_to_dict(chunk))))
    assert back == chunk
    odd = chunk_from_dict(chunk_to_dict(Chunk(type="error", text="x", error=ValueError("v"))))
    assert type(odd.error).__name__ == "ProviderError" and "v" in str(odd.error)


def test_kill_9_mid_stream_then_recover_every_chunk_received(tmp_path):
    """A child interpreter runs a persisted run; it is SIGKILLed mid-stream; recover_branch
    restores every chunk the child had received (it printed each as it arrived)."""
    child = subprocess.Popen(
        [sys.executable, str(HELPERS / "persisted_run_child.py"), str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(HELPERS.parent)},
    )
    printed: list[dict] = []
    try:
        assert child.stdout is not None
        branch_id = json.loads(child.stdout.readline())["branch_id"]
        deadline = time.monotonic() + 20
        while sum(p["kind"] == "text" for p in printed) < 15:
            line = child.stdout.readline()
            assert line, f"child ended early: {child.stderr.read() if child.stderr else ''}"
            printed.append(json.loads(line))
            assert time.monotonic() < deadline
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        for stream in (child.stdout, child.stderr):
            if stream is not None:
                stream.close()
    assert child.returncode == -signal.SIGKILL
    buf = tmp_path / f"{branch_id}.buffer.jsonl"
    assert buf.is_file()  # the run never finished: the buffer is left for recovery
    recovered = recover_branch(tmp_path, branch_id)
    assert [m.role for m in recovered.messages] == ["system", "user", "assistant"]
    partial = recovered.messages[-1]
    assert partial.metadata["recovered"] is True
    assert partial.metadata["thinking"] == "Planning a long answer."
    printed_text = "".join(p["delta"] for p in printed if p["kind"] == "text")
    assert partial.response.startswith(printed_text)  # nothing the child received is lost
    full = " ".join(f"word{i}" for i in range(400))
    assert full.startswith(partial.response) and partial.response != full
    _, chunks = read_buffer(buf)
    assert "".join(c.text for c in chunks if c.type == "text") == partial.response


async def test_a_buffer_that_cannot_be_written_fails_the_run_before_the_agent_starts(tmp_path):
    model = chunk_model([text("never")])
    branch = Branch(chat_model=model)
    seen: list = []
    branch.observe(handler=seen.append)
    (tmp_path / f"{branch.id}.buffer.jsonl").symlink_to("/dev/full")  # every write: ENOSPC
    gen = branch.run("go", stream_persist=True, persist_dir=str(tmp_path))
    await anext(gen)
    with pytest.raises(OSError):
        await anext(gen)
    assert model.provider.started == 0
    assert type(seen[-1]).__name__ == "RunFailed"
    assert snapshot_roles(tmp_path / f"{branch.id}.json") == ["user"]  # the final snapshot
    assert not (tmp_path / f"{branch.id}.buffer.jsonl").exists()


def test_a_failed_append_mid_stream_is_logged_once_and_later_chunks_are_skipped(tmp_path, caplog):
    from lion_nb.port.stream_persist import ChunkBuffer

    buf = ChunkBuffer(tmp_path / "b.buffer.jsonl")
    buf.open({"branch_id": "x"})
    buf.append(text("kept"))
    buf._fh.close()  # the disk goes away under the open file
    buf.append(text("lost"))
    buf.append(text("lost too"))
    assert buf.failed and caplog.text.count("could not append") == 1
    header, chunks = read_buffer(buf.path)
    assert header["branch_id"] == "x" and [c.text for c in chunks] == ["kept"]
