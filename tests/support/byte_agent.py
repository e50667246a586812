#!/usr/bin/env python3
"""A CLI agent that writes exact bytes: the stand-in for claude / codex / gemini when a test
needs a stream cut, split or corrupted at a chosen byte.

It ignores its argv and stdin and follows the JSON plan named by ``$BYTE_AGENT_PLAN``:

    {"pieces": [<latin-1 str>, ...],  stdout, written and flushed one by one
     "delay": 0.001,                  seconds before each piece
     "stall_after": null | k,         after k pieces, sleep until killed
     "stderr": "...",                 written to stderr before exiting
     "exit": 0,                       exit code
     "pid_file": "..."}               receives this process's pid first

Pieces are latin-1 strings so that any byte (invalid UTF-8 included) survives JSON.
"""

import json
import os
import sys
import time


def main() -> None:
    with open(os.environ["BYTE_AGENT_PLAN"], encoding="utf-8") as fh:
        plan = json.load(fh)
    if plan.get("pid_file"):
        with open(plan["pid_file"], "w", encoding="utf-8") as fh:
            fh.write(str(os.getpid()))
    out = sys.stdout.buffer
    delay = float(plan.get("delay", 0))
    for n, piece in enumerate(plan["pieces"]):
        if n == plan.get("stall_after"):
            while True:
                time.sleep(3600)
        if delay:
            time.sleep(delay)
        out.write(piece.encode("latin-1"))
        out.flush()
    if plan.get("stall_after") is not None and plan["stall_after"] >= len(plan["pieces"]):
        while True:
            time.sleep(3600)
    if plan.get("stderr"):
        sys.stderr.write(plan["stderr"])
        sys.stderr.flush()
    sys.exit(int(plan.get("exit", 0)))


if __name__ == "__main__":
    main()
