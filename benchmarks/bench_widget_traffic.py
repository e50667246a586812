"""B4: kernel -> browser widget traffic of a streamed reply, BranchView vs a naive view.

Goal: BranchView's traffic <= 1.5x the final HTML + 16 KB per second of streaming,
at 300 / 3,000 / 30,000 tokens and 50 / 1,000 tokens/s (``--full`` adds 30,000 at 50 tok/s,
ten minutes of streaming).

Starts a real ipykernel, streams scripted Markdown replies of N tokens at R tokens/s through
``BranchView`` (Send -> background task -> StreamDelta -> widgets), and counts every comm
message on the kernel's IOPub socket (raw ZeroMQ frames, so envelopes, HMAC and JSON escaping
are included). The baseline, in the same kernel, is the naive per-token view:
``HTML.value = accumulated text`` on every delta. The 30,000-token baseline (about 2 GB) is
computed from the per-message sizes measured at 3,000 tokens instead of being sent.

    .venv/bin/python benchmarks/bench_widget_traffic.py --out test-artifacts/b4.json
    .venv/bin/python benchmarks/bench_widget_traffic.py --quick   # 300 and 3,000 only

Exit status 1 when the goal is missed at any size measured.
"""

from __future__ import annotations

import argparse
import html
import inspect
import json
import queue
import sys
import threading
import time
from pathlib import Path
from typing import Any

import zmq
from jupyter_client.manager import start_new_kernel

SETUP = r"""
import asyncio, html, json
import ipywidgets
import lion_nb
from lion_nb import Branch, BranchView, iModel
from lion_nb.render.html import message_html
from lion_nb.signals import StreamDelta
"""

VIEW_SETUP = r"""
chunks = markdown_reply({tokens})
branch = Branch(chat_model=iModel(provider="scripted",
                                  replies=[{{"chunks": chunks, "delay": {delay}}}]))
view = BranchView(branch)
"""

VIEW_RUN = r"""
view.send("stream please")
"""

VIEW_DONE = r"""
await view.wait()
_final = sum(len(message_html(m)) for m in branch.messages)
print(json.dumps({"final_html": _final, "updates": None}))
"""

NAIVE_SETUP = r"""
chunks = markdown_reply({tokens})
branch = Branch(chat_model=iModel(provider="scripted",
                                  replies=[{{"chunks": chunks, "delay": {delay}}}]))
naive = ipywidgets.HTML()
def _naive(signal):
    if isinstance(signal, StreamDelta):
        naive.value = "<pre>" + html.escape(signal.snapshot) + "</pre>"
branch.observe(StreamDelta, handler=_naive)
"""

NAIVE_RUN = r"""
_task = asyncio.get_running_loop().create_task(branch.communicate("stream please"))
"""

NAIVE_DONE = r"""
await _task
_final = len(naive.value)
print(json.dumps({"final_html": _final}))
"""


