"""Shared helpers for the benchmark scripts: timing, medians, JSON output."""

from __future__ import annotations

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
