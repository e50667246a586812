"""Run All per tutorial notebook: each notebook executed top to bottom in a fresh ipykernel
(nbclient, as the test suite does), timed from the first cell sent to the last output; the
figures docs/performance.md's notebook table quotes.

    .venv/bin/python benchmarks/notebook_times.py [--runs N] [--only 08_flows.ipynb ...]
        [--out benchmarks/results/notebook_times.json]

Each notebook runs as a user's Run All does: notebook 08 starts its own local Ray cluster
(``RAY_ADDRESS`` is removed), notebook 01 answers live when the embedded model is installed.
Shipped cassettes are only replayed (``LION_NB_CASSETTE_MODE=replay``), so nothing under
``notebooks/data`` changes, and notebook 02 replays its recorded agent session
(``LION_NB_REPLAY=1``), as on a machine without ``claude``. The kernel start is not counted (JupyterLab has a kernel running
before Run All). Prints the median of ``--runs`` per notebook with the load average.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
NOTEBOOKS = ROOT / "notebooks"
sys.path.insert(0, str(HERE))

from _common import write_result  # noqa: E402


def run_all(name: str) -> float:
    import nbformat
    from nbclient import NotebookClient

    scratch = tempfile.mkdtemp(prefix="nbtimes")
    ray_tmp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # Ray's socket paths must stay short
    saved = dict(os.environ)
    os.environ.pop("RAY_ADDRESS", None)
    os.environ.update(
        {
            "LION_NB_CASSETTE_MODE": "replay",
            "LION_NB_REPLAY": "1",
            "TMPDIR": scratch,
            "RAY_TMPDIR": ray_tmp,
        }
    )
    try:
        nb = nbformat.read(NOTEBOOKS / name, as_version=4)
        client = NotebookClient(
            nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}
        )
        with client.setup_kernel():
            started = time.perf_counter()
            for index, cell in enumerate(nb.cells):
                client.execute_cell(cell, index)
            return time.perf_counter() - started
    finally:
        os.environ.clear()
        os.environ.update(saved)
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(ray_tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--only", nargs="*", help="notebook file names")
    parser.add_argument("--out")
    args = parser.parse_args()
    names = args.only or sorted(p.name for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    rows: list[dict[str, Any]] = []
    for name in names:
        samples, loads = [], []
        for _ in range(args.runs):
            samples.append(run_all(name))
            loads.append(round(os.getloadavg()[0], 2))
        row = {"notebook": name, "median_s": statistics.median(samples), "load_1min": loads}
        row["samples"] = [round(s, 2) for s in samples]
        rows.append(row)
        print(f"{name:32s} {row['median_s']:7.1f} s  {row['samples']}  load {loads}", flush=True)
    write_result(args.out, {"notebook_times": rows})


if __name__ == "__main__":
    main()
