"""The cassette in force reaches Ray workers: a grid recorded in this kernel replays on Ray, in
the same mode and under the same name, a strict replay fails a cell whose prompt it lacks, and a
worker's copy never records."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from ray import cloudpickle

from lion_nb import Branch, Grid, iModel
from lion_nb.cassettes.cassette import cassette
from lion_nb.errors import CassetteMiss
from lion_nb.flow.ray_cassette import cassette_part, worker_cassette

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


def gone(path: Path) -> bool:
    return not path.exists()


async def test_a_worker_replays_what_it_has_and_never_records(tmp_path: Path) -> None:
    path = tmp_path / "c.cassette.jsonl"
    with cassette(path, mode="auto", speed=None):
        await Branch(chat_model=iModel(provider="scripted", replies=["A."])).communicate("a")
        part = cassette_part()
    before = sorted(os.listdir(tmp_path)), path.read_bytes()
    live = iModel(provider="scripted", default_reply=said("live"))
    with worker_cassette(part) as copy:  # as on the worker, with the lines inline
        assert await Branch(chat_model=live).communicate("a") == "A."
        assert await Branch(chat_model=live).communicate("b") == "live: b"  # "auto": made live
    assert copy is not None and copy.shown == str(path) and gone(copy.path)
    assert (sorted(os.listdir(tmp_path)), path.read_bytes()) == before
    with cassette(path, mode="record"):
        assert cassette_part() is None  # "record" calls the models: a worker gets no cassette
