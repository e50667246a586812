"""The conformance suite: lion_nb against real servers (``tests/servers/real.py``: llama.cpp's
``llama-server`` with one slot and with four, and ``python -m llama_cpp.server``), through each
wire API: chat completions (``provider="openai"``), the Responses API (``api="responses"``)
and Anthropic's Messages API (``provider="anthropic"``, llama-server's ``/v1/messages``).

What each cell should do is in ``matrix.py`` (the table the README shows). The servers are
session fixtures; replies are short (``max_tokens`` 6-40), at temperature 0.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

from lion_nb import iModel
from tests.conformance.matrix import MATRIX, Cell

T = TypeVar("T")

MARKS = [pytest.mark.real_server, pytest.mark.slow, pytest.mark.local_model]
"""Every conformance test's marks (``pytestmark`` of each module)."""


def model(server: Any, api: str, **options: Any) -> iModel:
    """A model of wire API ``api`` ("chat", "responses", "messages") on ``server``: short
    replies at temperature 0 (and a seed where the API takes one)."""
    options = {"temperature": 0, "max_tokens": 16, "timeout": 120, **options}
    if api == "chat":
        return iModel(provider="openai", model="smollm2", base_url=server.v1, seed=7, **options)
    if api == "responses":
        return iModel(
            provider="openai", api="responses", model="smollm2", base_url=server.v1, **options
        )
    assert api == "messages"
    return iModel(
        provider="anthropic", model="smollm2", base_url=server.root, api_key="local", **options
    )


def cells(
    feature: str, *, outcomes: tuple[str, ...] | None = None, xfail_pending: bool = True
) -> list[Any]:
    """``pytest.param(server, api, cell)`` for each cell of ``feature`` that is run (of
    ``outcomes`` only, when given): a cell waiting for a capability is an
    ``xfail(strict=False)`` naming it, unless ``xfail_pending`` is False (a test of what
    holds before and after)."""
    params = []
    for (server, api, name), cell in MATRIX.items():
        if name != feature or cell.outcome == "untested":
            continue
        if outcomes is not None and cell.outcome not in outcomes:
            continue
        marks = []
        if cell.pending and xfail_pending:
            reason = f"needs {cell.pending} (models/capabilities.py)"
            marks.append(pytest.mark.xfail(strict=False, reason=reason))
        params.append(pytest.param(server, api, cell, id=f"{server}-{api}", marks=marks))
    return params


async def outcome(cell: Cell, action: Callable[[], Awaitable[T]]) -> T | None:
    """Run ``action`` as ``cell`` says: a refused cell must raise its error class with the
    fix in the message (None is returned); a pending cell must work (it is an xfail until
    the capability lands); any other returns what the action gave."""
    if cell.outcome == "refused" and not cell.pending:
        assert cell.error is not None
        with pytest.raises(cell.error) as info:
            await action()
        assert cell.fix in str(info.value), str(info.value)
        return None
    return await action()
