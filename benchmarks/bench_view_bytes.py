"""B13: bytes the rounds and parse views send to the page while a run streams, against the
final HTML they show (every live view streams through the channel's delta ops; goal
<= 2x the final HTML, where re-putting whole parts per update was quadratic).

Kernel side, no browser: the view's channel send (``view.channel._send``) is hooked and every
message's JSON payload counted (the comm envelope, ~550 B a message, is reported apart:
``messages``). Scenarios, on the scripted model in real time:

- rounds: a ReAct run whose first round's analysis is ~3,000 words of Markdown (paragraphs and
  code blocks), streamed a word at a time at ~1,000 words/s, then a short answer round;
- parse: a ``ParseView`` following a 200-item structured reply streamed 6 characters at a time;
- flow: a ``FlowView`` with its one node's transcript open while the node writes the same
  ~3,000 words (its row, heading and time strip tick meanwhile); the final HTML is what the page
  shows at the end (the transcript included).

    .venv/bin/python benchmarks/bench_view_bytes.py [--quick] [--out FILE]

Run it with ``PYTHONPATH`` at another checkout to measure that one (the baseline: the views
before they streamed, commit f88d5e3: rounds 977,222 B = 30.1x, parse 2,154,509 B = 16.6x; the
flow view was stock ipywidgets then, its traffic not on a channel). Exit status 1 when a view
sends more than 2x its final HTML plus ``protocol.BYTES_BUDGET_PER_S`` per second of streaming
(what ticks with time: the flow's run times and strip; the parse view's rows are sent twice by
design, live then validated).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

from _common import write_result

GOAL_RATIO = 2.0


def analysis_text(words: int) -> str:
    """Markdown of ``words`` words: paragraphs, a code block every fifth paragraph."""
    paragraphs: list[str] = []
    n = 0
    while n < words:
        size = 40 + n % 37
        paragraphs.append(" ".join(f"w{n + j}" for j in range(size)) + ".")
        n += size
        if len(paragraphs) % 5 == 0:
            paragraphs.append("```python\n" + "\n".join(f"x = {j}" for j in range(8)) + "\n```")
    return "\n\n".join(paragraphs)


def count(view: Any) -> dict[str, Any]:
    """Hook the view's channel: bytes per message and per op kind."""
    seen: dict[str, Any] = {"bytes": 0, "messages": 0, "by_op": {}}
    send = view.channel._send

    def hook(content: dict[str, Any]) -> None:
        seen["bytes"] += len(json.dumps(content, separators=(",", ":")))
        seen["messages"] += 1
        for op in content["ops"]:
            size = len(json.dumps(op, separators=(",", ":")))
            seen["by_op"][op["op"]] = seen["by_op"].get(op["op"], 0) + size
        send(content)

    view.channel._send = hook
    return seen


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def rounds(words: int) -> dict[str, Any]:
    from lion_nb import Branch, iModel
    from lion_nb.widgets.rounds_view import ReActRoundsView

    replies = [
        {"json": {"analysis": analysis_text(words), "extension_needed": False}, "delay": 0.001},
        {"json": {"answer": "done"}, "delay": 0.001},
    ]
    branch = Branch(
        system="Use tools.", tools=[add], chat_model=iModel(provider="scripted", replies=replies)
    )
    view = ReActRoundsView(branch)
    seen = count(view)
    started = time.perf_counter()
    await branch.ReAct("analyse", max_extensions=1)
    view.channel.flush()
    return row("rounds", view, seen, started)


async def parse(items: int) -> dict[str, Any]:
    from pydantic import BaseModel

    from lion_nb import Branch, iModel
    from lion_nb.widgets.parse_view import ParseView

    class Item(BaseModel):
        name: str
        price: float

    class Order(BaseModel):
        customer: str
        items: list[Item]

    data = {"customer": "Ada", "items": [{"name": f"item-{i}", "price": i} for i in range(items)]}
    text = json.dumps(data)
    chunks = [text[i : i + 6] for i in range(0, len(text), 6)]
    replies = [{"chunks": chunks, "delay": 0.001}]
    branch = Branch(chat_model=iModel(provider="scripted", replies=replies))
    view = ParseView(Order, branch=branch)
    seen = count(view)
    started = time.perf_counter()
    await branch.communicate("Order", response_format=Order)
    view.channel.flush()
    return row("parse", view, seen, started)


async def flow(words: int) -> dict[str, Any]:
    from lion_nb import Branch, FlowView, iModel
    from lion_nb.flow import Flow

    chunks = [w + " " for w in analysis_text(words).split(" ")]
    replies = [{"chunks": chunks, "delay": 0.001}]
    branch = Branch(name="main", chat_model=iModel(provider="scripted", replies=replies))
    graph = Flow(name="talk")
    node = graph.add("communicate", instruction="Write", branch=branch)
    view = FlowView(graph, refresh_interval=1 / 15)
    view._on_page(view, {"action": "open", "key": str(node.id)}, [])  # the page's open
    view.channel.flush()
    seen = count(view)
    started = time.perf_counter()
    await graph.run()
    view.channel.flush()
    shown = sum(len(p[1]) for p in view.state_parts())
    return row("flow", view, seen, started, final=shown)


def row(
    name: str, view: Any, seen: dict[str, Any], started: float, final: int | None = None
) -> dict[str, Any]:
    from lion_nb.widgets.protocol import BYTES_BUDGET_PER_S

    final = len(view.static_html()) if final is None else final
    seconds = time.perf_counter() - started
    budget = int(GOAL_RATIO * final + BYTES_BUDGET_PER_S * seconds)
    view.close()
    return {
        "view": name,
        "seconds": round(seconds, 2),
        "bytes": seen["bytes"],
        "messages": seen["messages"],
        "final_html": final,
        "ratio": round(seen["bytes"] / final, 2),
        "by_op": seen["by_op"],
        "budget": budget,
        "met": seen["bytes"] <= budget,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, default=3000)
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="1,000 words, 100 items")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    if args.quick:
        args.words, args.items = 1000, 100
    rows = [
        asyncio.run(rounds(args.words)),
        asyncio.run(parse(args.items)),
        asyncio.run(flow(args.words)),
    ]
    write_result(args.out, {"goal_ratio": GOAL_RATIO, "rows": rows})
    return 0 if all(r["met"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
