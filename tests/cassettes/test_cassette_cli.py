"""Cassettes over a CLI agent run as a real subprocess (the fake CLI replaying recorded Claude
Code output): record through ``run()``, then replay with the executable removed — no process
starts, the messages, deltas and signals are the same, and the resume id comes back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import lion_nb
from lion_nb import Branch, iModel
from lion_nb.errors import CassetteMiss, CLINotFound, RateLimitError
from tests.support.cassette_traces import Trace, messages
from tests.support.fake_cli import make_fake_cli, recording


def claude(cli_path: Path, env: dict[str, str], tmp_path: Path) -> iModel:
    return iModel(provider="claude_code", cli_path=str(cli_path), env=env, cwd=str(tmp_path))


async def test_run_replays_without_the_executable(tmp_path: Path) -> None:
    fake = make_fake_cli(tmp_path)
    path = tmp_path / "agent.jsonl"
    env = fake.env(recording("claude/tool_read_partial"), delay=0.001)
    results = []

    model = claude(fake.path, env, tmp_path)
    branch = Branch(chat_model=model)
    trace = Trace(branch)
    with lion_nb.cassette(path, mode="record", speed=None):
        roles = [m.role async for m in branch.run("Read hello.txt")]
        first_session = model.provider_session_id
        again = await branch.run_and_collect("And again?")
    results.append((roles, first_session, again, messages(branch), trace.deltas(), trace.signals()))
    assert fake.record()["argv"][-1] != "" and "action_response" in roles
    second_argv = fake.record()["argv"]
    assert "--resume" in second_argv and first_session in second_argv

    fake.path.unlink()  # the CLI is gone ...
    fake.record_path.unlink()  # ... and nothing may start it again
    model = claude(fake.path, env, tmp_path)
    branch = Branch(chat_model=model)
    trace = Trace(branch)
    with lion_nb.cassette(path, mode="replay", speed=None):
        roles = [m.role async for m in branch.run("Read hello.txt")]
        session = model.provider_session_id
        again = await branch.run_and_collect("And again?")
    results.append((roles, session, again, messages(branch), trace.deltas(), trace.signals()))
    assert results[0] == results[1]
    assert not fake.record_path.exists()
    assert any(d[0] == "text" for d in results[1][4])
    replayed = branch.messages[-1]
    assert replayed.role == "assistant"

    with pytest.raises(CLINotFound):  # and it really is gone
        await Branch(chat_model=model).run_and_collect("Read hello.txt")


async def test_a_recorded_cli_error_replays_as_the_same_error(tmp_path: Path) -> None:
    fake = make_fake_cli(tmp_path)
    path = tmp_path / "agent.jsonl"
    env = fake.env(recording("claude/error_429"), exit_code=1)
    raised = []
    for mode in ("record", "replay"):
        model = claude(fake.path, env, tmp_path)
        with lion_nb.cassette(path, mode=mode), pytest.raises(RateLimitError) as info:
            await Branch(chat_model=model).run_and_collect("hi")
        raised.append(info.value)
        fake.path.unlink(missing_ok=True)
    assert type(raised[1]) is type(raised[0]) and str(raised[1]) == str(raised[0])
    line = json.loads(path.read_text().splitlines()[1])
    assert line["kind"] == "cli" and any(e["chunk"]["type"] == "error" for e in line["events"])


async def test_a_missing_executable_is_not_recorded(tmp_path: Path) -> None:
    path = tmp_path / "agent.jsonl"
    model = claude(tmp_path / "no-such-cli", {}, tmp_path)
    with lion_nb.cassette(path, mode="auto"), pytest.raises(CassetteMiss) as info:
        await Branch(chat_model=model).run_and_collect("hi")
    assert "not on the cassette" in str(info.value) and "cannot be used here" in str(info.value)
    assert isinstance(info.value.__cause__, CLINotFound)
    assert not path.exists()  # "not installed" is this machine's state, not the model's reply
    with lion_nb.cassette(path, mode="replay"), pytest.raises(CassetteMiss):
        await Branch(chat_model=model).run_and_collect("hi")
