"""Helpers for the CLI provider tests: recorded streams, the fake CLI, process checks."""

from __future__ import annotations

import json
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1]
CLI_FIXTURES = TESTS / "fixtures" / "cli"
FAKE_AGENT = TESTS / "support" / "fake_agent.py"


def recording(name: str) -> Path:
    """``recording("claude/text")`` -> the path of that recorded stdout stream."""
    path = CLI_FIXTURES / f"{name}.jsonl"
    assert path.is_file(), path
    return path


def chunk_key(chunk: Any) -> tuple:
    """A comparable summary of a Chunk; ``duration_ms`` (a wall-clock reading) is left out."""
    meta = {k: v for k, v in chunk.metadata.items() if k != "duration_ms"}
    return (
        chunk.type,
        chunk.text,
        chunk.session_id,
        chunk.tool_id,
        chunk.name,
        json.dumps(chunk.arguments, sort_keys=True),
        json.dumps(chunk.output),
        chunk.is_error,
        chunk.benign_eos,
        type(chunk.error).__name__,
        json.dumps(meta, sort_keys=True, default=str),
    )


def all_recordings() -> list[str]:
    return sorted(
        str(p.relative_to(CLI_FIXTURES).with_suffix("")) for p in CLI_FIXTURES.glob("*/*.jsonl")
    )


@dataclass
class FakeCLI:
    """The fake agent behind a tiny ``exec`` wrapper, so the CLI is one process (pid == pgid)."""

    path: Path
    record_path: Path

    def env(
        self,
        recording_path: Path | None = None,
        *,
        delay: float = 0.002,
        exit_code: int | None = None,
        stderr: str | None = None,
        mode: str = "",
        lines: int = 1,
        env_keys: tuple[str, ...] = (),
    ) -> dict[str, str]:
        env = {
            "FAKE_CLI_RECORD": str(self.record_path),
            "FAKE_CLI_DELAY": str(delay),
            "FAKE_CLI_MODE": mode,
            "FAKE_CLI_LINES": str(lines),
            "FAKE_CLI_ENV_KEYS": ",".join(env_keys),
        }
        if recording_path is not None:
            env["FAKE_CLI_RECORDING"] = str(recording_path)
        if exit_code is not None:
            env["FAKE_CLI_EXIT"] = str(exit_code)
        if stderr is not None:
            env["FAKE_CLI_STDERR"] = stderr
        return env

    def record(self) -> dict:
        return json.loads(self.record_path.read_text(encoding="utf-8"))


def make_fake_cli(tmp_path: Path) -> FakeCLI:
    wrapper = tmp_path / "fake-cli"
    wrapper.write_text(
        f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_AGENT}" "$@"\n', encoding="utf-8"
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return FakeCLI(wrapper, tmp_path / "fake-cli-record.json")


def process_alive(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie (see ``group_alive`` for why zombies do not
    count: in some containers PID 1 never reaps orphans)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return data[data.rfind(b")") + 2 :].split()[0] not in (b"Z", b"X")
