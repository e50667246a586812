"""``Grid.run(engine="ray")``: every cell a Ray task, its figures read in the notebook."""

from __future__ import annotations

import os
import sys

import pytest
from ray import cloudpickle

from lion_nb import Grid, iModel

# Test functions travel by value, as a notebook's do (see tests/flow/test_ray_engine.py).
cloudpickle.register_pickle_by_value(sys.modules[__name__])

pytestmark = pytest.mark.usefixtures("ray_local")


def tagged(request) -> dict:
    """The reply names the system it was sent with and the prompt, word by word."""
    system, prompt = request.messages[0]["content"], request.messages[-1]["content"]
    return {"text": f"{system} {prompt}", "delay": 0.02}


async def test_a_grid_runs_on_ray_and_reruns_a_column_there() -> None:
    model = iModel(provider="scripted", default_reply=tagged)
    grid = Grid(["one", "two"], {"plain": (model, "Plain:"), "odd": (model, "Odd:")})
    await grid.run(engine="ray", max_concurrent=4)
    for cell in grid.cells():
        assert cell.status == "done", cell.error
        assert cell.text == f"{cell.label.capitalize()}: {cell.prompt}"
        assert cell.node.metadata["ray"]["attempts"][0]["pid"] != os.getpid()
        assert cell.usage.output_tokens > 0 and cell.latency_ms > 0
        # the grid watched the cell's stream until its first delta: relayed from the worker
        assert cell.first_token_ms is not None and 0 < cell.first_token_ms <= cell.latency_ms
        assert [m.role for m in cell.branch.messages] == ["system", "user", "assistant"]
    first = grid[1, 1].branch
    await grid.run(engine="ray", columns=["odd"])
    assert [c.attempt for c in grid.cells()] == [0, 1, 0, 1]
    assert grid[1, 1].branch is not first and first.messages[-1].text == "Odd: two"
    assert grid[1, 1].text == "Odd: two" and grid[1, 1].status == "done"
