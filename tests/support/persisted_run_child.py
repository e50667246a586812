"""Child interpreter for the crash-recovery test: a persisted run on a slow scripted CLI model.

Usage: python persisted_run_child.py <persist_dir>. Prints one JSON object per line, flushed:
``{"branch_id": ...}`` first, then ``{"kind": ..., "delta": ...}`` for every text/thinking delta
run() received. run() appends each chunk to its buffer *before* the delta is emitted, so every
printed delta is already in the buffer when the parent reads it and kills this process.
"""

from __future__ import annotations

import asyncio
import json
import sys

from lion_nb import Branch, iModel
from lion_nb.signals import StreamDelta

WORDS = [f"word{i}" for i in range(400)]
THINKING = "Planning a long answer."


def say(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


async def main(persist_dir: str) -> None:
    model = iModel(
        provider="scripted",
        cli=True,
        replies=[{"text": " ".join(WORDS), "thinking": THINKING, "delay": 0.02}],
    )
    branch = Branch(system="You are slow.", chat_model=model)
    branch.observe(StreamDelta, handler=lambda s: say({"kind": s.kind, "delta": s.delta}))
    say({"branch_id": str(branch.id)})
    async for _ in branch.run("Write a long answer.", stream_persist=True, persist_dir=persist_dir):
        pass
    say({"done": True})


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