class IOPubCounter:
    """A raw SUB socket on the kernel's IOPub port: counts comm messages and their bytes."""

    def __init__(self, connection: dict[str, Any]) -> None:
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.SUB)
        self.sock.setsockopt(zmq.SUBSCRIBE, b"")
        self.sock.connect(
            f"{connection['transport']}://{connection['ip']}:{connection['iopub_port']}"
        )
        self.lock = threading.Lock()
        self.reset()
        self.stdout: queue.Queue[str] = queue.Queue()
        self._stop = False
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def reset(self) -> None:
        with self.lock:
            self.messages = 0
            self.bytes = 0
            self.sizes: list[int] = []
            self.kinds: dict[str, list[int]] = {}  # "custom" / "update:<keys>" -> [n, bytes]

    def _loop(self) -> None:
        poller = zmq.Poller()
        poller.register(self.sock, zmq.POLLIN)
        while not self._stop:
            if not poller.poll(100):
                continue
            frames = self.sock.recv_multipart()
            try:
                i = frames.index(b"<IDS|MSG>")
            except ValueError:
                continue
            header = json.loads(frames[i + 2])
            kind = header.get("msg_type")
            if kind in ("comm_open", "comm_msg", "comm_close"):
                size = sum(len(f) for f in frames)
                data = json.loads(frames[i + 5]).get("data", {})
                kind = str(data.get("method", kind))
                if kind == "update":
                    kind += ":" + ",".join(sorted(data.get("state", {})))
                ops = (data.get("content") or {}).get("ops", []) if kind == "custom" else []
                with self.lock:
                    self.messages += 1
                    self.bytes += size
                    self.sizes.append(size)
                    entry = self.kinds.setdefault(kind, [0, 0])
                    entry[0] += 1
                    entry[1] += size
                    for op in ops:  # payload bytes per op kind (without the envelope)
                        name = "op:" + str(op.get("op"))
                        entry = self.kinds.setdefault(name, [0, 0])
                        entry[0] += 1
                        entry[1] += len(json.dumps(op, ensure_ascii=False))
            elif kind == "stream":
                self.stdout.put(json.loads(frames[i + 5]).get("text", ""))

    def close(self) -> None:
        self._stop = True
        self.thread.join(timeout=2)
        self.sock.close(0)
        self.ctx.term()


def execute(kc: Any, code: str, timeout: float) -> None:
    reply = kc.execute_interactive(code, timeout=timeout, output_hook=lambda _m: None)
    if reply["content"]["status"] != "ok":
        raise RuntimeError(
            f"kernel error: {reply['content'].get('ename')}: {reply['content'].get('evalue')}"
        )


