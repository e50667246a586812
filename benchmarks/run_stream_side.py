"""One side of B1, run in its own interpreter: consume a scripted CLI stream of N text
chunks plus tool calls through ``Branch.run`` and print the median seconds per repetition.

    python run_stream_side.py lion_nb N REPS     (in lion_nb's venv)
    python run_stream_side.py lionagi N REPS     (in the lionagi baseline venv)
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time

TOOL_EVERY = 1000  # one tool call + result per 1,000 text chunks


def lion_nb_events(n: int) -> list[dict]:
    events: list[dict] = []
    for i in range(n):
        events.append({"type": "text", "text": "tok "})
        if (i + 1) % TOOL_EVERY == 0:
            tid = f"t{i}"
            events.append(
                {
                    "type": "tool_use",
                    "tool_id": tid,
                    "name": "Read",
                    "arguments": {"file_path": "a.txt"},
                }
            )
            events.append({"type": "tool_result", "tool_id": tid, "output": "contents"})
    events.append({"type": "result", "metadata": {"usage": {"input_tokens": 1}}})
    return events


def lionagi_chunks(n: int) -> list[dict]:
    chunks: list[dict] = [{"type": "system", "metadata": {"session_id": "s1"}}]
    for i in range(n):
        chunks.append({"type": "text", "content": "tok ", "is_delta": True})
        if (i + 1) % TOOL_EVERY == 0:
            tid = f"t{i}"
            chunks.append(
                {
                    "type": "tool_use",
                    "tool_name": "Read",
                    "tool_id": tid,
                    "tool_input": {"file_path": "a.txt"},
                }
            )
            chunks.append({"type": "tool_result", "tool_id": tid, "tool_output": "contents"})
    chunks.append({"type": "result", "metadata": {}})
    return chunks


async def once_lion_nb(n: int) -> tuple[float, int]:
    from lion_nb import Branch, iModel
    from lion_nb.signals import StreamDelta

    model = iModel(provider="scripted", cli=True, replies=[{"events": lion_nb_events(n)}])
    branch = Branch(chat_model=model)
    deltas = 0

    def observer(signal):
        nonlocal deltas
        deltas += 1

    branch.observe(StreamDelta, handler=observer)
    start = time.perf_counter()
    count = 0
    async for _ in branch.run("go"):
        count += 1
    elapsed = time.perf_counter() - start
    assert deltas >= n, (deltas, n)
    return elapsed, count


async def once_lionagi(n: int) -> tuple[float, int]:
    from lionagi import Branch
    from lionagi.testing import scripted_imodel

    model = scripted_imodel([{"type": "stream", "chunks": lionagi_chunks(n)}])
    branch = Branch(chat_model=model)
    start = time.perf_counter()
    count = 0
    async for _ in branch.run("go"):
        count += 1
    return time.perf_counter() - start, count


def main() -> None:
    side, n, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    once = once_lion_nb if side == "lion_nb" else once_lionagi
    asyncio.run(once(200))  # warm up imports and caches
    samples, messages = [], 0
    for _ in range(reps):
        elapsed, messages = asyncio.run(once(n))
        samples.append(elapsed)
    print(
        json.dumps(
            {
                "side": side,
                "chunks": n,
                "median_s": statistics.median(samples),
                "samples_s": samples,
                "messages": messages,
            }
        )
    )


if __name__ == "__main__":
    main()
