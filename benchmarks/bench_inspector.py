"""B5: opening the progression inspector on long branches, and the memory a message costs.

Measures, for branches of 1,000 and 10,000 messages (median of several runs):

* ``open_ms``: ``ProgressionInspector(branch)`` plus its display bundle (widget view, static
  HTML and text), in this process;
* ``page_ms`` / ``expand_ms``: showing another page, and expanding a message deep in the branch
  (its detail compiles the payload of every message before it);
* ``kernel_display_ms``: the same in a real ipykernel, from ``execute_request`` until the
  kernel is idle again, with the comm messages and bytes the display sent (what a browser
  receives: one page of widgets, whatever the branch length);
* ``bytes_per_message``: memory a recorded message costs in a branch (tracemalloc), for a
  typical instruction/reply pair with usage metadata.

    .venv/bin/python benchmarks/bench_inspector.py --out test-artifacts/b5.json
    .venv/bin/python benchmarks/bench_inspector.py --quick        # no kernel, 3 runs

Target: the inspector opens a 10,000-message branch in under 1 s.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import write_result

SIZES = (1_000, 10_000)

BUILD = r"""
from lion_nb import Branch, iModel
from lion_nb.messages import AssistantResponse, Instruction

def build(n):
    branch = Branch(system="You are a careful assistant.",
                    chat_model=iModel(provider="scripted", replies=[]))
    for i in range((n - 1) // 2):
        branch.add_message(Instruction(instruction=f"Question {i}: how does step {i} work?",
                                       context=[{"step": i}]))
        branch.add_message(AssistantResponse(
            response=f"Step {i} works like this: **first** do a, then b. " * 3,
            metadata={"model": "scripted", "usage": {"input_tokens": 100 + i,
                                                     "output_tokens": 40}}))
    if len(branch.messages) < n:
        branch.add_message(Instruction(instruction="Last question?"))
    return branch
"""


def _build(n: int) -> Any:
    namespace: dict[str, Any] = {}
    exec(BUILD, namespace)
    return namespace["build"](n)


def in_process(n: int, runs: int) -> dict[str, Any]:
    from lion_nb.widgets.inspector import ProgressionInspector

    branch = _build(n)
    opens, pages, expands = [], [], []
    for _ in range(runs):
        gc.collect()
        start = time.perf_counter()
        view = ProgressionInspector(branch)
        bundle = view._repr_mimebundle_()
        opens.append((time.perf_counter() - start) * 1000)
        assert "text/html" in bundle and len(view.front.row_summaries()) == 50
        start = time.perf_counter()
        view.show_page(1)
        pages.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        view.go_to(n - 3)  # deep in the branch: its payload compiles n - 3 messages
        expands.append((time.perf_counter() - start) * 1000)
        view.close()
    return {
        "messages": n,
        "open_ms": round(statistics.median(opens), 1),
        "open_ms_runs": [round(x, 1) for x in opens],
        "page_ms": round(statistics.median(pages), 1),
        "expand_ms": round(statistics.median(expands), 1),
        "row_widgets": 50,
    }


def memory_per_message(n: int = 10_000) -> dict[str, Any]:
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    branch = _build(n)
    gc.collect()
    after_branch = tracemalloc.get_traced_memory()[0]
    from lion_nb.widgets.inspector import ProgressionInspector

    view = ProgressionInspector(branch)
    gc.collect()
    after_view = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    view.close()
    return {
        "messages": len(branch.messages),
        "bytes_per_message": round((after_branch - base) / len(branch.messages)),
        "inspector_bytes": after_view - after_branch,
    }


def in_kernel(runs: int) -> list[dict[str, Any]]:
    import queue

    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3", startup_timeout=60)
    results = []
    try:

        def run(code: str) -> tuple[float, int, int]:
            start = time.perf_counter()
            msg_id = kc.execute(code)
            comm_msgs = comm_bytes = 0
            while True:
                try:
                    msg = kc.get_iopub_msg(timeout=60)
                except queue.Empty:
                    raise TimeoutError(code) from None
                if msg["parent_header"].get("msg_id") != msg_id:
                    continue
                kind = msg["header"]["msg_type"]
                if kind in ("comm_open", "comm_msg", "display_data"):
                    comm_msgs += 1
                    comm_bytes += len(str(msg["content"]))
                if kind == "error":
                    raise RuntimeError("\n".join(msg["content"]["traceback"]))
                if kind == "status" and msg["content"]["execution_state"] == "idle":
                    return (time.perf_counter() - start) * 1000, comm_msgs, comm_bytes

        run(
            f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})\n"
            + BUILD
            + "\nfrom lion_nb.widgets.inspector import ProgressionInspector"
        )
        for n in SIZES:
            run(f"branch = build({n})")
            samples = [run("ProgressionInspector(branch)") for _ in range(runs)]
            results.append(
                {
                    "messages": n,
                    "kernel_display_ms": round(statistics.median(s[0] for s in samples), 1),
                    "display_messages": samples[-1][1],
                    "display_bytes": samples[-1][2],
                }
            )
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", help="write the JSON result here")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="3 runs, no kernel")
    args = parser.parse_args()
    runs = 3 if args.quick else args.runs
    rows = [in_process(n, runs) for n in SIZES]
    kernel = [] if args.quick else in_kernel(max(3, runs // 2))
    for row, k in zip(rows, kernel, strict=False):
        row.update(k)
    memory = memory_per_message()
    result = {
        "benchmark": "B5 inspector",
        "sizes": rows,
        "memory": memory,
        "target": "open a 10,000-message branch in < 1 s",
        "met": all(r["open_ms"] < 1000 for r in rows)
        and all(r.get("kernel_display_ms", 0) < 1000 for r in rows),
    }
    print(
        f"{'messages':>9} {'open ms':>8} {'page ms':>8} {'expand ms':>10} "
        f"{'kernel ms':>10} {'comm msgs':>10} {'comm KB':>8}"
    )
    for r in rows:
        print(
            f"{r['messages']:>9,} {r['open_ms']:>8.1f} {r['page_ms']:>8.1f} "
            f"{r['expand_ms']:>10.1f} {r.get('kernel_display_ms', float('nan')):>10.1f} "
            f"{r.get('display_messages', 0):>10} {r.get('display_bytes', 0) / 1024:>8.1f}"
        )
    print(
        f"memory: {memory['bytes_per_message']:,} bytes per message "
        f"({memory['messages']:,} messages); inspector itself {memory['inspector_bytes']:,} "
        "bytes"
    )
    write_result(args.out, result)


if __name__ == "__main__":
    main()
