"""``Operation``: the graph node - status, response/error, where and when it ran, usage."""

from __future__ import annotations

import asyncio

import pytest

from lion_nb import Branch
from lion_nb.errors import OperationError
from lion_nb.flow.node import Operation, Status
from tests.support.scripted import scripted


async def test_a_completed_node_records_branch_timings_and_usage():
    branch = Branch(
        chat_model=scripted({"text": "hi", "usage": {"input_tokens": 4, "output_tokens": 1}})
    )
    node = Operation("chat", {"instruction": "hello"})
    assert node.status is Status.PENDING and not node.status.settled
    assert await node.invoke(branch) == "hi"
    assert node.status is Status.COMPLETED and node.status.settled
    assert node.branch is branch and node.branch_id == branch.id and node.error is None
    assert node.started_at is not None and node.ended_at >= node.started_at
    assert node.duration_ms is not None and node.duration_ms >= 0
    assert (node.usage.input_tokens, node.usage.output_tokens) == (4, 1)  # chat: no RunEnd


async def test_failure_is_captured_and_execute_raises():
    branch = Branch()
    node = Operation("teleport")
    assert await node.invoke(branch) is None
    assert node.status is Status.FAILED and isinstance(node.error, OperationError)
    assert str(node.error) == "Unsupported operation type: teleport"
    with pytest.raises(OperationError, match="Unsupported operation type: teleport"):
        await Operation("teleport").execute(branch)


async def test_cancellation_settles_the_node_as_stopped_not_failed_and_propagates():
    branch = Branch(chat_model=scripted({"text": "slow reply", "delay": 5}))
    node = Operation("communicate", {"instruction": "x"})
    task = asyncio.create_task(node.invoke(branch))
    await asyncio.sleep(0.05)
    assert node.status is Status.RUNNING
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert node.status is Status.STOPPED and node.error is None
    assert node.duration_ms is not None and node.status.settled


def test_transitions_and_names():
    with pytest.raises(TypeError, match="non-empty string"):
        Operation("")
    node = Operation("chat")
    node.mark_skipped(RuntimeError("parent failed"))
    assert node.status is Status.SKIPPED and node.duration_ms is None
    with pytest.raises(RuntimeError, match="already settled"):
        node.mark_running(None)
    assert [s.value for s in Status] == [
        "pending",
        "running",
        "completed",
        "failed",
        "stopped",
        "cancelled",
        "skipped",
    ]
    assert [s.value for s in Status if not s.settled] == ["pending", "running"]


def test_run_usage_adds_up():
    node = Operation("chat")
    node.add_run_usage(3, 2, 0.5)
    node.add_run_usage(1, None, None)
    assert (node.usage.input_tokens, node.usage.output_tokens, node.usage.total_cost_usd) == (
        4,
        2,
        0.5,
    )


def test_label_and_title_say_what_a_node_asks_and_what_it_is_called():
    asks = Operation("communicate", {"instruction": "Write\nsection  2", "on_stop": "record"})
    assert asks.label() == "Write section 2" and asks.title() == "Write section 2"
    named = Operation("communicate", {"instruction": "Write section 2"}, name="section 2")
    assert named.title() == "section 2" and named.label() == "Write section 2"
    assert "name='section 2'" in repr(named)
    bare = Operation("chat", {"on_stop": "record"})  # a verb option is not what it asks
    assert bare.label() == "" and bare.title() == "chat"
    assert len(Operation("chat", {"text": "x" * 100}).title()) == 40


def test_cancelled_is_settled_until_requeued_and_only_an_unstarted_node_is_cancelled():
    node = Operation("chat")
    node.mark_cancelled()
    assert node.status is Status.CANCELLED and node.status.settled and node.error is None
    assert node.requeue() is True and node.status is Status.PENDING and node.ended_at is None
    assert node.requeue() is False
    node.mark_running(None)
    with pytest.raises(RuntimeError, match="stopped, not cancelled"):
        node.mark_cancelled()
    node.mark_stopped()
    assert node.status is Status.STOPPED and node.requeue() is False
