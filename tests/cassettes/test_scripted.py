"""Record/replay round trips on the scripted model (API and CLI paths, every kind of verb),
modes and misses, ordering, timing at several speeds, errors, concurrency.

"Replay with the real thing absent" here: the replaying branch's scripted model has no replies
left, so any call that reached it would fail with ``ExecutionError``."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from contextlib import aclosing
from pathlib import Path
from typing import Any

import pytest
from cassettes.helpers import Trace, messages
from pydantic import BaseModel

import lion_nb
from lion_nb import Branch, iModel
from lion_nb.cassettes import CassetteWarning
from lion_nb.errors import CassetteMiss, ExecutionError, RateLimitError
from lion_nb.models.base import ModelRequest

SYSTEM = "Answer briefly."


def scripted(*replies: Any, **kw: Any) -> iModel:
    return iModel(provider="scripted", replies=list(replies), **kw)


def absent(**kw: Any) -> iModel:
    """The same model with nothing to say: a replay that reaches it fails loudly."""
    return iModel(provider="scripted", **kw)


async def round_trip(path: Path, script: list[Any], act: Any, *, speed: float | None = None):
    """Record ``act(branch)`` on a model playing ``script``, then replay it with the model
    absent; return both (result, messages, deltas, signals)."""
    out = []
    for mode, model in (("record", scripted(*script)), ("replay", absent())):
        branch = Branch(system=SYSTEM, chat_model=model)
        trace = Trace(branch)
        with lion_nb.cassette(path, mode=mode, speed=speed):
            result = await act(branch)
        out.append((result, messages(branch), trace.deltas(), trace.signals()))
    return out


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


# -- modes and misses --------------------------------------------------------------------------------


async def test_replay_mode_miss_names_provider_model_instruction_and_nearest(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.jsonl"
    with lion_nb.cassette(path, mode="record"):
        await Branch(system=SYSTEM, chat_model=scripted("Paris.", model="tiny")).communicate(
            "Capital of France?"
        )
    before = path.read_bytes()
    with lion_nb.cassette(path, mode="replay"), pytest.raises(CassetteMiss) as info:
        await Branch(system=SYSTEM, chat_model=absent(model="tiny")).communicate(
            "Capital of Franc?"
        )
    text = str(info.value)
    assert "scripted/tiny" in text and "'Capital of Franc?'" in text
    assert "call 1, line 2" in text
    assert "messages[1].content: recorded 'Capital of France?', now 'Capital of Franc?'" in text
    assert info.value.differences == [
        ("messages[1].content", "Capital of France?", "Capital of Franc?")
    ]
    assert isinstance(info.value, lion_nb.errors.LionError)
    assert path.read_bytes() == before  # replay never writes


async def test_a_miss_against_an_empty_cassette_says_so(tmp_path: Path) -> None:
    with (
        lion_nb.cassette(tmp_path / "none.jsonl", mode="replay"),
        pytest.raises(CassetteMiss) as info,
    ):
        await Branch(chat_model=absent()).communicate("hi")
    assert "file does not exist" in str(info.value)
    assert not (tmp_path / "none.jsonl").exists()


async def test_auto_mode_says_why_an_unavailable_model_was_needed(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    with lion_nb.cassette(path, mode="record"):
        await Branch(chat_model=scripted("A.")).communicate("a")
    unknown = iModel(provider="local", model="no-such-model")  # cannot run on any machine
    with (
        lion_nb.cassette(path, mode="auto"),
        pytest.raises(lion_nb.errors.ConfigurationError) as info,
    ):
        await Branch(chat_model=unknown).communicate("b")
    assert "unknown local model" in str(info.value)
    (note,) = info.value.__notes__
    assert note.startswith("(the cassette could not replay this call: no recording in")
    assert "'b'" in note


async def test_cli_miss_in_replay_mode_starts_nothing(tmp_path: Path) -> None:
    model = scripted("never", cli=True)
    with lion_nb.cassette(tmp_path / "c.jsonl", mode="replay"), pytest.raises(CassetteMiss):
        await Branch(chat_model=model).run_and_collect("hi")
    assert model.provider.requests == []


async def test_auto_mode_replays_hits_and_records_misses(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    model = scripted("one", "two")
    with lion_nb.cassette(path, mode="auto"):
        assert await Branch(chat_model=model).communicate("a") == "one"
    with lion_nb.cassette(path, mode="auto") as tape:
        assert await Branch(chat_model=model).communicate("a") == "one"  # hit: no call
        assert await Branch(chat_model=model).communicate("b") == "two"  # miss: recorded
    assert len(model.provider.requests) == 2
    assert (tape.replayed, tape.recorded, len(tape)) == (1, 1, 2)


async def test_record_mode_calls_again_and_rewrites_only_what_it_calls(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    with lion_nb.cassette(path, mode="record"):
        await Branch(chat_model=scripted("a1")).communicate("a")
        await Branch(chat_model=scripted("b1")).communicate("b")
    with lion_nb.cassette(path, mode="record"):
        await Branch(chat_model=scripted("a2")).communicate("a")
        await Branch(chat_model=scripted("a3")).communicate("a")  # a 2nd recording of "a"
    with lion_nb.cassette(path, mode="replay"):
        got = [await Branch(chat_model=absent()).communicate(p) for p in "baaa"]
    assert got == ["b1", "a2", "a3", "a3"]  # recorded order, the last one repeating


async def test_off_mode_calls_the_model_and_touches_no_file(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text("not a cassette at all\n")
    with lion_nb.cassette(path, mode="off"):
        assert await Branch(chat_model=scripted("live")).communicate("a") == "live"
    assert path.read_text() == "not a cassette at all\n"


async def test_use_cassette_is_the_default_until_switched_off(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    with lion_nb.cassette(path, mode="record"):
        await Branch(chat_model=scripted("taped")).communicate("a")
    tape = lion_nb.use_cassette(path, mode="replay", speed=None)
    assert isinstance(tape, lion_nb.Cassette)
    assert await Branch(chat_model=absent()).communicate("a") == "taped"
    with lion_nb.cassette(path, mode="off"):  # a block overrides the default
        assert await Branch(chat_model=scripted("live")).communicate("a") == "live"
    assert lion_nb.use_cassette(None) is None
    with pytest.raises(ExecutionError):
        await Branch(chat_model=absent()).communicate("a")


async def test_async_with_and_invalid_arguments(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    async with lion_nb.cassette(path, mode="record"):
        await Branch(chat_model=scripted("x")).communicate("a")
    async with lion_nb.cassette(path, mode="replay"):
        assert await Branch(chat_model=absent()).communicate("a") == "x"
    with pytest.raises(ValueError, match="mode must be one of"):
        lion_nb.cassette(path, mode="replay-ish")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="speed must be"):
        lion_nb.cassette(path, speed=-1)


async def test_one_cassette_entered_by_concurrent_tasks(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    with lion_nb.cassette(path, mode="record"):
        await Branch(chat_model=scripted({"text": "x", "delay": 0.01})).communicate("a")
    tape = lion_nb.cassette(path, mode="replay")

    async def use(pause: float) -> str:
        async with tape:
            await asyncio.sleep(pause)
            text = await Branch(chat_model=absent()).communicate("a")
        return text

    assert await asyncio.gather(use(0.0), use(0.02)) == ["x", "x"]
    assert lion_nb.cassettes.active.current() is None


# -- timing --------------------------------------------------------------------------------------------


async def _timed_replay(path: Path, speed: float | None) -> tuple[float, list[float]]:
    branch = Branch(chat_model=absent())
    stamps: list[float] = []
    start = time.perf_counter()
    branch.observe(
        lion_nb.signals.StreamDelta, handler=lambda s: stamps.append(time.perf_counter() - start)
    )
    with lion_nb.cassette(path, mode="replay", speed=speed):
        await branch.communicate("count")
    return time.perf_counter() - start, stamps


async def test_replay_keeps_the_recorded_pace_at_speed_1_and_10_and_none(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    reply = {"chunks": [f"w{i} " for i in range(8)], "delay": 0.1}  # 0.8 s of streaming
    with lion_nb.cassette(path, mode="record"):
        await Branch(chat_model=scripted(reply)).communicate("count")
    offsets = [e["t"] for e in json.loads(path.read_text().splitlines()[1])["events"]]
    assert offsets[-1] >= 0.75

    total, stamps = await _timed_replay(path, 1.0)
    assert 0.7 <= total < 3.0
    assert stamps[0] >= 0.07 and stamps[-1] >= 0.7  # not all at once: at the recorded offsets
    assert all(b > a for a, b in itertools.pairwise(stamps))

    total, stamps = await _timed_replay(path, 10)
    assert 0.07 <= total < 0.6

    total, _ = await _timed_replay(path, None)
    assert total < 0.3
    total, _ = await _timed_replay(path, 0)
    assert total < 0.3


async def test_a_cli_stream_replays_at_its_pace_too(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    reply = {"chunks": [f"w{i} " for i in range(5)], "delay": 0.1}
    with lion_nb.cassette(path, mode="record"):
        await Branch(chat_model=scripted(reply, cli=True)).run_and_collect("count")
    for speed, low, high in ((1.0, 0.45, 2.5), (10, 0.04, 0.4), (None, 0.0, 0.2)):
        branch = Branch(chat_model=absent(cli=True))
        start = time.perf_counter()
        with lion_nb.cassette(path, mode="replay", speed=speed):
            assert await branch.run_and_collect("count") == "w0 w1 w2 w3 w4 "
        assert low <= time.perf_counter() - start < high, speed


# -- concurrency ------------------------------------------------------------------------------------


async def test_100_branches_replay_concurrently_from_one_cassette(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"

    def echo(request: Any) -> dict:
        return {"text": f"echo: {request.messages[-1]['content']}", "delay": 0.02}

    prompts = [f"prompt {i}" for i in range(100)]
    with lion_nb.cassette(path, mode="auto"):  # recorded concurrently too
        await asyncio.gather(
            *(Branch(chat_model=scripted(default_reply=echo)).communicate(p) for p in prompts)
        )
    assert len(path.read_text().splitlines()) == 101

    start = time.perf_counter()
    with lion_nb.cassette(path, mode="replay", speed=1.0) as tape:
        branches = [Branch(chat_model=absent()) for _ in prompts]
        texts = await asyncio.gather(
            *(b.communicate(p) for b, p in zip(branches, prompts, strict=True))
        )
    elapsed = time.perf_counter() - start
    assert texts == [f"echo: {p}" for p in prompts]
    assert tape.replayed == 100
    assert elapsed < 5.0  # concurrent: one call's pace (~0.1 s), not a hundred of them


async def test_damaged_lines_warn_and_are_skipped_in_auto_mode(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    with lion_nb.cassette(path, mode="record"):
        await Branch(chat_model=scripted("a1")).communicate("a")
    with path.open("a") as fh:
        fh.write('{"call": 2, "kind": "api", "request": {"provid\n')
    with pytest.warns(CassetteWarning, match="line 3: not JSON"), lion_nb.cassette(path):
        assert await Branch(chat_model=absent()).communicate("a") == "a1"
