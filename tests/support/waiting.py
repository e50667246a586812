"""Waiting for a condition, and reading the signals seen, in the flow tests (a plain module,
importable by name)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from lion_nb.signals import MessageAdded, MessageRetracted


async def until(condition: Callable[[], object], limit_s: float = 30.0, what: str = "") -> None:
    """Poll ``condition`` every 5 ms until it is true; fail after ``limit_s`` seconds."""
    deadline = time.monotonic() + limit_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or condition}")
        await asyncio.sleep(0.005)


def net_message_ids(seen: list[Any]) -> list[Any]:
    """The message ids the signals tell of: added minus retracted, in order."""
    ids: list[Any] = []
    for s in seen:
        if isinstance(s, MessageAdded):
            ids.append(s.message.id)
        elif isinstance(s, MessageRetracted):
            ids.remove(s.message_id)
    return ids
