"""``cassette`` / ``use_cassette``: modes, misses, scoping, concurrency, damaged files."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

import lion_nb
from lion_nb import Branch, iModel
from lion_nb.cassettes import CassetteWarning
from lion_nb.cassettes.cassette import Cassette
from lion_nb.errors import CassetteMiss, ExecutionError
from tests.support.cassette_traces import SYSTEM, absent, scripted

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
    assert text.startswith("This prompt is not on the cassette") and "\n" not in text
    assert "scripted/tiny" in text and "'Capital of Franc?'" in text
    assert "closest recording (call 1, line 2)" in text
    assert "use mode='auto' where the model is available: new calls go to 'c.local.jsonl'" in text
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


async def test_auto_mode_without_the_model_says_the_prompt_is_not_on_the_cassette(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.jsonl"
    with lion_nb.cassette(path, mode="record"):
        await Branch(chat_model=scripted("A.")).communicate("a")
    before = path.read_bytes()
    unknown = iModel(provider="local", model="no-such-model")  # cannot run on any machine
    with lion_nb.cassette(path, mode="auto"), pytest.raises(CassetteMiss) as info:
        await Branch(chat_model=unknown).communicate("b")
    text = str(info.value)
    assert text.startswith("This prompt is not on the cassette") and "'b'" in text
    assert "Recording it needs local/no-such-model, which cannot be used here: unknown" in text
    assert isinstance(info.value.__cause__, lion_nb.errors.ConfigurationError)  # the model's own
    assert path.read_bytes() == before
    assert not (tmp_path / "c.local.jsonl").exists()  # "not installed" is never recorded


async def test_cli_miss_in_replay_mode_starts_nothing(tmp_path: Path) -> None:
    model = scripted("never", cli=True)
    with lion_nb.cassette(tmp_path / "c.jsonl", mode="replay"), pytest.raises(CassetteMiss):
        await Branch(chat_model=model).run_and_collect("hi")
    assert model.provider.requests == []


async def test_auto_mode_replays_hits_and_records_misses(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    model = scripted("one", "two")
    with lion_nb.cassette(path, mode="auto"):  # a new cassette: recorded into the file itself
        assert await Branch(chat_model=model).communicate("a") == "one"
    # an existing cassette: recorded into it only when named as the file to record to
    with lion_nb.cassette(path, mode="auto", record_to=path) as tape:
        assert await Branch(chat_model=model).communicate("a") == "one"  # hit: no call
        assert await Branch(chat_model=model).communicate("b") == "two"  # miss: recorded
    assert len(model.provider.requests) == 2
    assert (tape.replayed, tape.recorded, len(tape)) == (1, 1, 2)
    assert len(path.read_text().splitlines()) == 3


SHIPPED = Path(__file__).resolve().parents[2] / "notebooks" / "data" / "07_cassettes.cassette.jsonl"


async def test_auto_mode_records_into_a_sibling_and_never_changes_a_shipped_cassette(
    tmp_path: Path,
) -> None:
    path = tmp_path / "07_cassettes.cassette.jsonl"
    path.write_bytes(SHIPPED.read_bytes())
    before = path.read_bytes()
    tape = lion_nb.cassette(path, mode="auto", speed=None)
    assert tape.recording_to == str(tmp_path / "07_cassettes.local.cassette.jsonl")
    assert "recording to" in repr(tape)
    with tape, pytest.warns(CassetteWarning, match="new calls are recorded into .*local"):
        assert await Branch(chat_model=scripted("New.")).communicate("A new prompt") == "New."
    assert path.read_bytes() == before  # byte-identical
    local = tmp_path / "07_cassettes.local.cassette.jsonl"
    lines = local.read_text().splitlines()
    assert len(lines) == 2 and "A new prompt" in lines[1]
    # the next session replays it from the sibling; "replay" reads only the named file
    with lion_nb.cassette(path, mode="auto", speed=None) as again:
        assert await Branch(chat_model=absent()).communicate("A new prompt") == "New."
    assert (again.replayed, again.recorded, len(again)) == (1, 0, len(tape))
    with lion_nb.cassette(path, mode="replay"), pytest.raises(CassetteMiss):
        await Branch(chat_model=absent()).communicate("A new prompt")
    assert path.read_bytes() == before


async def test_record_to_names_the_file_recordings_go_to(tmp_path: Path) -> None:
    path, mine = tmp_path / "c.jsonl", tmp_path / "mine.jsonl"
    with lion_nb.cassette(path, mode="record"):
        await Branch(chat_model=scripted("A.")).communicate("a")
    before = path.read_bytes()
    with lion_nb.cassette(path, record_to=mine) as tape:  # no warning: the user named it
        assert await Branch(chat_model=absent()).communicate("a") == "A."
        assert await Branch(chat_model=scripted("B.")).communicate("b") == "B."
    assert tape.recording_to == str(mine) and path.read_bytes() == before
    assert len(mine.read_text().splitlines()) == 2


async def test_a_copy_of_a_cassette_speaks_under_the_name_given(tmp_path: Path) -> None:
    # a Ray worker replays a copy of the notebook's cassette (lion_nb.flow.ray_cassette)
    path, copy = tmp_path / "c.jsonl", tmp_path / "copy" / "c.jsonl"
    with lion_nb.cassette(path, mode="record"):
        await Branch(chat_model=scripted("A.")).communicate("a")
    copy.parent.mkdir()
    copy.write_bytes(path.read_bytes())
    tape = Cassette(copy, mode="replay", speed=None, name="data/c.jsonl")
    with tape:
        branch = Branch(chat_model=absent())
        assert await branch.communicate("a") == "A."
        with pytest.raises(CassetteMiss, match=r"not on the cassette 'data/c\.jsonl': 'b'"):
            await branch.communicate("b")
    assert branch.messages[-1].metadata["replayed"]["cassette"] == "data/c.jsonl"
    assert tape.replaying_from == "data/c.jsonl"
    # "auto" records beside the file itself, never beside the name
    auto = Cassette(copy, mode="auto", name=str(tmp_path / "elsewhere" / "c.jsonl"))
    assert auto.recording_to == str(tmp_path / "copy" / "c.local.jsonl")


def test_the_sibling_of_a_cassette() -> None:
    assert lion_nb.cassettes.sibling("data/x.cassette.jsonl") == "data/x.local.cassette.jsonl"
    assert lion_nb.cassettes.sibling("c.jsonl") == "c.local.jsonl"
    assert lion_nb.cassettes.sibling("tape") == "tape.local"


async def test_a_miss_names_the_recording_at_the_same_position_in_the_session(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.jsonl"
    with lion_nb.cassette(path, mode="record"):
        branch = Branch(system=SYSTEM, chat_model=scripted("A1.", "A2.", "A3."))
        for prompt in ("first question", "second question", "third question"):
            await branch.communicate(prompt)
    edited = Branch(system=SYSTEM, chat_model=absent())
    with lion_nb.cassette(path, mode="replay", speed=None), pytest.raises(CassetteMiss) as info:
        await edited.communicate("first question")
        await edited.communicate("second question, edited")
    miss = info.value
    assert miss.nearest is not None and miss.nearest["call"] == 2  # not call 1
    assert miss.differences == [
        ("messages[3].content", "second question", "second question, edited")
    ]
    text = str(miss)
    assert "closest recording (call 2, line 3) differs in messages[3].content: recorded" in text
    assert len(text) - len(str(path)) < 350 and "\n" not in text  # short: a sentence a point
    shown = miss._render_traceback_()  # IPython: a few lines, no traceback
    assert shown[0] == f"CassetteMiss: {text}" and len(shown) <= 4


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
