"""B8: flows in the kernel vs on Ray (issue 17).

    .venv/bin/python benchmarks/bench_flow.py [--quick] [--out benchmarks/results/bench_flow.json]

* ``ray_start_s``: ``ray.init(num_cpus=2, include_dashboard=False)`` on this machine.
* fan-out: ``session.map("communicate", N rows)`` on a scripted model, local vs Ray (the first
  Ray run warms the workers and the relay; the figure is the second run).
* per-node overhead: N nodes on a scripted model with 50 ms latency, one at a time
  (``max_concurrent=1``): (wall / N) - 50 ms, local and Ray.
* the embedded model over P prompts on 1 vs 2 Ray worker processes (one llama.cpp thread each,
  ``num_cpus=1`` per task; ``max_concurrent`` 1 vs 2): throughput ratio.
"""

from __future__ import annotations

import argparse
import asyncio
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out")
    parser.add_argument("--embedded-only", action="store_true", help="only the embedded model")
    parser.add_argument("--tokens", type=int, default=32, help="max_tokens per embedded prompt")
    args = parser.parse_args()
    rows, nodes = (50, 40) if args.quick else (100, 200)
    prompts = 8 if args.quick else 40

    import ray

    started = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    result: dict[str, Any] = {"ray_start_s": time.perf_counter() - started}
    try:
        if not args.embedded_only:
            scripted_runs(result, rows, nodes)
        if local_model_available():
            asyncio.run(embedded(2, 2, 16))  # warm-up: both workers load the model
            one = asyncio.run(embedded(prompts, 1, args.tokens))
            two = asyncio.run(embedded(prompts, 2, args.tokens))
            result.update(
                {
                    f"embedded_{prompts}_1_worker_s": one,
                    f"embedded_{prompts}_2_workers_s": two,
                    "embedded_throughput_ratio": one / two,
                }
            )
    finally:
        ray.shutdown()
    for key, value in result.items():
        print(f"{key:32s} {value:10.3f}")
    write_result(args.out, {"B8": result})


if __name__ == "__main__":
    main()
