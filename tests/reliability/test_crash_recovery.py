"""A kill -9 of the interpreter during a persisted run, at random points, then recovery.

``tests/test_persist.py`` kills a child running the in-process scripted model once, at a fixed
point. Here the child runs the real stack — ``Branch.run(stream_persist=True)`` on the
``claude_code`` provider driving a real agent process (the fake agent replaying a long
recorded stream with a tool call in the middle) — and is SIGKILLed at several seeded random
points. Each time, ``recover_branch`` must restore every text delta and every message the child
had received (it printed each as it arrived), with the same message ids, nothing invented, the
tool call and its result linked, and the agent's session id for the next run; and the orphaned
agent process must not outlive its stream.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from lion_nb.messages import ActionRequest, ActionResponse, AssistantResponse
from lion_nb.port.stream_persist import read_buffer
from lion_nb.session.recover import recover_branch
from tests.support.fake_cli import make_fake_cli, process_alive, recording

CHILD = Path(__file__).resolve().parents[1] / "support" / "crash_child.py"
ROOT = Path(__file__).resolve().parents[2]
DELTAS_PER_MESSAGE = 40
SEED = 20261130
KILL_AFTER = sorted(random.Random(SEED).sample(range(1, 2 * DELTAS_PER_MESSAGE), 5))


def long_claude_stream(path: Path) -> tuple[list[str], str]:
    """``claude/tool_read_partial`` (text, a Read tool call and its result, more text) with
    each message's text re-streamed as DELTAS_PER_MESSAGE deltas. Returns the texts of the
    two messages and the session id."""
    events = [
        json.loads(line) for line in recording("claude/tool_read_partial").read_text().splitlines()
    ]
    texts: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    message_id = None
    for event in events:
        inner = event.get("event") or {}
        if event["type"] == "stream_event" and inner.get("type") == "message_start":
            message_id = inner["message"]["id"]
        if (
            event["type"] == "stream_event"
            and (inner.get("delta") or {}).get("type") == "text_delta"
        ):
            if message_id in texts:
                continue  # the original deltas of this block were already replaced
            n = len(texts)
            words = [f"m{n}w{j} " for j in range(DELTAS_PER_MESSAGE)]
            texts[message_id] = "".join(words)
            for word in words:
                delta = {**inner, "delta": {"type": "text_delta", "text": word}}
                out.append({**event, "event": delta})
            continue
        if event["type"] == "assistant" and event["message"]["id"] in texts:
            message = event["message"]
            content = [
                {**block, "text": texts[message["id"]]} if block.get("type") == "text" else block
                for block in message["content"]
            ]
            event = {**event, "message": {**message, "content": content}}
        out.append(event)
    path.write_text("".join(json.dumps(e) + "\n" for e in out))
    return list(texts.values()), events[0]["session_id"]


def kill_child_after(child: subprocess.Popen[str], deltas: int) -> list[dict[str, Any]]:
    """Read the child's reports until ``deltas`` text deltas arrived, then SIGKILL it."""
    assert child.stdout is not None
    printed: list[dict[str, Any]] = []
    deadline = time.monotonic() + 30
    while sum("delta" in p for p in printed) < deltas:
        line = child.stdout.readline()
        if not line:
            err = child.stderr.read() if child.stderr else ""
            pytest.fail(f"the child ended before {deltas} deltas: {err[-2000:]}")
        printed.append(json.loads(line))
        assert time.monotonic() < deadline, "the child is too slow"
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=10)
    return printed


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kill_after", KILL_AFTER)
def test_kill_9_during_a_persisted_cli_run_then_recover_every_chunk(tmp_path, kill_after):
    fake = make_fake_cli(tmp_path)
    texts, session_id = long_claude_stream(tmp_path / "long.jsonl")
    env = fake.env(tmp_path / "long.jsonl", delay=0.003)
    persist = tmp_path / "runs"
    child = subprocess.Popen(
        [sys.executable, str(CHILD), str(persist), str(fake.path), json.dumps(env)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    agent_pgid = None
    try:
        printed = kill_child_after(child, kill_after)
        assert child.returncode == -signal.SIGKILL
        agent_pgid = fake.record()["pgid"]
        # The agent is in its own process group, so the kill did not reach it; it dies at its
        # next write into the closed pipe (it must not run on, unobserved, for long).
        deadline = time.monotonic() + 10
        while process_alive(agent_pgid) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not process_alive(agent_pgid), "the orphaned agent outlived its reader"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        for stream in (child.stdout, child.stderr):
            if stream is not None:
                stream.close()
        if agent_pgid is not None:
            try:
                os.killpg(agent_pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    branch_id = printed[0]["branch_id"]
    buffer = persist / f"{branch_id}.buffer.jsonl"
    assert buffer.is_file()  # the run never finished: the buffer is left for recovery
    recovered = recover_branch(persist, branch_id)
    messages = list(recovered.messages)

    # Every message the child had recorded (from the instruction on: the system message was
    # added before it subscribed) is back, in order, under the same id.
    seen_ids = [p["id"] for p in printed if "message" in p]
    ids = [str(m.id) for m in messages]
    assert seen_ids and ids[1 : 1 + len(seen_ids)] == seen_ids

    # Every delta the child received is restored; nothing that was not sent is invented.
    received = "".join(p["delta"] for p in printed if "delta" in p)
    restored = "".join(m.response for m in messages if isinstance(m, AssistantResponse))
    full = "".join(texts)
    assert restored.startswith(received)
    assert full.startswith(restored)
    _, chunks = read_buffer(buffer)
    assert restored == "".join(c.text for c in chunks if c.type == "text")

    # Shape: the tool call (if it was reached) is linked to its result.
    requests = [m for m in messages if isinstance(m, ActionRequest)]
    responses = [m for m in messages if isinstance(m, ActionResponse)]
    if len(received) > len(texts[0]):
        assert len(requests) == 1 and requests[0].function == "Read"
    for response in responses:
        assert response.action_request_id == requests[0].id
    assert [m.role for m in messages[:2]] == ["system", "user"]
    last = messages[-1]
    if str(last.id) not in seen_ids:  # text the child received but had not recorded yet
        assert isinstance(last, AssistantResponse) and last.metadata["recovered"] is True
    assert recovered.chat_model.provider_session_id == session_id  # the next run resumes
