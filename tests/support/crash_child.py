"""Child interpreter for the crash-safety tests: ``Branch.run(stream_persist=True)`` on a real
CLI agent process (the fake agent replaying a recording slowly), reporting what it receives.

Usage: python crash_child.py PERSIST_DIR CLI_PATH ENV_JSON

Prints one JSON object per line, flushed: ``{"branch_id": ...}`` first; then
``{"delta": ...}`` for every text delta and ``{"message": role, "id": ...}`` for every
message recorded. run() appends each chunk to its buffer *before* the chunk's delta or message
is emitted, so whatever the parent has read is already in the buffer when it kills us.
"""

from __future__ import annotations

import asyncio
import json
import sys

from lion_nb import Branch, iModel
from lion_nb.signals import MessageAdded, StreamDelta


def say(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


async def main(persist_dir: str, cli_path: str, env: dict[str, str]) -> None:
    model = iModel(provider="claude_code", model="sonnet", cli_path=cli_path, env=env)
    branch = Branch(system="Work slowly.", chat_model=model)
    branch.observe(StreamDelta, handler=lambda s: s.kind == "text" and say({"delta": s.delta}))
    branch.observe(
        MessageAdded, handler=lambda s: say({"message": s.message.role, "id": str(s.message.id)})
    )
    say({"branch_id": str(branch.id)})
    async for _ in branch.run(
        "Read the file, then explain.", stream_persist=True, persist_dir=persist_dir
    ):
        pass
    say({"done": True})


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3])))
