"""Record/replay round trips on the scripted model (API and CLI paths, every kind of verb, errors).

"Replay with the real thing absent" here: the replaying branch's scripted model has no replies
left, so any call that reached it would fail with ``ExecutionError``."""

from __future__ import annotations

import json
from contextlib import aclosing
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import lion_nb
from lion_nb import Branch
from lion_nb.errors import CassetteMiss, RateLimitError
from lion_nb.models.base import ModelRequest
from tests.support.cassette_traces import Trace, absent, messages, round_trip, scripted

# -- API path: text, thinking, tool calls, every verb ------------------------------------------


async def test_communicate_replays_the_same_messages_deltas_and_signals(tmp_path: Path) -> None:
    reply = {"text": "Paris, on the Seine.", "thinking": "France -> Paris.", "delay": 0.005}
    recorded, replayed = await round_trip(
        tmp_path / "c.jsonl", [reply], lambda b: b.communicate("Capital of France?")
    )
    assert recorded == replayed
    result, _msgs, deltas, signals = replayed
    assert result == "Paris, on the Seine."
    assert deltas[0] == ("thinking", "France -> Paris.", 16)
    assert [d[1] for d in deltas[1:]] == ["Paris, ", "on ", "the ", "Seine."]
    assert signals[0] == ("RunStart", "communicate") and signals[-1][0] == "RunEnd"


async def test_tool_calls_parse_repairs_and_react_rounds_replay(tmp_path: Path) -> None:
    calls: list[str] = []

    def lookup(city: str) -> dict:
        """Weather for a city."""
        calls.append(city)  # a tool is the user's code: it runs again on replay
        return {"city": city, "temp_c": 21}

    class City(BaseModel):
        name: str
        country: str

    script = [
        {
            "json": {
                "analysis": "look it up",
                "extension_needed": True,
                "action_requests": [{"function": "lookup", "arguments": {"city": "Rome"}}],
            }
        },
        {"json": {"analysis": "21 C. Done.", "extension_needed": False, "action_requests": []}},
        {"json": {"answer": "Rome: 21 C."}},
        "not json at all",  # a parse that needs a repair turn
        {"json": {"name": "Rome", "country": "Italy"}},
    ]

    async def act(branch: Branch) -> Any:
        answer = await branch.ReAct("How warm is Rome?", tools=[lookup], max_extensions=2)
        place = await branch.communicate("Which city?", response_format=City)
        return answer, place

    recorded, replayed = await round_trip(tmp_path / "c.jsonl", script, act)
    assert recorded[1:] == replayed[1:]
    assert recorded[0][0] == replayed[0][0] == "Rome: 21 C."
    assert replayed[0][1] == City(name="Rome", country="Italy")
    assert calls == ["Rome", "Rome"]  # once live, once on replay
    kinds = [s[0] for s in replayed[3]]
    assert kinds.count("RoundStart") >= 2 and "ParseAttempt" in kinds


async def test_api_tool_call_deltas_come_back_with_names_and_ids(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    request = ModelRequest(messages=[{"role": "user", "content": "go"}], tools=[{"name": "f"}])
    reply = {"text": "calling", "tool_calls": [{"name": "f", "arguments": {"x": 1}, "id": "c1"}]}
    seen: list[list[tuple[Any, ...]]] = []
    results = []
    for mode, model in (("record", scripted(reply)), ("replay", absent())):
        got: list[tuple[Any, ...]] = []
        with lion_nb.cassette(path, mode=mode, speed=None):
            results.append(
                await model.complete(
                    request,
                    lambda k, d, *, name=None, call_id=None, got=got: got.append(
                        (k, d, name, call_id)
                    ),
                )
            )
        seen.append(got)
    assert seen[0] == seen[1] and ("tool_args", '{"x": 1}', "f", "c1") in seen[1]
    live, replay = results
    assert replay.tool_calls == live.tool_calls and replay.usage == live.usage
    assert live.replayed is None
    assert replay.replayed == {
        "cassette": str(path),
        "call": 1,
        "line": 2,
        "recorded_at": replay.replayed["recorded_at"],
    }


# -- CLI path ------------------------------------------------------------------------------------


async def test_cli_run_replays_chunks_and_resume_ids(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    first = {
        "text": "Reading it.",
        "tool_calls": [
            {
                "name": "Read",
                "arguments": {"file": "a.txt"},
                "id": "t1",
                "output": "hello",
                "text_after": "It says hello.",
            }
        ],
    }
    second = "Still hello."
    runs = []
    for mode, model in (
        ("record", scripted(first, second, cli=True)),
        ("replay", absent(cli=True)),
    ):
        branch = Branch(chat_model=model)
        trace = Trace(branch)
        with lion_nb.cassette(path, mode=mode, speed=None):
            yielded = [m.role async for m in branch.run("Read a.txt")]
            session = model.provider_session_id
            again = await branch.run_and_collect("And now?")
        runs.append((yielded, session, again, messages(branch), trace.signals()))
    assert runs[0] == runs[1]
    assert runs[1][1].startswith("scripted-")  # the recorded session id came back
    lines = path.read_text().splitlines()
    assert json.loads(lines[2])["request"]["resume"] == runs[0][1]  # the 2nd run resumed it


async def test_a_stopped_cli_run_replays_up_to_where_it_stopped(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    reply = {
        "text": "Reading.",
        "tool_calls": [{"name": "Read", "arguments": {}, "id": "t1", "output": "x"}],
        "delay": 0.01,
    }
    for mode, model in (("record", scripted(reply, cli=True)), ("replay", absent(cli=True))):
        branch = Branch(chat_model=model)
        with lion_nb.cassette(path, mode=mode, speed=None):
            async with aclosing(branch.run("count")) as stream:
                async for message in stream:
                    if message.role == "assistant":
                        break
        assert [m.role for m in branch.messages] == ["user", "assistant", "action_request"]
        assert json.loads(path.read_text().splitlines()[1])["stopped"] is True
    branch = Branch(chat_model=absent(cli=True))
    with lion_nb.cassette(path, mode="replay", speed=None), pytest.raises(CassetteMiss) as info:
        await branch.run_and_collect("count")  # reads past where the recording stopped
    assert "stopped reading" in str(info.value)


# -- errors ----------------------------------------------------------------------------------------


async def test_a_recorded_429_replays_as_the_same_provider_error(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    error = RateLimitError("rate limited: slow down", provider="openai", status=429, retry_after=3)
    raised = []
    for mode, model in (
        ("record", scripted({"text": "Par", "error": error})),
        ("replay", absent()),
    ):
        branch = Branch(chat_model=model)
        with lion_nb.cassette(path, mode=mode), pytest.raises(RateLimitError) as info:
            await branch.communicate("Capital of France?")
        raised.append(info.value)
    live, replay = raised
    assert type(replay) is RateLimitError and str(replay) == str(live)
    assert (replay.status, replay.retry_after, replay.retryable) == (429, 3, True)
    assert replay.partial_text == "Par"
    assert replay.replayed["call"] == 1
