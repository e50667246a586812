"""The Ray engine on two Ray nodes (``ray.cluster_utils.Cluster`` on this machine): nodes
spread over both, and a worker killed mid-node is retried by Ray and recorded once."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time

import pytest
from ray import cloudpickle

from lion_nb import Branch, iModel
from lion_nb.flow import Flow
from lion_nb.flow.errors import WorkerLost
from lion_nb.operations.node import Status
from lion_nb.session.session import Session
from lion_nb.signals import MessageAdded, RunEnd, RunFailed, RunStart, StreamDelta

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # see test_ray_engine

pytestmark = pytest.mark.usefixtures("ray_cluster")


async def test_nodes_run_on_both_ray_nodes():
    session = Session()

    async def where(branch, i: int) -> str:
        import ray

        await asyncio.sleep(0.4)
        return ray.get_runtime_context().get_node_id()

    session.register_operation("where", where)
    flow = Flow(session)
    nodes = [flow.add("where", branch=session.new_branch(), i=i) for i in range(4)]
    await flow.run(engine="ray", max_concurrent=4, ray_options={"scheduling_strategy": "SPREAD"})
    assert all(n.status is Status.COMPLETED for n in nodes), [n.error for n in nodes]
    assert len({n.response for n in nodes}) == 2  # one CPU per Ray node: both were used
    assert {n.metadata["ray"]["attempts"][0]["node_id"] for n in nodes} == {
        n.response for n in nodes
    }


async def test_a_worker_killed_mid_node_is_retried_and_recorded_once():
    chunks = [f"part{i} " for i in range(10)]
    b = Branch(
        system="s",
        chat_model=iModel(provider="scripted", default_reply={"chunks": chunks, "delay": 0.1}),
    )
    seen: list = []
    b.observe(handler=seen.append)
    flow = Flow()
    node = flow.add("communicate", instruction="write slowly", branch=b)
    task = asyncio.create_task(flow.run(engine="ray"))
    deadline = time.monotonic() + 60
    while not any(isinstance(s, StreamDelta) for s in seen):  # the first attempt is streaming
        assert time.monotonic() < deadline and not task.done(), "no delta arrived"
        await asyncio.sleep(0.01)
    first = node.metadata["ray"]["attempts"][0]
    os.kill(first["pid"], signal.SIGKILL)
    await asyncio.wait_for(task, 120)

    assert node.status is Status.COMPLETED, node.error
    assert node.response == "".join(chunks)
    attempts = node.metadata["ray"]["attempts"]
    assert len(attempts) == 2 and attempts[1]["pid"] != first["pid"]
    # recorded once: one instruction and one response, each added once
    assert [m.text for m in b.messages] == ["s", "write slowly", "".join(chunks)]
    added = [s.message.id for s in seen if isinstance(s, MessageAdded)]
    assert added == [m.id for m in b.messages][1:]
    # every RunStart has its terminal: the lost attempt's run failed, the retry's ended
    lifecycle = [s for s in seen if isinstance(s, RunStart | RunEnd | RunFailed)]
    assert [type(s).__name__ for s in lifecycle] == ["RunStart", "RunFailed", "RunStart", "RunEnd"]
    assert isinstance(lifecycle[1].error, WorkerLost)
    assert lifecycle[0].run_id == lifecycle[1].run_id != lifecycle[2].run_id == lifecycle[3].run_id


async def test_a_node_whose_retries_are_used_up_fails_and_records_nothing():
    b = Branch(system="s", chat_model=iModel(provider="scripted", default_reply={
        "chunks": [f"part{i} " for i in range(20)], "delay": 0.1}))  # fmt: skip
    seen: list = []
    b.observe(RunStart, RunEnd, RunFailed, handler=seen.append)
    flow = Flow()
    node = flow.add("communicate", instruction="write slowly", branch=b)
    after = flow.add("communicate", instruction="next", depends_on=[node])
    task = asyncio.create_task(flow.run(engine="ray", ray_options={"max_retries": 0}))
    deadline = time.monotonic() + 60
    while not node.metadata.get("ray", {}).get("attempts") or not seen:
        assert time.monotonic() < deadline and not task.done(), "the node never started"
        await asyncio.sleep(0.01)
    os.kill(node.metadata["ray"]["attempts"][0]["pid"], signal.SIGKILL)
    await asyncio.wait_for(task, 120)
    assert node.status is Status.FAILED and isinstance(node.error, WorkerLost)
    assert "max_retries=0" in str(node.error) and after.status is Status.SKIPPED
    assert [m.text for m in b.messages] == ["s"]  # nothing half-recorded
    assert [type(s).__name__ for s in seen] == ["RunStart", "RunFailed"]
