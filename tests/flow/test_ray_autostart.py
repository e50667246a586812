"""``engine="ray"`` without ``ray.init()`` first starts a local Ray cluster (and leaves it
running for the next cells, as in a notebook); this test shuts it down."""

from __future__ import annotations

import ray
from helpers_core import scripted

from lion_nb import Branch
from lion_nb.flow import Flow
from lion_nb.flow.node import Status


async def test_the_first_ray_run_starts_a_local_cluster():
    if ray.is_initialized():
        ray.shutdown()
    try:
        flow = Flow()
        node = flow.add("communicate", instruction="x", branch=Branch(chat_model=scripted("y")))
        await flow.run(engine="ray")
        assert ray.is_initialized() and node.status is Status.COMPLETED
        assert node.metadata["ray"]["attempts"][0]["node_id"] == (
            ray.get_runtime_context().get_node_id()
        )
    finally:
        ray.shutdown()
