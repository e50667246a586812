"""B2: API round trip — ``communicate`` against the loopback chat-completions server, lion_nb vs
the lionagi 0.36.0 baseline, measured in the same run against the same server.

    .venv/bin/python benchmarks/bench_api.py --out benchmarks/results/bench_api.json [--quick]

1,000 sequential calls on one branch and 100 calls started at once (200 / 20 with --quick);
calls per second, median over repetitions that alternate the sides (so a machine that slows
down during the run slows both). Each side runs in a fresh interpreter of its own venv
(``api_side.py``); the server runs in a third process. A bare-httpx client making the same
streamed request gives the floor, so the toolkit's own cost per call is visible:
``overhead_ms = 1000 / calls_per_s - 1000 / floor_calls_per_s``.
See ``api_side.py`` for how lionagi is configured for loopback and an offline tokenizer.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from _common import write_result  # noqa: E402

SIDE = str(HERE / "api_side.py")
PYTHONS = {
    "lion_nb": sys.executable,
    "httpx": sys.executable,
    "lionagi": str(ROOT / ".venv-lionagi" / "bin" / "python"),
}


def run_side(side: str, base_url: str, seq: int, conc: int, rounds: int) -> dict[str, Any]:
    # A scratch working directory: whatever a side writes relative to it is thrown away.
    with tempfile.TemporaryDirectory(prefix="b2-") as cwd:
        out = subprocess.run(
            [PYTHONS[side], SIDE, side, base_url, str(seq), str(conc), str(rounds)],
            capture_output=True,
            text=True,
            timeout=1800,
            cwd=cwd,
        )
    if out.returncode != 0:
        raise RuntimeError(f"B2 {side} side failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", help="write the JSON result here")
    parser.add_argument("--quick", action="store_true", help="200 sequential / 20 concurrent")
    parser.add_argument("--reps", type=int, help="repetitions per side (default 5, quick 3)")
    args = parser.parse_args()
    seq, conc = (200, 20) if args.quick else (1000, 100)
    reps = args.reps or (3 if args.quick else 5)
    rounds = 3 if args.quick else 5
    sides = ["lion_nb", "lionagi", "httpx"]
    if not Path(PYTHONS["lionagi"]).exists():
        sys.exit("the lionagi baseline venv is missing: run `make bench`")

    server = subprocess.Popen(
        [sys.executable, SIDE, "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    samples: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().strip()
        if not base_url.startswith("http://127.0.0.1:"):
            raise RuntimeError(f"the B2 server did not start: {base_url!r}")
        for _ in range(reps):
            for side in sides:
                samples[side].append(run_side(side, base_url, seq, conc, rounds))
    finally:
        if server.stdin is not None:
            server.stdin.close()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        if server.stdout is not None:
            server.stdout.close()

    def rate(side: str, key: str) -> float:
        if key == "seq":
            return statistics.median(s["seq_calls"] / s["seq_s"] for s in samples[side])
        return statistics.median(s["conc_calls"] / s["conc_median_s"] for s in samples[side])

    def cpu_ms(side: str, key: str) -> float:
        """Client CPU milliseconds per call (median)."""
        if key == "seq":
            return statistics.median(s["seq_cpu_s"] / s["seq_calls"] for s in samples[side]) * 1e3
        per_round = [cpu / s["conc_calls"] for s in samples[side] for cpu in s["conc_round_cpu_s"]]
        return statistics.median(per_round) * 1e3

    rows = []
    for key, label, calls in (("seq", "sequential", seq), ("conc", "concurrent", conc)):
        ours, base, floor = rate("lion_nb", key), rate("lionagi", key), rate("httpx", key)
        rows.append(
            {
                "name": f"B2 communicate, {calls:,} {label}",
                "unit": "calls/s",
                "lion_nb": ours,
                "baseline": base,
                "ratio": ours / base,
                "target": "≥ lionagi (ratio ≥ 1; higher is better)",
                "met": ours >= base,
                "detail": {
                    "calls": calls,
                    "reps": reps,
                    "rounds_per_rep": rounds if key == "conc" else 1,
                    "floor_httpx_calls_per_s": floor,
                    "lion_nb_overhead_ms_per_call": 1000 / ours - 1000 / floor,
                    "lionagi_overhead_ms_per_call": 1000 / base - 1000 / floor,
                    "client_cpu_ms_per_call": {side: cpu_ms(side, key) for side in sides},
                    "samples": {side: samples[side] for side in sides},
                },
            }
        )
    write_result(args.out, {"rows": rows})
    print(
        f"{'calls/s (CPU ms/call)':<36} {'lion_nb':>16} {'lionagi':>16} {'ratio':>6} "
        f"{'httpx floor':>16}"
    )
    for r in rows:
        d = r["detail"]
        cells = [
            f"{rate:,.0f} ({d['client_cpu_ms_per_call'][side]:.2f})"
            for rate, side in (
                (r["lion_nb"], "lion_nb"),
                (r["baseline"], "lionagi"),
                (d["floor_httpx_calls_per_s"], "httpx"),
            )
        ]
        print(f"{r['name']:<36} {cells[0]:>16} {cells[1]:>16} {r['ratio']:>6.2f} {cells[2]:>16}")


if __name__ == "__main__":
    main()
