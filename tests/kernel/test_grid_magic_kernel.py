"""``%%lion --grid`` inside a real ipykernel: the cell returns while the grid runs, its result
is ``_``; ``--name`` and ``--wait``."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(120)]

MODELS = """
%load_ext lion_nb
from lion_nb import iModel
def echo(tag):
    return iModel(provider="scripted", default_reply=lambda r: {
        "chunks": [tag, ": ", r.messages[-1]["content"]], "delay": 0.05})
fast, slow = echo("fast"), echo("slow")
"""

SETTLED = """
import asyncio
while any(c.status in ("pending", "running") for c in grid.cells()):
    await asyncio.sleep(0.02)
"""


def test_the_grid_form_runs_in_the_background_and_is_the_cells_result(kernel) -> None:
    kernel.run(MODELS)
    cell = kernel.run("%%lion --grid --model fast --model slow\nRed?\nBlue?")
    assert cell.status == "ok" and any("<Grid 2×2" in str(o) for o in cell.outputs)
    assert kernel.value("type(_).__name__") == "Grid"  # the cell's result
    kernel.run("grid = _")
    assert kernel.value("grid.is_running or any(c.status == 'pending' for c in grid.cells())")
    kernel.run(SETTLED)
    texts = kernel.value("[c.text for c in grid.cells()]")
    assert texts == ["fast: Red?", "slow: Red?", "fast: Blue?", "slow: Blue?"]
    kernel.run("%%lion --grid --model fast --name colours --wait\nGreen?")
    assert kernel.value("[c.status for c in colours.cells()]") == ["done"]
