"""A stop mid-stream (Stop, Escape, Kernel -> Interrupt: the call's task is cancelled) closes
the connection, and the server sees it: it stops generating (``/slots`` says idle, and the
server process goes quiet), and the partial reply is kept as a stopped turn."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import httpx
import pytest

from lion_nb import Branch
from lion_nb.signals import StreamDelta
from tests.conformance.matrix import Cell
from tests.conformance.suite import MARKS, cells, model, outcome

pytestmark = MARKS

STORY = "Write a very long story about a dragon who learns to bake bread."


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) the process has used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def cpu_rate(pid: int, seconds: float) -> float:
    """CPU seconds per second the process uses over the next ``seconds``."""
    before, start = cpu_seconds(pid), time.monotonic()
    await asyncio.sleep(seconds)
    return (cpu_seconds(pid) - before) / (time.monotonic() - start)


async def slots_idle(server: Any, within: float = 20.0) -> bool:
    """llama-server's ``/slots``: no slot is processing a task (polled up to ``within`` s)."""
    deadline = time.monotonic() + within
    async with httpx.AsyncClient(timeout=5) as client:
        while time.monotonic() < deadline:
            slots = (await client.get(f"{server.root}/slots")).json()
            if not any(slot.get("is_processing") for slot in slots):
                return True
            await asyncio.sleep(0.1)
    return False


@pytest.mark.parametrize(("server", "api", "cell"), cells("stop"))
async def test_a_stop_mid_stream_ends_the_generation_on_the_server(
    request: pytest.FixtureRequest, server: str, api: str, cell: Cell
) -> None:
    real = request.getfixturevalue(server)
    chat_model = model(real, api, max_tokens=1000)
    branch = Branch(chat_model=chat_model)
    if cell.outcome == "refused":
        await outcome(cell, lambda: branch.communicate(STORY))
        return
    first = asyncio.Event()
    branch.subscribe((StreamDelta,), lambda s: first.set())
    call = asyncio.create_task(branch.communicate(STORY, on_stop="record"))
    try:
        await asyncio.wait_for(first.wait(), 90)
        generating = await cpu_rate(real.proc.pid, 1.0)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
    finally:
        call.cancel()
        await chat_model.aclose()
    # The partial reply is kept as a stopped turn (on_stop="record").
    assert branch.messages[-1].metadata.get("stopped") is True
    assert branch.messages[-1].text.strip()
    if real.kind == "llama-server":
        assert await slots_idle(real), "llama-server kept generating after the stop"
    await asyncio.sleep(0.5)
    after = await cpu_rate(real.proc.pid, 1.5)
    # Still generating, the server would use about as much CPU as before the stop.
    assert after < 0.3 * generating, (generating, after)
