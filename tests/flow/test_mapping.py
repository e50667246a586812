"""``Session.map``: one node per input, each on its own fork, results in input order."""

from __future__ import annotations

import asyncio

import pytest

from lion_nb.errors import ExecutionError
from lion_nb.flow.node import Operation, Status
from lion_nb.session.session import Session
from tests.support.scripted import scripted


def slow_for_early_rows(request) -> dict:
    """Row n replies after (5 - n) * 10 ms, so rows finish in reverse order."""
    text = request.messages[-1]["content"]
    n = int(text.rsplit(" ", 1)[-1])
    if n == 3:
        return {"error": ExecutionError("row 3 is broken")}
    return {"text": f"summary of {n}", "chunks": [f"summary of {n}"], "delay": (5 - n) * 0.01}


async def test_results_come_in_input_order_with_failures_as_none():
    session = Session()
    template = session.new_branch(system="Summarise.", chat_model=scripted(
        default_reply=slow_for_early_rows))  # fmt: skip
    finished: list[int] = []
    session.observe(handler=lambda s: finished.append(s) if type(s).__name__ == "RunEnd" else None)
    inputs = [{"instruction": f"Summarise: row {n}"} for n in range(5)]
    outs = await session.map("communicate", inputs, template=template, max_concurrent=5)
    assert outs == ["summary of 0", "summary of 1", "summary of 2", None, "summary of 4"]
    assert len(template.messages) == 1  # each row ran on its own fork
    nodes = await session.map("communicate", inputs[:2], template=template, return_nodes=True)
    assert all(isinstance(n, Operation) and n.status is Status.COMPLETED for n in nodes)
    assert [n.branch.messages[1].text for n in nodes] == ["Summarise: row 0", "Summarise: row 1"]
    assert len({n.branch.id for n in nodes}) == 2
    assert all(n.branch.session is session for n in nodes)


async def test_failed_rows_keep_their_error_on_the_node():
    session = Session()
    template = session.new_branch(chat_model=scripted(default_reply=slow_for_early_rows))
    nodes = await session.map(
        "communicate", [{"instruction": "row 3"}], template=template, return_nodes=True
    )
    assert nodes[0].status is Status.FAILED and "row 3 is broken" in str(nodes[0].error)


async def test_map_respects_max_concurrent():
    session = Session()
    running = peak = 0

    async def work(branch, i: int) -> int:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.005)
        running -= 1
        return i * i

    session.register_operation("work", work)
    outs = await session.map("work", [{"i": i} for i in range(10)], max_concurrent=2)
    assert outs == [i * i for i in range(10)] and peak == 2


async def test_inputs_must_be_mappings():
    session = Session()
    with pytest.raises(TypeError, match="input 1 is a str"):
        await session.map("communicate", [{"instruction": "a"}, "b"])
    other = Session().new_branch()
    with pytest.raises(ValueError, match="another session"):
        await session.map("communicate", [{"instruction": "a"}], template=other)
    assert not session.branches  # nothing was created for a refused call
