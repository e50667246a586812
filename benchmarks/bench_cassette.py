"""B7: cassette replay overhead — what replaying a model call from a cassette costs on top of a
direct scripted stream of the same chunks, at the provider seam, in the same run.

    .venv/bin/python benchmarks/bench_cassette.py --out benchmarks/results/bench_cassette.json [--quick]

Three pairs, each side alternating within every repetition (so drift hits both alike), medians:

* API stream: ``iModel.complete`` with a delta sink, one reply of N text chunks — the scripted
  model streaming it directly vs the same call replayed from a cassette (``speed=None``);
* CLI stream: ``iModel.stream`` of N text chunks (scripted ``cli=True``) vs its replay;
* per call: a 20-message conversation answered by a one-chunk reply — the fixed cost of a replay
  (matching the request: compile to its matched form, redact, hash, look up).

``overhead_us`` = (replay - direct) per chunk (per call for the last); ratio = replay / direct.
Nothing of the replay touches the disk after the cassette is loaded.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import write_result  # noqa: E402

import lion_nb  # noqa: E402
from lion_nb.models.base import CLIRequest, ModelRequest  # noqa: E402
from lion_nb.models.imodel import iModel  # noqa: E402


def sink(kind: str, delta: str, *, name: str | None = None, call_id: str | None = None) -> None:
    pass


def conversation(turns: int) -> list[dict[str, Any]]:
    messages = [{"role": "system", "content": "You are a helpful assistant."}]
    for i in range(turns):
        messages.append({"role": "user", "content": f"Question {i}: " + "words " * 30})
        messages.append({"role": "assistant", "content": f"Answer {i}: " + "more words " * 30})
    messages.append({"role": "user", "content": "And the last question?"})
    return messages


async def api_stream(model: iModel, request: ModelRequest) -> float:
    start = time.perf_counter()
    await model.complete(request, sink)
    return time.perf_counter() - start


async def cli_stream(model: iModel, request: CLIRequest) -> float:
    start = time.perf_counter()
    async for _ in model.stream(request):
        pass
    return time.perf_counter() - start


async def measure(chunks: int, calls: int, reps: int, folder: Path) -> dict[str, Any]:
    pieces = [f"w{i} " for i in range(chunks)]
    api_request = ModelRequest(messages=[{"role": "user", "content": "stream"}])
    cli_request = CLIRequest(prompt="stream")
    call_request = ModelRequest(messages=conversation(10))
    tape = folder / "bench.cassette.jsonl"
    with lion_nb.cassette(tape, mode="record"):
        await iModel(provider="scripted", replies=[{"chunks": pieces}]).complete(api_request, sink)
        async for _ in iModel(provider="scripted", replies=[{"chunks": pieces}], cli=True).stream(
            cli_request
        ):
            pass
        await iModel(provider="scripted", replies=["ok"]).complete(call_request, sink)

    samples: dict[str, list[float]] = {
        k: [] for k in ("api", "api_r", "cli", "cli_r", "call", "call_r")
    }
    replay = lion_nb.cassette(tape, mode="replay", speed=None)
    for _ in range(reps):
        direct = iModel(provider="scripted", default_reply={"chunks": pieces})
        samples["api"].append(await api_stream(direct, api_request))
        with replay:
            samples["api_r"].append(await api_stream(iModel(provider="scripted"), api_request))
        direct = iModel(provider="scripted", default_reply={"chunks": pieces}, cli=True)
        samples["cli"].append(await cli_stream(direct, cli_request))
        with replay:
            samples["cli_r"].append(
                await cli_stream(iModel(provider="scripted", cli=True), cli_request)
            )
        direct = iModel(provider="scripted", default_reply="ok")
        start = time.perf_counter()
        for _ in range(calls):
            await direct.complete(call_request, sink)
        samples["call"].append((time.perf_counter() - start) / calls)
        with replay:
            model = iModel(provider="scripted")
            start = time.perf_counter()
            for _ in range(calls):
                await model.complete(call_request, sink)
            samples["call_r"].append((time.perf_counter() - start) / calls)
    return {k: statistics.median(v) for k, v in samples.items()} | {"samples_s": samples}


def row(name: str, unit: str, direct: float, replay: float, per: int, detail: dict) -> dict:
    us_direct, us_replay = direct / per * 1e6, replay / per * 1e6
    return {
        "name": name,
        "unit": unit,
        "lion_nb": us_replay,
        "baseline": us_direct,
        "ratio": us_replay / us_direct,
        "target": "report (baseline: the direct scripted stream)",
        "met": None,
        "detail": {"overhead_us": us_replay - us_direct, **detail},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", help="write the JSON result here")
    parser.add_argument("--quick", action="store_true", help="2,000 chunks, 3 repetitions")
    args = parser.parse_args()
    chunks, calls, reps = (2000, 200, 3) if args.quick else (10_000, 1000, 7)
    with tempfile.TemporaryDirectory(prefix="b7-") as folder:
        m = asyncio.run(measure(chunks, calls, reps, Path(folder)))
    detail = {"chunks": chunks, "reps": reps}
    rows = [
        row("B7 cassette replay, API stream", "µs/chunk", m["api"], m["api_r"], chunks, detail),
        row("B7 cassette replay, CLI stream", "µs/chunk", m["cli"], m["cli_r"], chunks, detail),
        row(
            "B7 cassette replay, per call (21 messages)",
            "µs/call",
            m["call"],
            m["call_r"],
            1,
            {"calls": calls, "reps": reps},
        ),
    ]
    rows[0]["detail"]["samples_s"] = {k: m["samples_s"][k] for k in ("api", "api_r")}
    rows[1]["detail"]["samples_s"] = {k: m["samples_s"][k] for k in ("cli", "cli_r")}
    rows[2]["detail"]["samples_s"] = {k: m["samples_s"][k] for k in ("call", "call_r")}
    write_result(args.out, {"rows": rows})
    print(f"{'':<44} {'direct':>10} {'replay':>10} {'overhead':>10} {'ratio':>6}", file=sys.stderr)
    for r in rows:
        print(
            f"{r['name']:<44} {r['baseline']:>10.2f} {r['lion_nb']:>10.2f} "
            f"{r['detail']['overhead_us']:>10.2f} {r['ratio']:>6.2f}  {r['unit']}",
            file=sys.stderr,
        )


if __name__ == "__main__":
    main()
