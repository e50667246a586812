"""B14: bytes the progression inspector sends to the page while a run adds 50 messages.

Kernel side, no browser: every comm the inspector opens is recorded (``comm.create_comm``
replaced by a recorder, as ``tests/widgets/conftest.py`` does), and the JSON of what each one
sends is counted — the widget state it opens with, state updates and custom messages alike —
so the stock-ipywidgets inspector (one comm per button, label and row) and the one on the
front end (one comm, the channel's ops) are measured the same way. The comm envelope (~550 B a
message, ``protocol.ENVELOPE_BYTES``) is reported apart: ``messages``.

Scenario: a branch of 100 messages, the inspector open on its newest page (50 rows, following
the end), then 25 ``communicate`` turns on the scripted model, one after the other in real time
(each reply streamed in 20 chunks over ~50 ms): 50 messages added, the view following them.

    .venv/bin/python benchmarks/bench_inspector_bytes.py [--out FILE]

Run it with ``PYTHONPATH`` at another checkout to measure that one (the baseline: the stock
inspector before it moved to the front end, a7a7c1c: 758,835 B in 1,402 comm messages, as each
update re-filled the 50 positional rows; on the front end: 82,461 B in 51). Exit status 1 when
the payload passes 2 KB per message added.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import write_result

ENVELOPE = 550
GOAL_PER_MESSAGE = 2048  # payload per message added (the visible rows re-sent: ~30 KB each)


class _Recorder:
    """A widget's comm without a kernel, counting what it sends."""

    made: list[_Recorder] = []

    def __init__(self, *, data: dict | None = None, **_: object) -> None:
        self.comm_id = f"comm-{id(self)}"
        self.kernel = object()  # ipywidgets sends nothing on a comm without a kernel
        self.opened = len(json.dumps(data or {}, separators=(",", ":"), default=str))
        self.sent = 0
        self.messages = 0
        _Recorder.made.append(self)

    def on_msg(self, _callback: object) -> None: ...

    def send(self, data: dict | None = None, **_: object) -> None:
        self.sent += len(json.dumps(data or {}, separators=(",", ":"), default=str))
        self.messages += 1

    def close(self, *_: object, **__: object) -> None: ...


def totals() -> dict[str, int]:
    comms = _Recorder.made
    return {
        "comms": len(comms),
        "open_bytes": sum(c.opened for c in comms),
        "sent_bytes": sum(c.sent for c in comms),
        "messages": sum(c.messages for c in comms) + len(comms),
    }


async def scenario(turns: int) -> dict[str, Any]:
    import comm

    from lion_nb import Branch, iModel
    from lion_nb.messages import AssistantResponse, Instruction
    from lion_nb.widgets.inspector import ProgressionInspector

    comm.create_comm = _Recorder  # type: ignore[assignment]
    replies = [
        {"chunks": [f"reply {i} word{j} " for j in range(20)], "delay": 0.0025}
        for i in range(turns)
    ]
    branch = Branch(
        system="You are terse.", chat_model=iModel(provider="scripted", replies=replies)
    )
    for i in range(50):
        branch.add_message(Instruction(instruction=f"question {i}: " + "words " * 8))
        branch.add_message(
            AssistantResponse(
                response=f"answer {i} **bold** " * 4,
                metadata={"usage": {"input_tokens": 10 + i, "output_tokens": 5}},
            )
        )
    view = ProgressionInspector(branch)
    await asyncio.sleep(0.3)  # the next-turn estimate, the first state
    before = totals()
    for i in range(turns):
        await branch.communicate(f"turn {i}")
    await asyncio.sleep(0.6)  # the last throttled update
    after = totals()
    view.close()
    added = {k: after[k] - before[k] for k in after}
    payload = added["open_bytes"] + added["sent_bytes"]
    return {
        "messages_added": 2 * turns,
        "payload_bytes": payload,
        "comm_messages": added["messages"],
        "with_envelopes": payload + ENVELOPE * added["messages"],
        "open_bytes": before["open_bytes"] + before["sent_bytes"],
        "open_messages": before["messages"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=25)
    parser.add_argument("--quick", action="store_true", help="the same (it takes ~2 s)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    result = asyncio.run(scenario(args.turns))
    result["goal_bytes"] = GOAL_PER_MESSAGE * result["messages_added"]
    result["met"] = result["payload_bytes"] <= result["goal_bytes"]
    write_result(str(args.out) if args.out else None, result)
    return 0 if result["met"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
