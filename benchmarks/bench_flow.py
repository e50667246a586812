"""B8: flows in the kernel vs on Ray.

    .venv/bin/python benchmarks/bench_flow.py [--quick] [--prompts N] [--tokens T] [--runs R]
        [--embedded-only | --start-only] [--out benchmarks/results/bench_flow.json]

Every figure is printed with the 1-minute load average it was measured at.

* Ray start (medians of ``--runs``, each in a fresh interpreter, ``import ray`` included, see
  ``ray_start_side.py``): ``start_ray(num_cpus=2, defer_imports=True)`` (a new local cluster,
  with the opt-in start-up shortcut), the same start as a plain
  ``ray.init(address="local", num_cpus=2, include_dashboard=False)`` (the baseline), and
  ``start_ray(address=...)`` joining a running cluster
  (``python -m lion_nb.flow.ray_start --defer-imports``).
* fan-out: ``session.map("communicate", N rows)`` on a scripted model, local vs Ray (the first
  Ray run warms the workers and the relay; the figure is the second run).
* per-node overhead: N nodes on a scripted model with 50 ms latency, one at a time
  (``max_concurrent=1``): (wall / N) - 50 ms, local and Ray.
* the embedded model over P prompts (``--prompts``) on 1 vs 2 Ray worker processes (one
  llama.cpp thread each, ``num_cpus=1`` per task; ``max_concurrent`` 1 vs 2): throughput
  ratio, median of ``--runs`` pairs; beside it the machine's own two-process ceiling measured in
  the same run: the same prompts answered by one plain process vs split over two plain processes
  started together (``embedded_side.py``), no Ray, at the niceness Ray gives its workers (15).
  Nothing watches these nodes' streams, as in a ``session.map`` without a view: their workers
  relay lifecycle signals and messages, not per-token deltas (``lion_nb.flow.ray_engine``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import write_result  # noqa: E402

from lion_nb.models.imodel import iModel, local_model_available  # noqa: E402
from lion_nb.session.session import Session  # noqa: E402

LATENCY_S = 0.05
# Ray runs its workers at this nice value; the ceiling's plain processes run at the same
RAY_WORKER_NICENESS = os.environ.get("RAY_worker_niceness", "15")


async def fan_out(rows: int, engine: str) -> float:
    session = Session()
    template = session.new_branch(chat_model=iModel(provider="scripted", default_reply="ok"))
    inputs = [{"instruction": f"Summarise: row {i}"} for i in range(rows)]
    started = time.perf_counter()
    outs = await session.map("communicate", inputs, template=template, engine=engine)
    elapsed = time.perf_counter() - started
    assert outs == ["ok"] * rows, outs[:3]
    return elapsed


async def sequential(nodes: int, engine: str) -> float:
    session = Session()
    reply = {"text": "ok", "chunks": ["ok"], "delay": LATENCY_S}
    template = session.new_branch(chat_model=iModel(provider="scripted", default_reply=reply))
    inputs = [{"instruction": f"row {i}"} for i in range(nodes)]
    started = time.perf_counter()
    outs = await session.map(
        "communicate", inputs, template=template, engine=engine, max_concurrent=1
    )
    elapsed = time.perf_counter() - started
    assert outs == ["ok"] * nodes
    return elapsed


async def embedded(prompts: int, workers: int, max_tokens: int) -> float:
    session = Session()
    model = iModel(provider="local", n_threads=1, max_tokens=max_tokens, temperature=0)
    template = session.new_branch(chat_model=model)
    inputs = [{"instruction": f"Write one sentence about the number {i}."} for i in range(prompts)]
    started = time.perf_counter()
    nodes = await session.map(
        "communicate",
        inputs,
        template=template,
        engine="ray",
        max_concurrent=workers,
        return_nodes=True,
        ray_options={"num_cpus": 1},
    )
    elapsed = time.perf_counter() - started
    failed = [n.error for n in nodes if n.response is None]
    assert not failed, failed[:1]
    return elapsed


def scripted_runs(result: dict[str, Any], rows: int, nodes: int) -> None:
    result[f"fanout_{rows}_local_s"] = asyncio.run(fan_out(rows, "local"))
    asyncio.run(fan_out(rows, "ray"))  # warm-up: workers, relay
    result[f"fanout_{rows}_ray_s"] = asyncio.run(fan_out(rows, "ray"))
    for engine in ("local", "ray"):
        wall = asyncio.run(sequential(nodes, engine))
        result[f"seq_{nodes}_{engine}_s"] = wall
        result[f"overhead_per_node_{engine}_ms"] = (wall / nodes - LATENCY_S) * 1000.0


def load() -> float:
    return round(os.getloadavg()[0], 2)


def _side(*args: str, stdin: Any = None) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    return subprocess.Popen(
        [sys.executable, *args], env=env, stdin=stdin, stdout=subprocess.PIPE, text=True
    )


def start_once(mode: str, address: str | None = None) -> dict[str, float]:
    """One sample; a start that failed counts as taking forever (and is counted)."""
    side = _side(str(HERE / "ray_start_side.py"), mode, *([address] if address else []))
    out, _ = side.communicate(timeout=300)
    lines = out.strip().splitlines()
    if side.returncode != 0 or not lines:
        sample = {"ready_s": float("inf"), "first_task_s": float("inf"), "failed": 1.0}
        sample["load_1min"] = load()
    else:
        sample = json.loads(lines[-1])
    print(f"  {mode}: {sample}", file=sys.stderr, flush=True)
    return sample


def median_row(samples: list[dict[str, float]], key: str) -> dict[str, Any]:
    return {
        "median": statistics.median(s[key] for s in samples),
        "samples": [round(s[key], 2) for s in samples],
        "load_1min": [s["load_1min"] for s in samples],
        "failed": sum(1 for s in samples if s.get("failed")),
    }


def start_runs(result: dict[str, Any], runs: int) -> None:
    """Fresh local clusters (start_ray and plain ray.init, alternated so load hits both alike),
    then joins of a running one."""
    ours: list[dict[str, float]] = []
    plain: list[dict[str, float]] = []
    for _ in range(runs):
        ours.append(start_once("start_ray"))
        plain.append(start_once("plain"))
    result["ray_start"] = median_row(ours, "ready_s")
    result["ray_start_first_task"] = median_row(ours, "first_task_s")
    result["ray_start_plain"] = median_row(plain, "ready_s")
    head = _side("-m", "lion_nb.flow.ray_start", "--num-cpus=2", "--defer-imports")
    try:
        assert head.stdout is not None
        line = head.stdout.readline()
        address = line.split("RAY_ADDRESS=", 1)[1].split()[0]
        joins = [start_once("join", address) for _ in range(runs)]
    finally:
        head.send_signal(signal.SIGTERM)
        head.wait(60)
    result["ray_join"] = median_row(joins, "ready_s")


def ceiling_once(prompts: int, tokens: int) -> float:
    """Plain processes, no Ray: one answering all prompts vs two answering half each, started
    together once both have loaded the model. Returns the throughput ratio."""

    def timed(*halves: tuple[int, int]) -> float:
        sides = [
            _side(
                str(HERE / "embedded_side.py"),
                *(str(a), str(n), str(tokens), RAY_WORKER_NICENESS),
                stdin=subprocess.PIPE,
            )
            for a, n in halves
        ]
        for side in sides:
            assert side.stdout is not None and side.stdout.readline().strip() == "ready"
        for side in sides:
            assert side.stdin is not None
            side.stdin.write("go\n")
            side.stdin.flush()
        return max(float(side.communicate(timeout=1800)[0].split()[-1]) for side in sides)

    half = prompts // 2
    one = timed((0, prompts))
    two = timed((0, half), (half, prompts - half))
    return one / two


def embedded_runs(result: dict[str, Any], prompts: int, tokens: int, runs: int) -> None:
    asyncio.run(embedded(2, 2, 16))  # warm-up: both workers load the model
    ones, twos, ratios, ceilings, loads = [], [], [], [], []
    for _ in range(runs):
        one = asyncio.run(embedded(prompts, 1, tokens))
        two = asyncio.run(embedded(prompts, 2, tokens))
        ones.append(one)
        twos.append(two)
        ratios.append(one / two)
        ceilings.append(ceiling_once(prompts, tokens))
        loads.append(load())
    result.update(
        {
            f"embedded_{prompts}_1_worker_s": statistics.median(ones),
            f"embedded_{prompts}_2_workers_s": statistics.median(twos),
            "embedded_throughput_ratio": statistics.median(ratios),
            "embedded_ratio_samples": [round(r, 3) for r in ratios],
            "two_process_ceiling": statistics.median(ceilings),
            "two_process_ceiling_samples": [round(c, 3) for c in ceilings],
            "embedded_load_1min": loads,
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out")
    parser.add_argument("--embedded-only", action="store_true", help="only the embedded model")
    parser.add_argument("--start-only", action="store_true", help="only Ray's start")
    parser.add_argument("--prompts", type=int, default=None, help="embedded prompts (16; 8 quick)")
    parser.add_argument("--tokens", type=int, default=32, help="max_tokens per embedded prompt")
    parser.add_argument("--runs", type=int, default=3, help="samples per median")
    args = parser.parse_args()
    rows, nodes = (50, 40) if args.quick else (100, 200)
    prompts = args.prompts or (8 if args.quick else 16)

    from lion_nb.flow.ray_start import start_ray

    result: dict[str, Any] = {}
    if not args.embedded_only:
        start_runs(result, args.runs)
    if args.start_only:
        return _report(result, args.out)
    start_ray(num_cpus=2, address="local", defer_imports=True)
    import ray

    try:
        if not args.embedded_only:
            scripted_runs(result, rows, nodes)
        if local_model_available():
            embedded_runs(result, prompts, args.tokens, args.runs)
    finally:
        ray.shutdown()
    _report(result, args.out)


def _report(result: dict[str, Any], out: str | None) -> None:
    for key, value in result.items():
        if isinstance(value, dict):
            print(
                f"{key:32s} {value['median']:10.3f}  {value['samples']}  load {value['load_1min']}"
            )
        elif isinstance(value, list):
            print(f"{key:32s} {value}")
        else:
            print(f"{key:32s} {value:10.3f}")
    write_result(out, {"B8": result})


if __name__ == "__main__":
    main()
