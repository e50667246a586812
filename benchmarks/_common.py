"""Shared helpers for the benchmark scripts: timing, medians, JSON output."""

from __future__ import annotations

import json
import statistics
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
