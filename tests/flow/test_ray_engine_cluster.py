"""The Ray engine on two Ray nodes (``ray.cluster_utils.Cluster`` on this machine): nodes
spread over both; a worker killed mid-node is retried by Ray and recorded once (what its dead
attempt landed live is taken back), and one whose retries are used up keeps what landed."""

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
from lion_nb.flow.node import Status
from lion_nb.session.session import Session
from lion_nb.signals import MessageRetracted, RunEnd, RunFailed, RunStart, StreamDelta
from tests.support.waiting import net_message_ids

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


def _slow_cli_branch(parts: int) -> Branch:
    """A CLI turn (``run``) records its instruction first and then streams, so the instruction
    lands on the notebook's branch live while the reply is still being written."""
    chunks = [f"part{i} " for i in range(parts)]
    reply = {"chunks": chunks, "delay": 0.1}
    return Branch(system="s", chat_model=iModel(provider="scripted", cli=True, default_reply=reply))


async def test_a_worker_killed_mid_node_is_retried_and_recorded_once():
    b = _slow_cli_branch(10)
    seen: list = []
    b.observe(handler=seen.append)
    flow = Flow()
    node = flow.add("run_and_collect", instruction="write slowly", branch=b)
    task = asyncio.create_task(flow.run(engine="ray"))
    deadline = time.monotonic() + 60
    while not any(isinstance(s, StreamDelta) for s in seen):  # the first attempt is streaming
        assert time.monotonic() < deadline and not task.done(), "no delta arrived"
        await asyncio.sleep(0.01)
    # its instruction landed live, before its reply was done
    assert [m.text for m in b.messages] == ["s", "write slowly"]
    first_instruction = b.messages[1].id
    at_kill = len(seen)
    first = node.metadata["ray"]["attempts"][0]
    os.kill(first["pid"], signal.SIGKILL)
    await asyncio.wait_for(task, 120)

    assert node.status is Status.COMPLETED, node.error
    assert node.response == "".join(f"part{i} " for i in range(10))
    attempts = node.metadata["ray"]["attempts"]
    assert len(attempts) == 2 and attempts[1]["pid"] != first["pid"]
    # recorded once: one instruction (the retry's) and one response
    assert [m.text for m in b.messages] == ["s", "write slowly", node.response]
    assert first_instruction not in b.messages
    # the dead attempt's instruction was taken back after the kill (newest first: it is last)
    retracted = [(i, s) for i, s in enumerate(seen) if isinstance(s, MessageRetracted)]
    assert retracted and retracted[-1][1].message_id == first_instruction
    assert all(i >= at_kill for i, _ in retracted) and "Ray retried it" in retracted[-1][1].reason
    # MessageAdded / MessageRetracted tell the truth: their net is the branch, each id once
    assert net_message_ids(seen) == [m.id for m in b.messages][1:]
    # every RunStart has its terminal: the lost attempt's run failed, the retry's ended
    lifecycle = [s for s in seen if isinstance(s, RunStart | RunEnd | RunFailed)]
    assert [type(s).__name__ for s in lifecycle] == ["RunStart", "RunFailed", "RunStart", "RunEnd"]
    assert isinstance(lifecycle[1].error, WorkerLost)
    assert lifecycle[0].run_id == lifecycle[1].run_id != lifecycle[2].run_id == lifecycle[3].run_id
    # ... and the dead attempt's messages left before its run was closed
    assert seen.index(retracted[-1][1]) < seen.index(lifecycle[1])


async def test_a_node_whose_retries_are_used_up_fails_and_keeps_what_landed():
    b = _slow_cli_branch(20)
    seen: list = []
    b.observe(RunStart, RunEnd, RunFailed, MessageRetracted, handler=seen.append)
    flow = Flow()
    node = flow.add("run_and_collect", instruction="write slowly", branch=b)
    after = flow.add("communicate", instruction="next", depends_on=[node])
    task = asyncio.create_task(flow.run(engine="ray", ray_options={"max_retries": 0}))
    deadline = time.monotonic() + 60
    while len(b.messages) < 2:  # the attempt's instruction landed live
        assert time.monotonic() < deadline and not task.done(), "the node never started"
        await asyncio.sleep(0.01)
    os.kill(node.metadata["ray"]["attempts"][0]["pid"], signal.SIGKILL)
    await asyncio.wait_for(task, 120)
    assert node.status is Status.FAILED and isinstance(node.error, WorkerLost)
    assert "max_retries=0" in str(node.error) and after.status is Status.SKIPPED
    # no attempt follows: what landed is what happened, and stays (as on the local engine)
    assert [m.text for m in b.messages] == ["s", "write slowly"]
    assert [type(s).__name__ for s in seen] == ["RunStart", "RunFailed"]
