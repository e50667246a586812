"""The cassette in force reaches Ray workers: a grid recorded in this kernel replays on Ray, in
the same mode and under the same name, and a strict replay fails a cell whose prompt it lacks."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from ray import cloudpickle

from lion_nb import Grid, iModel
from lion_nb.cassettes.cassette import cassette
from lion_nb.errors import CassetteMiss

# Test functions travel by value, as a notebook's do (see tests/flow/test_ray_engine.py).
cloudpickle.register_pickle_by_value(sys.modules[__name__])

PROMPTS = ["one", "two"]


def said(word: str):
    def reply(request) -> str:
        return f"{word}: {request.messages[-1]['content']}"

    return reply


def grid_of(word: str, prompts: list[str] = PROMPTS) -> Grid:
    model = iModel(provider="scripted", default_reply=said(word))
    return Grid(prompts, {"a": (model, "A."), "b": (model, "B.")})


@pytest.mark.usefixtures("ray_local")
async def test_a_grid_recorded_here_replays_on_ray_workers(tmp_path: Path) -> None:
    path = tmp_path / "grid.cassette.jsonl"
    with cassette(path, mode="auto", speed=None):
        await grid_of("recorded").run()
    # the same grid, with a model that would answer otherwise, strictly from the cassette
    on_ray = grid_of("live")
    with cassette(path, mode="replay", speed=None) as tape:
        await on_ray.run(engine="ray")
    for cell in on_ray.cells():
        assert cell.status == "done", cell.error
        assert cell.text == f"recorded: {cell.prompt}"
        assert cell.node.metadata["ray"]["attempts"][0]["pid"] != os.getpid()
        replayed = cell.branch.messages[-1].metadata["replayed"]
        assert replayed["cassette"] == str(path)  # the notebook's cassette, not a worker's copy
    assert tape.replayed == 0  # the workers replayed, each from its own copy


@pytest.mark.usefixtures("ray_local")
async def test_a_strict_replay_on_ray_fails_the_cell_it_lacks(tmp_path: Path) -> None:
    path = tmp_path / "grid.cassette.jsonl"
    with cassette(path, mode="auto", speed=None):
        await grid_of("recorded", ["one"]).run()
    grid = grid_of("live", ["one", "three"])
    with cassette(path, mode="replay", speed=None):
        await grid.run(engine="ray")
    assert [c.status for c in grid.cells()] == ["done", "done", "failed", "failed"]
    assert isinstance(grid[1, 0].failure, CassetteMiss)
    assert f"not on the cassette {str(path)!r}: 'three'" in grid[1, 0].error
