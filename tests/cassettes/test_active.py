"""Which cassette is in force: the innermost ``with`` block, else ``use_cassette``'s default."""

from __future__ import annotations

import asyncio
from pathlib import Path

import lion_nb
from lion_nb.cassettes import active


async def test_a_block_wins_over_the_default_and_tasks_inherit_it(tmp_path: Path) -> None:
    default = lion_nb.use_cassette(tmp_path / "default.jsonl")
    try:
        assert active.current() is default
        with lion_nb.cassette(tmp_path / "block.jsonl") as block:
            assert active.current() is block

            async def inside() -> object:
                return active.current()

            assert await asyncio.create_task(inside()) is block
        assert active.current() is default
    finally:
        lion_nb.use_cassette(None)
    assert active.current() is None


def test_set_default_returns_the_previous_one(tmp_path: Path) -> None:
    first = lion_nb.use_cassette(tmp_path / "a.jsonl")
    try:
        assert active.set_default(None) is first
        assert active.current() is None
    finally:
        lion_nb.use_cassette(None)
