"""One CLI agent subprocess, owned for the length of one stream and reaped on ``aclose()``.

``CLIProcess`` starts the executable in its **own process group** (``start_new_session=True``)
so that everything the agent spawns — shells, language servers, subagents — can be signalled at
once. ``aclose()`` sends SIGTERM to the group, waits ``terminate_grace`` seconds, sends SIGKILL
to whatever is left, and returns only when the leader is reaped and no live member of the group
remains. It is idempotent and safe to call from a ``finally`` during cancellation: if it is
itself cancelled while waiting, the group gets SIGKILL before the cancellation propagates.

stdout is read in raw blocks (``read()`` / ``blocks()``) for a sans-I/O decoder; stderr is
drained concurrently into a bounded tail (a CLI that logs a lot can never block on a full
pipe), available as ``stderr_tail`` for error messages. stdin is the given bytes (written
concurrently, then closed) or ``/dev/null`` — never the notebook's stdin.

Environment values are never logged: they routinely hold API keys.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import time
from collections.abc import AsyncGenerator, Mapping, Sequence
from pathlib import Path

from lion_nb.errors import CLIError, CLINotFound

logger = logging.getLogger(__name__)

DEFAULT_GRACE = 2.0
STDERR_TAIL_BYTES = 8192
READ_SIZE = 64 * 1024
EXIT_DRAIN = 0.5  # how long stdout may stay open after the leader exited (a grandchild holds it)


def merged_env(overrides: Mapping[str, str | None] | None) -> dict[str, str]:
    """``os.environ`` with ``overrides`` applied; a ``None`` value removes the variable."""
    env = dict(os.environ)
    for key, value in (overrides or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = str(value)
    return env


def resolve_executable(
    name: str, env: Mapping[str, str], *, package: str | None, provider: str | None
) -> str:
    """The absolute path to run, or ``CLINotFound`` naming the npm package to install."""
    hint = f"; install it with `npm install -g {package}`" if package else ""
    if os.sep in name or (os.altsep and os.altsep in name):
        path = Path(name).expanduser()
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
        problem = "is not executable" if path.is_file() else "does not exist"
        raise CLINotFound(
            f"CLI executable {str(path)!r} {problem}{hint} or pass cli_path=", provider=provider
        )
    found = shutil.which(name, path=env.get("PATH", os.defpath))
    if found is None:
        raise CLINotFound(
            f"CLI executable {name!r} was not found on PATH{hint} or pass cli_path=",
            provider=provider,
        )
    return found


def _proc_state(pid: int) -> tuple[str, int] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return None
    # The command name may contain spaces and parentheses: fields start after the last ")".
    fields = stat[stat.rfind(b")") + 2 :].split()
    return fields[0].decode(), int(fields[2])


def group_alive(pgid: int) -> bool:
    """True while some non-zombie process is in group ``pgid``.

    ``killpg(pgid, 0)`` alone also counts zombies. Orphaned members are re-parented to PID 1,
    and not every PID 1 reaps (container init shims often don't), so a dead grandchild could
    keep a group "alive" forever. On Linux the group's members are therefore read from /proc;
    elsewhere the signal probe is the answer.
    """
    if not _group_exists(pgid):
        return False
    if not os.path.isdir("/proc/self"):
        return True
    with os.scandir("/proc") as entries:
        for entry in entries:
            if entry.name.isdigit():
                state = _proc_state(int(entry.name))
                if state is not None and state[1] == pgid and state[0] not in ("Z", "X"):
                    return True
    return False


def _group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


class CLIProcess:
    """A started-on-demand CLI subprocess. Use ``start()``, ``read()`` until ``b""``, ``wait()``,
    and always ``aclose()`` (or ``async with``)."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        stdin: bytes | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        terminate_grace: float = DEFAULT_GRACE,
        stderr_tail_bytes: int = STDERR_TAIL_BYTES,
        package: str | None = None,
        provider: str | None = None,
    ) -> None:
        if not argv:
            raise ValueError("argv must name an executable")
        self.argv = list(argv)
        self.stdin_data = stdin
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.terminate_grace = max(0.0, float(terminate_grace))
        self.package = package
        self.provider = provider
        self.pid: int | None = None
        self.pgid: int | None = None
        self.returncode: int | None = None
        self.exited_at: float | None = None  # monotonic time the leader exit was noticed
        self._stderr_limit = stderr_tail_bytes
        self._stderr = bytearray()
        self._proc: asyncio.subprocess.Process | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._wait_task: asyncio.Task[int] | None = None
        self._closed = False

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        if self._proc is not None:
            raise RuntimeError("CLIProcess.start() called twice")
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.PIPE
                if self.stdin_data is not None
                else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,  # own process group: aclose() signals all of it
            )
        except FileNotFoundError as exc:
            if self.cwd is not None and exc.filename == os.fspath(self.cwd):
                raise CLIError(
                    f"working directory {os.fspath(self.cwd)!r} does not exist",
                    provider=self.provider,
                ) from exc
            hint = f"; install it with `npm install -g {self.package}`" if self.package else ""
            raise CLINotFound(
                f"CLI executable {self.argv[0]!r} was not found{hint}", provider=self.provider
            ) from exc
        except OSError as exc:
            raise CLIError(
                f"could not start {self.argv[0]!r}: {exc.strerror or exc}", provider=self.provider
            ) from exc
        self.pid = self.pgid = self._proc.pid  # a new session's leader: pgid == pid
        logger.debug("%s: started pid %d", self.provider or self.argv[0], self.pid)
        self._wait_task = asyncio.create_task(self._wait_exit())
        self._tasks.append(asyncio.create_task(self._drain_stderr()))
        if self.stdin_data is not None:
            self._tasks.append(asyncio.create_task(self._feed_stdin(self.stdin_data)))

    async def __aenter__(self) -> CLIProcess:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _wait_exit(self) -> int:
        assert self._proc is not None
        # Before Python 3.12, Process.wait() returns only once every pipe is closed too, so a
        # grandchild holding stdout would hide the leader's exit. The transport learns the
        # exit code at once, though: poll it, with wait() as the fast path.
        waiter = asyncio.ensure_future(self._proc.wait())
        try:
            delay = 0.002
            while self._proc.returncode is None:
                await asyncio.wait({waiter}, timeout=delay)
                delay = min(delay * 2, 0.05)
        finally:
            if not waiter.done():
                waiter.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await waiter
        self.returncode = self._proc.returncode
        self.exited_at = time.monotonic()
        return self.returncode

    async def _drain_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        while block := await self._proc.stderr.read(4096):
            self._stderr += block
            if len(self._stderr) > self._stderr_limit:
                del self._stderr[: len(self._stderr) - self._stderr_limit]

    async def _feed_stdin(self, data: bytes) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        writer = self._proc.stdin
        # A CLI that exits without reading its stdin is not our failure: ignore broken pipes.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            writer.write(data)
            await writer.drain()
        writer.close()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            await writer.wait_closed()

    # -- reading -----------------------------------------------------------------------------

    @property
    def stderr_tail(self) -> str:
        """The last ``stderr_tail_bytes`` of stderr, decoded leniently."""
        return self._stderr.decode("utf-8", errors="replace")

    async def read(self) -> bytes:
        """The next block of stdout; ``b""`` at the end.

        The end is EOF, or — when the leader has exited but a surviving grandchild still holds
        the pipe open — ``EXIT_DRAIN`` seconds without output after the exit, so a stray
        background process cannot make the stream hang.
        """
        if self._proc is None or self._proc.stdout is None or self._wait_task is None:
            raise RuntimeError("CLIProcess.read() before start()")
        reader = self._proc.stdout
        block_task = asyncio.ensure_future(reader.read(READ_SIZE))
        try:
            if not self._wait_task.done():
                await asyncio.wait(
                    {block_task, self._wait_task}, return_when=asyncio.FIRST_COMPLETED
                )
            if not block_task.done():
                # The leader is gone; whatever it wrote is already in the pipe. Only a
                # grandchild can still be writing, and silence from it ends the stream.
                done, _ = await asyncio.wait({block_task}, timeout=EXIT_DRAIN)
                if not done:
                    logger.debug(
                        "%s: stdout still open after exit; ending the stream",
                        self.provider or self.argv[0],
                    )
                    return b""
            return block_task.result()
        finally:
            if not block_task.done():
                block_task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await block_task

    async def blocks(self) -> AsyncGenerator[bytes, None]:
        """stdout blocks until the end (see ``read``). Close the generator when done early."""
        while block := await self.read():
            yield block

    async def wait(self) -> int:
        """Wait for the leader to exit; returns its exit code (negative: killed by a signal).
        Also gives stderr a moment to reach EOF so ``stderr_tail`` is complete."""
        if self._wait_task is None:
            raise RuntimeError("CLIProcess.wait() before start()")
        code = await self._wait_task
        if self._tasks:
            await asyncio.wait(self._tasks[:1], timeout=EXIT_DRAIN)
        return code

    # -- cleanup -----------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Terminate the whole process group and reap it. Returns when the group is gone."""
        if self._proc is None or self._closed:
            return
        self._closed = True
        pgid = self.pgid
        assert pgid is not None and self._wait_task is not None
        try:
            if _group_exists(pgid):  # cheap probe; signalling zombies is harmless
                _signal_group(pgid, signal.SIGTERM)
                if not await self._until_gone(pgid, self.terminate_grace):
                    logger.debug(
                        "%s: process group %d survived SIGTERM for %.2fs; SIGKILL",
                        self.provider or self.argv[0],
                        pgid,
                        self.terminate_grace,
                    )
                    _signal_group(pgid, signal.SIGKILL)
                    await self._until_gone(pgid, 5.0)
            else:
                # The leader may be a zombie that asyncio has not reaped yet.
                await asyncio.wait({self._wait_task}, timeout=5.0)
        except BaseException:
            # Cancelled (or failed) while waiting: never leave the group running.
            _signal_group(pgid, signal.SIGKILL)
            raise
        finally:
            await self._release_pipes()

    async def _until_gone(self, pgid: int, within: float) -> bool:
        """Poll until the leader is reaped and no live member remains, or ``within`` passes."""
        assert self._wait_task is not None
        deadline = time.monotonic() + within
        delay = 0.001
        while True:
            if self._wait_task.done() and not group_alive(pgid):
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if not self._wait_task.done():
                await asyncio.wait({self._wait_task}, timeout=min(delay, left))
            else:
                await asyncio.sleep(min(delay, left))
            delay = min(delay * 2, 0.02)

    async def _release_pipes(self) -> None:
        """Let asyncio see EOF on every pipe so the subprocess transport closes itself (else it
        is reported as unclosed when garbage-collected). The group is dead, so EOF is near."""
        proc = self._proc
        assert proc is not None
        if proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.close()
        if proc.stdout is not None:
            with contextlib.suppress(TimeoutError, OSError):
                async with asyncio.timeout(1.0):
                    while await proc.stdout.read(READ_SIZE):
                        pass
        pending = [t for t in self._tasks if not t.done()]
        if pending:
            await asyncio.wait(pending, timeout=1.0)
        for task in self._tasks:
            if not task.done():
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError, OSError):
                await task
        if self._wait_task is not None and not self._wait_task.done():
            self._wait_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._wait_task