def measure(
    kc: Any, counter: IOPubCounter, setup: str, run: str, done: str, tokens: int, rate: float
) -> dict[str, Any]:
    """Traffic from Send to the end of the run (making the view itself is not counted)."""
    delay = 1.0 / rate
    execute(kc, setup.format(tokens=tokens, delay=delay), timeout=60)
    time.sleep(0.3)
    while not counter.stdout.empty():
        counter.stdout.get_nowait()
    counter.reset()
    started = time.perf_counter()
    execute(kc, run, timeout=60)
    execute(kc, done, timeout=tokens / rate * 3 + 120)
    elapsed = time.perf_counter() - started
    time.sleep(0.5)  # let the last IOPub frames arrive
    line = ""
    deadline = time.time() + 10
    while time.time() < deadline:
        line += counter.stdout.get(timeout=10)
        if line.strip().endswith("}"):
            break
    info = json.loads(line.strip().splitlines()[-1])
    with counter.lock:
        msgs, size = counter.messages, counter.bytes
        kinds = {k: list(v) for k, v in counter.kinds.items()}
    return {
        "tokens": tokens,
        "rate": rate,
        "seconds": round(elapsed, 2),
        "comm_messages": msgs,
        "comm_bytes": size,
        "final_html": info["final_html"],
        "ratio": round(size / info["final_html"], 2),
        "by_kind": kinds,
        "budget": int(1.5 * info["final_html"] + 16384 * tokens / rate),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=Path("test-artifacts/bench_widget_traffic.json")
    )
    parser.add_argument("--rate", type=float, default=1000.0, help="tokens per second")
    parser.add_argument(
        "--slow-rate",
        type=float,
        default=50.0,
        help="a realistic model speed, measured at 3,000 tokens",
    )
    parser.add_argument("--quick", action="store_true", help="300 and 3,000 tokens only")
    parser.add_argument("--full", action="store_true", help="also 30,000 tokens at 50 tok/s")
    parser.add_argument("--no-naive", action="store_true", help="skip the naive baseline")
    args = parser.parse_args(argv)
    sizes = [300, 3000] if args.quick else [300, 3000, 30000]

    km, kc = start_new_kernel(kernel_name="python3")
    counter = IOPubCounter(km.get_connection_info())
    rows: list[dict[str, Any]] = []
    try:
        execute(kc, SETUP + inspect.getsource(markdown_reply), timeout=60)
        for tokens in sizes:
            row = measure(kc, counter, VIEW_SETUP, VIEW_RUN, VIEW_DONE, tokens, args.rate)
            rows.append({"view": "BranchView", **row})
        for tokens in sizes:
            if tokens < 30000 or args.full:
                row = measure(kc, counter, VIEW_SETUP, VIEW_RUN, VIEW_DONE, tokens, args.slow_rate)
                rows.append({"view": "BranchView", **row})
        per_message = 0.0
        for tokens in [] if args.no_naive else sizes:
            if tokens <= 3000:
                row = measure(kc, counter, NAIVE_SETUP, NAIVE_RUN, NAIVE_DONE, tokens, args.rate)
                rows.append({"view": "naive", **row})
                # envelope per message = bytes beyond the values themselves
                acc = _naive_value_bytes(tokens)
                per_message = (row["comm_bytes"] - acc) / max(row["comm_messages"], 1)
            else:
                acc = _naive_value_bytes(tokens)
                messages = _token_count(tokens)
                size = int(acc + per_message * messages)
                final = len(_naive_final(tokens))
                rows.append(
                    {
                        "view": "naive (projected)",
                        "tokens": tokens,
                        "rate": args.rate,
                        "seconds": None,
                        "comm_messages": messages,
                        "comm_bytes": size,
                        "final_html": final,
                        "ratio": round(size / final, 2),
                    }
                )
    finally:
        counter.close()
        kc.stop_channels()
        km.shutdown_kernel(now=True)

    print(
        f"{'view':<20}{'tokens':>8}{'tok/s':>7}{'secs':>8}{'messages':>10}{'bytes':>15}"
        f"{'final HTML':>12}{'ratio':>9}"
    )
    for r in rows:
        secs = f"{r['seconds']:.1f}" if r["seconds"] is not None else "-"
        print(
            f"{r['view']:<20}{r['tokens']:>8}{r['rate']:>7.0f}{secs:>8}{r['comm_messages']:>10}"
            f"{r['comm_bytes']:>15,}{r['final_html']:>12,}{r['ratio']:>8.2f}x"
        )
    view_rows = [r for r in rows if r["view"] == "BranchView"]
    for r in view_rows:
        r["within_budget"] = r["comm_bytes"] <= r["budget"]
        print(
            f"  {r['tokens']:>6} tokens at {r['rate']:>5.0f} tok/s: {r['comm_bytes']:>10,} B, "
            f"budget {r['budget']:>10,} B (1.5x final HTML + 16 KB/s): "
            f"{'met' if r['within_budget'] else 'NOT met'}"
        )
    ok = all(r["within_budget"] for r in view_rows)
    print(f"goal <= 1.5x final HTML + 16 KB per streaming second: {'met' if ok else 'NOT met'}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps({"benchmark": "B4 widget traffic", "rows": rows, "target_met": ok}, indent=2),
        encoding="utf-8",
    )
    return 0 if ok else 1


def markdown_reply(tokens: int) -> list[str]:
    """Word tokens of Markdown: paragraphs, a code block every fifth paragraph."""
    paragraphs: list[str] = []
    words = 0
    while words < tokens:
        n = 40 + words % 37
        paragraphs.append(" ".join(f"w{words + j}" for j in range(n)) + ".")
        words += n
        if len(paragraphs) % 5 == 0:
            paragraphs.append("```python\n" + "\n".join(f"x = {j}" for j in range(8)) + "\n```")
    text = "\n\n".join(paragraphs)
    return [t + " " for t in text.split(" ")]


def _token_count(tokens: int) -> int:
    return len(markdown_reply(tokens))


def _naive_value_bytes(tokens: int) -> int:
    """Bytes of every value the naive view sends, JSON-escaped as on the wire."""
    total = running = 0
    for tok in markdown_reply(tokens):
        running += len(json.dumps(html.escape(tok))) - 2  # without the quotes
        total += running + len("<pre></pre>")
    return total


def _naive_final(tokens: int) -> str:
    return "<pre>" + html.escape("".join(markdown_reply(tokens))) + "</pre>"


if __name__ == "__main__":
    sys.exit(main())
