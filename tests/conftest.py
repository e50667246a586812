"""Suite-wide guards: no real network (loopback only), no writes to the user's home."""

from __future__ import annotations

import ipaddress
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
    for var in ("LION_NB_MODEL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
