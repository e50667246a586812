"""pytest fixtures for the loopback servers. Use them from a conftest with
``from tests.servers.fixtures import chat_server  # noqa: F401`` (or ``pytest_plugins`` in the
root conftest)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.servers.chat_server import ChatServer, start_chat_server


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    """A fresh chat-completions server on 127.0.0.1 (echo by default), stopped afterwards."""
    with start_chat_server() as server:
        yield server
