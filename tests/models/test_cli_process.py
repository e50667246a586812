"""CLIProcess on its own: pipes, stderr tail, stdin, and cleanup under cancellation."""

from __future__ import annotations

import asyncio
import os
import sys
import time

import pytest

from lion_nb.models.cli_process import CLIProcess, group_alive, merged_env, resolve_executable
from tests.support.fake_cli import FakeCLI, recording


def py(code: str) -> list[str]:
    return [sys.executable, "-c", code]


async def read_all(proc: CLIProcess) -> bytes:
    return b"".join([block async for block in proc.blocks()])


async def test_stdout_stderr_tail_and_exit_code() -> None:
    code = (
        "import sys\n"
        "sys.stderr.write('x' * 100000 + 'END\\n')\n"
        "sys.stdout.write('{\"a\": 1}\\n' * 20000)\n"
        "sys.exit(7)\n"
    )
    async with CLIProcess(py(code), stderr_tail_bytes=1000) as proc:
        out = await read_all(proc)
        assert await proc.wait() == 7
    assert out == b'{"a": 1}\n' * 20000
    assert len(proc.stderr_tail) == 1000 and proc.stderr_tail.endswith("xEND\n")


async def test_large_stdin_is_delivered_and_closed() -> None:
    data = os.urandom(3 * 1024 * 1024)
    code = "import sys, hashlib; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())"
    async with CLIProcess(py(code), stdin=data) as proc:
        out = await read_all(proc)
        assert await proc.wait() == 0
    import hashlib

    assert out.decode().strip() == hashlib.sha256(data).hexdigest()


async def test_stdin_never_read_is_not_an_error() -> None:
    async with CLIProcess(py("print('done')"), stdin=b"x" * (1024 * 1024)) as proc:
        assert await read_all(proc) == b"done\n"
        assert await proc.wait() == 0


async def test_default_stdin_is_dev_null() -> None:
    async with CLIProcess(py("import sys; print(repr(sys.stdin.read()))")) as proc:
        assert await read_all(proc) == b"''\n"


async def test_aclose_is_idempotent_and_reaps() -> None:
    proc = CLIProcess(
        py("import sys, time; sys.stdout.write('up\\n'); sys.stdout.flush(); time.sleep(60)")
    )
    await proc.start()
    assert await proc.read() == b"up\n"
    await proc.aclose()
    await proc.aclose()
    assert proc.returncode == -15  # SIGTERM
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pgid, 0)


async def test_cancelled_aclose_still_kills_the_group(fake_cli: FakeCLI) -> None:
    env = merged_env(fake_cli.env(recording("codex/text"), mode="ignore_term,hang", lines=1))
    proc = CLIProcess([str(fake_cli.path)], env=env, terminate_grace=30)
    await proc.start()
    assert await proc.read()  # running, and ignoring SIGTERM
    closing = asyncio.create_task(proc.aclose())
    await asyncio.sleep(0.2)
    assert not closing.done()  # waiting out the 30 s grace
    closing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await closing
    # SIGKILL went out synchronously before the cancellation propagated.
    assert await asyncio.to_thread(_gone_within, proc.pgid, 2.0)


def _gone_within(pgid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while group_alive(pgid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_merged_env_sets_and_unsets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LION_X", "1")
    env = merged_env({"LION_X": None, "LION_Y": "2"})
    assert "LION_X" not in env and env["LION_Y"] == "2" and env["PATH"] == os.environ["PATH"]


def test_resolve_executable(tmp_path) -> None:
    script = tmp_path / "tool"
    script.write_text("#!/bin/sh\n")
    with pytest.raises(Exception, match="is not executable"):
        resolve_executable(str(script), {}, package="pkg", provider="p")
    script.chmod(0o755)
    assert resolve_executable(str(script), {}, package="pkg", provider="p") == str(script)
    assert resolve_executable("tool", {"PATH": str(tmp_path)}, package=None, provider=None) == str(
        script
    )
