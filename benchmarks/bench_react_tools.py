"""B15: ReAct with one tool on models that ignore native tools.

    .venv/bin/python benchmarks/bench_react_tools.py [--runs 20] [--only embedded|llama-server]

``branch.ReAct(instruct={"instruction": "What is 2+3? Use the add tool."}, tools=[add])`` (the
default three extensions) once per seed 1..runs, at temperature 0.7 and ``max_tokens=256``, on
the embedded model and on llama.cpp's ``llama-server --jinja`` (one slot; started here, as
``tests/servers/real.py`` does) with SmolLM2, where lion_nb asks for its own JSON action
requests. Counted: runs that called ``add``, called it with 2 and 3, ended in an answer (and
one containing "5"), ended in a ``ReActError``, returned ``None`` (must be 0), failed otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lion_nb import Branch, iModel
from lion_nb.errors import ReActError
from lion_nb.models import capabilities

INSTRUCT = {"instruction": "What is 2+3? Use the add tool."}


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def one_run(model: iModel, counts: Counter[str]) -> None:
    if (await model.capabilities()).native_tools is None:  # before the server probe knows
        capabilities.remember(model.base_url or "", native_tools=False)
    branch = Branch(chat_model=model)
    started = time.perf_counter()
    try:
        out = await branch.ReAct(instruct=INSTRUCT, tools=[add])
        outcome = "none" if out is None else "answer"
    except ReActError as exc:
        outcome, out = "ReActError", str(exc)
    except Exception as exc:  # counted, not hidden: any other failure is a finding
        outcome, out = "other", f"{type(exc).__name__}: {exc}"
    calls = [m for m in branch.messages if m.role == "action_response" and m.function == "add"]
    counts.update(
        runs=1,
        **{outcome: 1},
        called=bool(calls),
        called_2_3=any(m.arguments == {"a": 2, "b": 3} for m in calls),
        answer_has_5=outcome == "answer" and "5" in str(out),
    )
    took = time.perf_counter() - started
    print(f"  {outcome:<10} {took:5.1f} s  calls={[m.arguments for m in calls]}  {out!r:.110}")


async def measure(name: str, make: object, runs: int) -> Counter[str]:
    counts: Counter[str] = Counter()
    print(name)
    for seed in range(1, runs + 1):
        await one_run(make(seed), counts)  # type: ignore[operator]
    keys = ("runs", "called", "called_2_3", "answer", "answer_has_5", "ReActError", "none", "other")
    print(name, {k: counts[k] for k in keys})
    return counts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--only", choices=["embedded", "llama-server"])
    args = parser.parse_args()
    if args.only != "llama-server":
        asyncio.run(
            measure(
                "embedded",
                lambda seed: iModel(provider="local", temperature=0.7, seed=seed, max_tokens=256),
                args.runs,
            )
        )
    if args.only != "embedded":
        from tests.servers.real import start_llama_server

        with start_llama_server(Path(tempfile.mkdtemp()), parallel=1) as server:
            asyncio.run(
                measure(
                    "llama-server",
                    lambda seed: iModel(
                        provider="openai",
                        model="smollm2",
                        base_url=server.v1,
                        temperature=0.7,
                        seed=seed,
                        max_tokens=256,
                    ),
                    args.runs,
                )
            )


if __name__ == "__main__":
    main()
