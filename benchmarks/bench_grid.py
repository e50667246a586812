"""The grid in the kernel: a 5 x 3 grid on the scripted model, and its overhead per cell.

    .venv/bin/python benchmarks/bench_grid.py [--runs R | --quick] [--out benchmarks/results/bench_grid.json]

* wall time of a 5 x 3 grid (15 cells, each a reply of 20 words streamed at 10 ms a word,
  ~200 ms) at ``max_concurrent`` 8 and 1, medians of ``--runs`` alternating runs; the ideal is
  2 waves of 8 (~0.4 s) against 15 cells one after another (~3 s).
* kernel overhead per cell: 15 cells on a scripted model with 50 ms latency (one delta after
  50 ms), one at a time: (wall / 15) - 50 ms, beside the same 15 as ``Session.map`` nodes (the
  flow engine's own per-node figure, B8's baseline): what the grid adds is the difference.

Printed with the 1-minute load average it was measured at; ``rows`` are B19's kernel rows in
``make bench`` (``benchmarks/run_all.py``): the overhead per cell against its goal (<= 5 ms),
the flow engine's per-node figure measured in the same run as its baseline, and the wall times.
The grid in the browser is ``benchmarks/bench_grid_browser.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import write_result
from lion_nb import Grid, Session, iModel

ROWS, COLUMNS = 5, 3
WORDS, WORD_S = 20, 0.01
LATENCY_S = 0.05


def streaming_model(tag: str) -> iModel:
    return iModel(
        provider="scripted",
        default_reply={"chunks": [f"{tag} "] * WORDS, "delay": WORD_S},
    )


def latency_model() -> iModel:
    return iModel(provider="scripted", default_reply={"chunks": ["ok"], "delay": LATENCY_S})


async def grid_wall(max_concurrent: int) -> float:
    grid = Grid(
        [f"Prompt {i}" for i in range(ROWS)],
        {f"m{j}": streaming_model(f"m{j}") for j in range(COLUMNS)},
    )
    started = time.perf_counter()
    await grid.run(max_concurrent=max_concurrent)
    wall = time.perf_counter() - started
    assert all(c.status == "done" for c in grid.cells()), grid
    return wall


async def grid_overhead_ms() -> float:
    grid = Grid([f"Prompt {i}" for i in range(ROWS)], [latency_model() for _ in range(COLUMNS)])
    started = time.perf_counter()
    await grid.run(max_concurrent=1)
    cells = ROWS * COLUMNS
    return ((time.perf_counter() - started) / cells - LATENCY_S) * 1000.0


async def map_overhead_ms() -> float:
    session = Session()
    template = session.new_branch(chat_model=latency_model())
    rows = [{"instruction": f"Prompt {i}"} for i in range(ROWS * COLUMNS)]
    started = time.perf_counter()
    await session.map("communicate", rows, template=template, max_concurrent=1)
    return ((time.perf_counter() - started) / len(rows) - LATENCY_S) * 1000.0


async def measure(runs: int) -> dict[str, Any]:
    await grid_wall(8)  # warm: the verbs' modules, the scripted provider
    walls: dict[int, list[float]] = {8: [], 1: []}
    grid_over: list[float] = []
    map_over: list[float] = []
    for _ in range(runs):
        for bound in (8, 1):
            walls[bound].append(await grid_wall(bound))
        grid_over.append(await grid_overhead_ms())
        map_over.append(await map_overhead_ms())
    wall8, wall1 = statistics.median(walls[8]), statistics.median(walls[1])
    return {
        "grid": f"{ROWS}x{COLUMNS}, {WORDS} words at {WORD_S * 1000:.0f} ms each",
        "wall_max_concurrent_8_s": round(wall8, 3),
        "wall_max_concurrent_1_s": round(wall1, 3),
        "speedup": round(wall1 / wall8, 2),
        "overhead_per_cell_ms": round(statistics.median(grid_over), 2),
        "map_overhead_per_node_ms": round(statistics.median(map_over), 2),
        "runs": runs,
        "load_1min": round(os.getloadavg()[0], 2),
    }


GOAL_OVERHEAD_MS = 5.0


def rows_of(result: dict[str, Any]) -> list[dict[str, Any]]:
    """B19's kernel rows: what the grid adds per cell, and how well it runs cells at once."""
    over, base = result["overhead_per_cell_ms"], result["map_overhead_per_node_ms"]
    load = result["load_1min"]
    return [
        {
            "name": "B19 grid overhead per cell (50 ms model)",
            "unit": "ms/cell",
            "lion_nb": over,
            "baseline": base,  # the same cells as Session.map nodes: B8's per-node figure
            "ratio": over / max(base, 1e-9),
            "target": f"≤ {GOAL_OVERHEAD_MS:g} ms (baseline: Session.map per node; load {load})",
            "met": over <= GOAL_OVERHEAD_MS,
        },
        {
            "name": f"B19 grid {ROWS}x{COLUMNS} wall, max_concurrent 8",
            "unit": "s",
            "lion_nb": result["wall_max_concurrent_8_s"],
            "baseline": result["wall_max_concurrent_1_s"],  # one cell after another
            "ratio": result["wall_max_concurrent_8_s"] / result["wall_max_concurrent_1_s"],
            "target": "report (baseline: max_concurrent 1)",
            "met": None,
        },
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="two runs instead of --runs")
    parser.add_argument("--out")
    args = parser.parse_args()
    result = asyncio.run(measure(2 if args.quick else args.runs))
    result["rows"] = rows_of(result)
    write_result(args.out, result)
    sys.exit(0 if all(r["met"] is not False for r in result["rows"]) else 1)


if __name__ == "__main__":
    main()
