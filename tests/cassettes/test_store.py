"""The cassette file: header and stable line format, damaged lines per mode (nothing lost),
format versions, atomic writes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import lion_nb
from lion_nb import Branch, iModel
from lion_nb.cassettes import CassetteWarning
from lion_nb.cassettes.store import Damaged, Recording, read, write
from lion_nb.errors import CassetteError


def scripted(*replies: str) -> iModel:
    return iModel(provider="scripted", replies=list(replies))


async def record(path: Path, *pairs: tuple[str, str], mode: str = "record") -> None:
    with lion_nb.cassette(path, mode=mode):  # type: ignore[arg-type]
        for prompt, reply in pairs:
            await Branch(chat_model=scripted(reply)).communicate(prompt)


async def test_the_file_is_a_header_then_one_readable_line_per_call(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    await record(path, ("Où est Paris ?", "En France."), ("b", "B."))
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == '{"format": "lion_nb.cassette", "version": 1}'
    assert len(lines) == 3 and path.read_text().endswith("\n")
    first = json.loads(lines[1])
    assert list(first) == ["call", "kind", "request", "events", "response", "end", "recorded_at"]
    assert list(first["request"]) == ["provider", "model", "messages"]
    assert list(first["request"]["messages"][0]) == ["content", "role"]  # nested keys sorted
    assert "Où est Paris ?" in lines[1]  # readable, not \\u escapes
    assert [json.loads(line)["call"] for line in lines[1:]] == [1, 2]
    assert oct(path.stat().st_mode & 0o777) == "0o644"  # shareable, not mkstemp's 0600


async def test_a_damaged_line_is_an_error_in_replay_mode(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    await record(path, ("a", "A."), ("b", "B."))
    lines = path.read_text().splitlines()
    lines[1] = lines[1][:40]  # torn
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(CassetteError) as info:
        lion_nb.cassette(path, mode="replay")
    assert "line 2: not JSON" in str(info.value) and info.value.line == 2


async def test_auto_mode_skips_damaged_lines_and_a_rewrite_keeps_them(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    await record(path, ("a", "A."), ("b", "B."))
    lines = path.read_text().splitlines()
    wrong_shape = '{"call": 9, "kind": "video", "request": {}, "events": []}'
    lines.insert(2, wrong_shape)
    path.write_text("\n".join(lines) + "\n")
    with pytest.warns(CassetteWarning, match=r"line 3: 'kind' must be 'api' or 'cli'"):
        tape = lion_nb.cassette(path, mode="auto", record_to=path)  # rewrite this very file
    with tape:
        assert await Branch(chat_model=scripted()).communicate("b") == "B."  # still replays
        assert await Branch(chat_model=scripted("C.")).communicate("c") == "C."  # recorded
    after = path.read_text().splitlines()
    assert after[2] == wrong_shape  # kept verbatim, where it was
    assert [json.loads(line).get("call") for line in after[1:]] == [1, 9, 2, 3]
    assert len(tape) == 3


async def test_a_newer_format_version_is_refused_in_every_mode(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"format": "lion_nb.cassette", "version": 99}\n')
    for mode in ("auto", "record", "replay"):
        with pytest.raises(CassetteError, match="format version 99"):
            lion_nb.cassette(path, mode=mode)  # type: ignore[arg-type]


async def test_a_failed_write_keeps_the_old_file_and_the_reply(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "c.jsonl"
    await record(path, ("a", "A."))
    before = path.read_bytes()

    def no_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", no_disk)
    with (
        pytest.warns(CassetteWarning, match="kept in memory"),
        lion_nb.cassette(path, mode="auto", record_to=path),
    ):
        assert await Branch(chat_model=scripted("B.")).communicate("b") == "B."
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["c.jsonl"]  # no temporary file left


def test_write_then_read_round_trips_recordings_and_damaged_lines(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    rec = Recording(kind="cli", request={"provider": "p", "prompt": "x"}, events=[], end=0.5)
    items = [rec, Damaged(0, "garbage", "not JSON")]
    write(path, items, [])
    back = read(path)
    assert isinstance(back[0], Recording) and back[0].key == rec.key and back[0].end == 0.5
    assert isinstance(back[1], Damaged) and back[1].text == "garbage" and back[1].line == 3
    assert read(tmp_path / "missing.jsonl") == []


async def test_two_cassettes_on_one_file_add_to_it_not_over_each_other(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    outer = lion_nb.use_cassette(path)  # the notebook's cassette ...
    try:
        with lion_nb.cassette(path):  # ... and a cell's block on the same file
            await Branch(chat_model=scripted("A.")).communicate("a")
        await Branch(chat_model=scripted("B.")).communicate("b")  # through the outer one
    finally:
        lion_nb.use_cassette(None)
    assert outer is not None and len(outer) == 2
    with lion_nb.cassette(path, mode="replay"):
        assert await Branch(chat_model=scripted()).communicate("a") == "A."
        assert await Branch(chat_model=scripted()).communicate("b") == "B."


async def test_a_rewrite_keeps_what_this_version_does_not_know(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    await record(path, ("a", "A."))
    lines = path.read_text(encoding="utf-8").splitlines()
    noted = json.loads(lines[1])
    noted["note"] = "checked by the teacher"
    lines[1] = json.dumps(noted, ensure_ascii=False)
    # and a second cassette pasted below the first, header included
    path.write_text("\n".join([*lines, lines[0]]) + "\n", encoding="utf-8")
    await record(path, ("b", "B."))
    after = path.read_text(encoding="utf-8").splitlines()
    assert after[1] == lines[1]  # verbatim
    assert [json.loads(line).get("call") for line in after[1:]] == [1, 2]
