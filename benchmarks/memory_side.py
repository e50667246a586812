"""B5 memory side, in a fresh interpreter: bytes per message of a branch holding N messages
(alternating instruction / assistant response, ~120 characters each), by tracemalloc.

    python memory_side.py lion_nb|lionagi N
"""

from __future__ import annotations

import gc
import json
import sys
import tracemalloc

side, n = sys.argv[1], int(sys.argv[2])
TEXT = "The quick brown fox jumps over the lazy dog while the model explains its reasoning. " * 2

if side == "lion_nb":
    from lion_nb import Branch
    from lion_nb.messages import AssistantResponse, Instruction

    def build() -> object:
        branch = Branch()
        for i in range(n):
            msg = (
                Instruction(instruction=f"{i} {TEXT}")
                if i % 2 == 0
                else AssistantResponse(response=f"{i} {TEXT}")
            )
            branch.add_message(msg)
        return branch
else:
    from lionagi import Branch

    def build() -> object:
        branch = Branch()
        for i in range(n):
            if i % 2 == 0:
                branch.msgs.add_message(instruction=f"{i} {TEXT}")
            else:
                branch.msgs.add_message(assistant_response=f"{i} {TEXT}")
        return branch


build()  # warm caches (pydantic schemas) outside the measurement
gc.collect()
tracemalloc.start()
before = tracemalloc.get_traced_memory()[0]
kept = build()
gc.collect()
after = tracemalloc.get_traced_memory()[0]
print(json.dumps({"side": side, "messages": n, "bytes_per_message": (after - before) / n}))
