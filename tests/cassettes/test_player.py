"""Replay at the recorded pace: speed 1, 10 and at once, API and CLI streams."""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path

import lion_nb
from lion_nb import Branch
from tests.support.cassette_traces import absent, scripted

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
