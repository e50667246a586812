"""A vendor model without a key is refused at its first call, before any connection, with
an ``AuthenticationError`` naming the environment variable(s) and ``api_key=``; building the
model without a key keeps working (notebooks build models before they set keys)."""

from __future__ import annotations

import socket
import time
from typing import Any

import pytest

from lion_nb import Branch, iModel
from lion_nb.errors import AuthenticationError
from lion_nb.models.base import ModelRequest

VENDORS = [
    ({"provider": "openai", "model": "gpt-4.1-mini"}, ["$OPENAI_API_KEY"]),
    ({"provider": "openai", "model": "gpt-4.1-mini", "api": "responses"}, ["$OPENAI_API_KEY"]),
    ({"provider": "anthropic", "model": "claude-sonnet-4-5"}, ["$ANTHROPIC_API_KEY"]),
    ({"provider": "gemini", "model": "gemini-2.5-flash"}, ["$GEMINI_API_KEY", "$GOOGLE_API_KEY"]),
    ({"provider": "openrouter", "model": "openai/gpt-4.1-mini"}, ["$OPENROUTER_API_KEY"]),
]


@pytest.fixture
def connections(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every connection attempted (each is refused, as the suite refuses the network)."""
    attempts: list[Any] = []

    def connect(self: socket.socket, address: Any) -> None:
        attempts.append(address)
        raise ConnectionRefusedError(f"no connection may be attempted: {address!r}")

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect)
    return attempts


@pytest.mark.parametrize(("options", "names"), VENDORS, ids=lambda v: str(v)[:40])
async def test_no_key_is_refused_before_any_connection(
    options: dict[str, Any], names: list[str], connections: list[Any]
) -> None:
    model = iModel(**options)  # construction without a key works
    started = time.perf_counter()
    with pytest.raises(AuthenticationError) as caught:
        await model.complete(ModelRequest(messages=[{"role": "user", "content": "hi"}]))
    assert time.perf_counter() - started < 2  # no retries, no backoff (it used to take 1.9 s)
    message = str(caught.value)
    assert all(name in message for name in names) and "api_key=" in message
    assert "nothing was sent" in message
    assert connections == []


async def test_a_branch_call_without_a_key_names_the_variable(connections: list[Any]) -> None:
    branch = Branch(chat_model=iModel(provider="anthropic", model="claude-sonnet-4-5"))
    with pytest.raises(AuthenticationError, match=r"\$ANTHROPIC_API_KEY"):
        await branch.communicate("hello")
    assert connections == [] and len(branch.messages) == 0


async def test_a_remote_server_without_a_key_is_told_how_to_say_it_needs_none(
    connections: list[Any],
) -> None:
    model = iModel(provider="openai", model="m", base_url="http://10.1.2.3:8080/v1")
    with pytest.raises(AuthenticationError, match="api_key='none'"):
        await model.complete(ModelRequest(messages=[{"role": "user", "content": "hi"}]))
    assert connections == []
    assert (await model.capabilities()).probed is False  # not asked without its key either


async def test_a_key_in_the_environment_or_the_headers_is_a_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert not iModel(provider="openai").provider.missing_key()
    monkeypatch.delenv("OPENAI_API_KEY")
    assert iModel(provider="openai").provider.missing_key()
    with_header = iModel(provider="openai", headers={"Authorization": "Bearer x"})
    assert not with_header.provider.missing_key()
    # a loopback server may want none; a provider without key variables (Ollama) needs none
    assert not iModel(provider="openai", base_url="http://127.0.0.1:9/v1").provider.missing_key()
    assert not iModel(provider="ollama").provider.missing_key()
