"""B6: embedded-model generation speed — ``Branch.communicate`` on ``iModel(provider="local")``
vs raw ``llama_cpp.Llama.create_chat_completion(stream=True)`` in the same process, on the same
loaded model, with the same prompt and settings (temperature 0, seed 0, ``max_tokens``).

    .venv/bin/python benchmarks/bench_local.py --out benchmarks/results/bench_local.json [--quick]

Each repetition runs the raw call, lion_nb without observers and lion_nb with a ``StreamDelta``
observer (what a live notebook view adds), in an order that rotates so drift hits all alike.
The model's KV cache is reset before every call so each one evaluates the whole prompt. Both
sides generate the same text (asserted), so tokens/s compares wall time for the same work;
medians over the repetitions, ratio = lion_nb / raw (target >= 0.95).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import write_result  # noqa: E402

from lion_nb.models.base import ModelRequest  # noqa: E402
from lion_nb.models.imodel import iModel, local_model_available  # noqa: E402
from lion_nb.session.branch import Branch  # noqa: E402
from lion_nb.signals import StreamDelta  # noqa: E402

SYSTEM = "You are a helpful assistant."
PROMPT = "Write a long story about a lighthouse keeper and a storm."


def raw_call(loaded: Any, kwargs: dict[str, Any]) -> tuple[float, float, str]:
    llama = loaded.llama
    with loaded.lock:
        llama.reset()
        start, cpu = time.perf_counter(), time.process_time()
        parts = []
        for chunk in llama.create_chat_completion(stream=True, **kwargs):
            piece = chunk["choices"][0]["delta"].get("content")
            if piece:
                parts.append(piece)
        return time.perf_counter() - start, time.process_time() - cpu, "".join(parts)


async def lion_call(model: iModel, observed: bool) -> tuple[float, float, str, int]:
    loaded = model.provider.loaded()
    with loaded.lock:
        loaded.llama.reset()
    branch = Branch(system=SYSTEM, chat_model=model)
    if observed:
        seen: list[int] = []
        branch.observe(StreamDelta, handler=lambda s: seen.append(s.length))
    start, cpu = time.perf_counter(), time.process_time()
    text = await branch.communicate(PROMPT)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    tokens = branch.messages[-1].metadata["usage"]["output_tokens"]
    return elapsed, cpu, text, tokens


async def measure(reps: int, max_tokens: int, threads: int | None) -> dict[str, Any]:
    model = iModel(
        provider="local", temperature=0, seed=0, max_tokens=max_tokens, n_threads=threads
    )
    provider = model.provider
    plan = provider.plan(
        ModelRequest(
            messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": PROMPT}]
        )
    )
    loaded = await asyncio.to_thread(provider.loaded)
    await lion_call(model, False)  # warm-up: first-call costs (imports, page-in) on no side
    samples: dict[str, list[float]] = {"raw": [], "lion_nb": [], "lion_nb_observed": []}
    cpu: dict[str, list[float]] = {side: [] for side in samples}
    tokens = 0
    order = ["raw", "lion_nb", "lion_nb_observed"]
    for rep in range(reps):
        texts = {}
        for side in order[rep % 3 :] + order[: rep % 3]:
            if side == "raw":
                elapsed, used, texts[side] = await asyncio.to_thread(raw_call, loaded, plan.kwargs)
            else:
                elapsed, used, texts[side], tokens = await lion_call(
                    model, side.endswith("observed")
                )
            samples[side].append(elapsed)
            cpu[side].append(used)
        if len(set(texts.values())) != 1:
            raise RuntimeError("the sides generated different text; the comparison is void")
    tps = {side: tokens / statistics.median(times) for side, times in samples.items()}
    cpu_ms = {side: 1000 * statistics.median(times) / tokens for side, times in cpu.items()}
    return {
        "tokens": tokens,
        "threads": loaded.llama.n_threads,
        "samples_s": samples,
        "cpu_s": cpu,
        "tok_per_s": tps,
        "cpu_ms_per_token": cpu_ms,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", help="write the JSON result here")
    parser.add_argument("--quick", action="store_true", help="3 repetitions of 64 tokens")
    parser.add_argument("--reps", type=int, help="repetitions (default 7, quick 3)")
    parser.add_argument("--max-tokens", type=int, help="tokens per call (default 200)")
    parser.add_argument("--threads", type=int, help="llama.cpp threads (default: lion_nb's)")
    args = parser.parse_args()
    if not local_model_available():
        sys.exit("the embedded model is not installed: run `make install-local`")
    reps = args.reps or (3 if args.quick else 7)
    max_tokens = args.max_tokens or (64 if args.quick else 200)
    result = asyncio.run(measure(reps, max_tokens, args.threads))
    tps = result["tok_per_s"]
    rows = []
    for side, label in (("lion_nb", ""), ("lion_nb_observed", " + StreamDelta observer")):
        ratio = tps[side] / tps["raw"]
        rows.append(
            {
                "name": f"B6 local generation, communicate{label}",
                "unit": "tok/s",
                "lion_nb": tps[side],
                "baseline": tps["raw"],
                "ratio": ratio,
                "target": ">= 0.95 x raw llama.cpp",
                "met": ratio >= 0.95,
                "detail": {
                    "tokens_per_call": result["tokens"],
                    "repetitions": reps,
                    "threads": result["threads"],
                    "samples_s": result["samples_s"],
                    "cpu_s": result["cpu_s"],
                    "cpu_ms_per_token": result["cpu_ms_per_token"][side],
                    "raw_cpu_ms_per_token": result["cpu_ms_per_token"]["raw"],
                },
            }
        )
    cpu_ms = result["cpu_ms_per_token"]
    print(f"{'side':<36} {'tok/s':>7} {'ratio':>6} {'CPU ms/tok':>11}", file=sys.stderr)
    print(
        f"{'raw create_chat_completion':<36} {tps['raw']:>7.1f} {1:>6.3f} {cpu_ms['raw']:>11.2f}",
        file=sys.stderr,
    )
    for side, row in zip(("lion_nb", "lion_nb_observed"), rows, strict=True):
        name = row["name"].removeprefix("B6 local generation, ")
        print(
            f"{name:<36} {row['lion_nb']:>7.1f} {row['ratio']:>6.3f} {cpu_ms[side]:>11.2f}",
            file=sys.stderr,
        )
    print(
        f"({result['tokens']} tokens per call, {reps} repetitions, "
        f"{result['threads']} threads; medians)",
        file=sys.stderr,
    )
    write_result(args.out, {"benchmark": "B6", "rows": rows})


if __name__ == "__main__":
    main()
