"""One plain process of B8's two-process ceiling: the embedded model answering prompts in this
process, one llama.cpp thread, no Ray.

    python embedded_side.py FIRST COUNT TOKENS [NICENESS]

Loads the model (one short warm-up answer), prints "ready", waits for a line on stdin, then
answers prompts FIRST..FIRST+COUNT-1 (the prompts B8 sends through Ray) and prints the seconds.
NICENESS: run at that ``nice`` value, as Ray runs its workers (15 unless ``RAY_worker_niceness``
says otherwise), so that on a busy machine both sides get the same share of the CPUs.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time

from lion_nb import Branch, iModel

first, count, tokens = (int(a) for a in sys.argv[1:4])
if len(sys.argv) > 4:
    os.nice(int(sys.argv[4]))
model = iModel(provider="local", n_threads=1, max_tokens=tokens, temperature=0)


async def answer(i: int) -> str:
    return await Branch(chat_model=model).communicate(f"Write one sentence about the number {i}.")


asyncio.run(answer(-1))
print("ready", flush=True)
sys.stdin.readline()
started = time.perf_counter()
for i in range(first, first + count):
    asyncio.run(answer(i))
print(time.perf_counter() - started, flush=True)
