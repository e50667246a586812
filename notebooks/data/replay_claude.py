#!/usr/bin/env python3
"""A stand-in for the ``claude`` executable: prints a recorded Claude Code session.

The notebooks point ``iModel(provider="claude_code", cli_path=...)`` at this file when Claude
Code is not installed, so everything after the executable is the real thing: lion_nb starts a
process, reads its stream-json stdout line by line, maps the events to messages, and on Stop
terminates the process group. Only the agent is replaced by its recording.

Environment: ``REPLAY_RECORDING`` (a ``.jsonl`` file recorded from Claude Code 2.1.197, see
``data/README.md``) and ``REPLAY_DELAY`` (seconds before each line, default 0.05). The command
line flags lion_nb passes (``-p <prompt> --output-format stream-json ...``) are ignored.
"""

import os
import sys
import time


def main() -> int:
    recording = os.environ.get("REPLAY_RECORDING")
    if not recording:
        sys.stderr.write("replay_claude: set REPLAY_RECORDING to a .jsonl recording\n")
        return 2
    delay = float(os.environ.get("REPLAY_DELAY", "0.05"))
    with open(recording, "rb") as fh:
        lines = fh.read().splitlines(keepends=True)
    out = sys.stdout.buffer
    try:
        for line in lines:
            time.sleep(delay)
            out.write(line)
            out.flush()
    except BrokenPipeError:  # the reader went away (Stop, or a crashed notebook): just end
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
