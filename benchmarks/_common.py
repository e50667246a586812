"""Shared helpers for the benchmark scripts: timing, medians, JSON output."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def median_of(runs: int, fn: Callable[[], float]) -> tuple[float, list[float]]:
    samples = [fn() for _ in range(runs)]
    return statistics.median(samples), samples


def write_result(out: str | None, result: dict[str, Any]) -> None:
    text = json.dumps(result, indent=2)
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(text + "\n")
    else:
        sys.stdout.write(text + "\n")


def now() -> float:
    return time.perf_counter()


def browser_test_figures(test: str, figures: Path, root: Path, tries: int = 2) -> dict[str, Any]:
    """Run one browser test that writes its figures to ``figures`` (a JSON file) and read them;
    tried again once when it wrote nothing (on a busy machine JupyterLab's kernel can be slow to
    start)."""
    for _ in range(tries):
        figures.unlink(missing_ok=True)
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", test],
            cwd=root,
            env={**os.environ, "PYTHONPATH": str(root)},
            capture_output=True,
            text=True,
            timeout=1800,
        )
        if figures.exists():
            return json.loads(figures.read_text())  # type: ignore[no-any-return]
    raise RuntimeError(f"the browser test wrote no figures:\n{done.stdout[-3000:]}")


def rounds_main(
    one_round: Callable[[], dict[str, Any]],
    rows_of: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
    benchmark: str,
) -> None:
    """The command line of a benchmark measured in rounds (the browser ones): ``--quick`` for
    one round instead of three, ``--out FILE``; prints each row against its goal (and the load
    the rounds ran at, when they noted it), writes the rows, exits 1 when a goal is missed."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    parser.add_argument("--quick", action="store_true", help="one round instead of three")
    args = parser.parse_args()
    rounds = [one_round() for _ in range(1 if args.quick else 3)]
    rows = rows_of(rounds)
    width = max(len(r["name"]) for r in rows) + 2
    for r in rows:
        mark = "" if r["met"] is None else ("met" if r["met"] else "MISSED")
        print(
            f"{r['name']:<{width}} {r['lion_nb']:>10,.2f} {r['unit']:<10} {r['target']:<22} {mark}"
        )
    if all("load_1min" in r for r in rounds):
        print("load (1 min):", [r["load_1min"] for r in rounds])
    write_result(args.out, {"benchmark": benchmark, "rows": rows, "rounds": len(rounds)})
    sys.exit(0 if all(r["met"] is not False for r in rows) else 1)
