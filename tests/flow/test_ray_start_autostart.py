"""``engine="ray"`` without ``ray.init()`` first starts Ray itself through ``start_ray``: here
it joins the run's shared cluster because ``RAY_ADDRESS`` names it (as after ``ray start --head``
in a terminal), and stays connected for the next cells, as in a notebook; this test leaves it.
A new local cluster is started the same way by ``ray_head`` itself."""

from __future__ import annotations

import ray

from lion_nb import Branch
from lion_nb.flow import Flow
from lion_nb.flow.node import Status
from tests.support.scripted import scripted


async def test_the_first_ray_run_joins_the_cluster_ray_address_names(ray_head, monkeypatch):
    if ray.is_initialized():
        ray.shutdown()
    monkeypatch.setenv("RAY_ADDRESS", ray_head)
    try:
        flow = Flow()
        node = flow.add("communicate", instruction="x", branch=Branch(chat_model=scripted("y")))
        await flow.run(engine="ray")
        assert ray.is_initialized() and node.status is Status.COMPLETED
        assert ray.get_runtime_context().gcs_address == ray_head
        assert node.metadata["ray"]["attempts"][0]["node_id"] == (
            ray.get_runtime_context().get_node_id()
        )
    finally:
        ray.shutdown()
