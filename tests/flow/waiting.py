"""Waiting for a condition in the flow tests (a plain module, importable by name)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


async def until(condition: Callable[[], object], limit_s: float = 30.0, what: str = "") -> None:
    """Poll ``condition`` every 5 ms until it is true; fail after ``limit_s`` seconds."""
    deadline = time.monotonic() + limit_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or condition}")
        await asyncio.sleep(0.005)
