#!/usr/bin/env python3
"""A fake CLI agent: replays a recorded stdout stream so providers run against a real process.

It accepts any argv (it stands in for ``claude``, ``codex`` or ``gemini``) and is driven by
environment variables:

FAKE_CLI_RECORDING  path of a ``.jsonl`` recording to replay line by line (bytes exact)
FAKE_CLI_DELAY      seconds to sleep before each line (default 0.002)
FAKE_CLI_EXIT       exit code at the end (default 0)
FAKE_CLI_STDERR     text written to stderr just before exiting
FAKE_CLI_RECORD     path of a JSON file receiving {argv, stdin, pid, pgid, cwd, children, env}
FAKE_CLI_ENV_KEYS   comma-separated variable names whose values are copied into the record
FAKE_CLI_LINES      N, used by the modes below (default 1)
FAKE_CLI_MODE       comma-separated modes:
    ignore_term   ignore SIGTERM (only SIGKILL ends it)
    hang          after N lines, sleep forever
    die_mid_line  after N lines, write the first half of the next line, then exit
                  (code FAKE_CLI_EXIT, default 1 in this mode)
    spawn_child   start a grandchild (same process group, inherits stdout) that sleeps
                  for 10 minutes; its pid is in the record's ``children``
"""

import json
import os
import signal
import subprocess
import sys
import time


def _write_record(path, record):
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(record, fh)
    os.replace(tmp, path)


def main():
    env = os.environ
    modes = {m.strip() for m in env.get("FAKE_CLI_MODE", "").split(",") if m.strip()}
    delay = float(env.get("FAKE_CLI_DELAY", "0.002"))
    n_lines = int(env.get("FAKE_CLI_LINES", "1"))
    exit_code = int(env.get("FAKE_CLI_EXIT", "1" if "die_mid_line" in modes else "0"))
    if "ignore_term" in modes:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)

    stdin = "" if sys.stdin is None or sys.stdin.closed else sys.stdin.read()
    record = {
        "argv": sys.argv[1:],
        "stdin": stdin,
        "pid": os.getpid(),
        "pgid": os.getpgid(0),
        "cwd": os.getcwd(),
        "children": [],
        "env": {k: env.get(k) for k in env.get("FAKE_CLI_ENV_KEYS", "").split(",") if k},
    }
    if "spawn_child" in modes:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        record["children"].append(child.pid)
    if env.get("FAKE_CLI_RECORD"):
        _write_record(env["FAKE_CLI_RECORD"], record)

    lines = []
    if env.get("FAKE_CLI_RECORDING"):
        with open(env["FAKE_CLI_RECORDING"], "rb") as fh:
            lines = fh.read().splitlines(keepends=True)
    out = sys.stdout.buffer
    for number, line in enumerate(lines):
        if number == n_lines and "hang" in modes:
            break
        if number == n_lines and "die_mid_line" in modes:
            out.write(line[: max(1, len(line) // 2)])
            out.flush()
            os._exit(exit_code)
        time.sleep(delay)
        out.write(line)
        out.flush()
    if "hang" in modes:
        while True:
            time.sleep(3600)
    if env.get("FAKE_CLI_STDERR"):
        sys.stderr.write(env["FAKE_CLI_STDERR"])
        sys.stderr.flush()
    sys.exit(exit_code)


if __name__ == "__main__":
    main()
