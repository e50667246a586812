"""Real Ray clusters for the Ray engine tests.

``ray_local``: this process joined to the run's shared local cluster (``ray_head`` in
tests/conftest.py: 2 CPUs, started once per run), left at the end of the module (leaving only
disconnects). ``ray_cluster``: two Ray nodes on this machine through Ray's own
``ray.cluster_utils.Cluster`` (1 CPU each), for the tests about where nodes run and workers
that die; module scope: it costs seconds to start, and the tests of one module share it."""

from __future__ import annotations

import pytest

from tests.support.ray_clusters import started, warm_every_node


@pytest.fixture(scope="module")
def ray_local(ray_head):
    import ray

    from lion_nb.flow.ray_start import start_ray

    if ray.is_initialized():
        ray.shutdown()
    start_ray(address=ray_head, defer_imports=True)
    try:
        yield ray
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def ray_cluster():
    import ray
    from ray.cluster_utils import Cluster

    from lion_nb.flow.ray_start import ray_process_env

    if ray.is_initialized():
        ray.shutdown()
    # Cluster picks the machine's address itself (passing 127.0.0.1 leaves its GCS unreachable);
    # the suite's loopback-only guard is a function-scoped fixture, set up after this one.
    # its processes start as start_ray(defer_imports=True)'s do: fast, waits raised
    with ray_process_env(defer_imports=True):
        cluster = started(
            lambda: Cluster(
                initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False}
            )
        )
        try:
            started(lambda: cluster.add_node(num_cpus=1))
        except BaseException:
            cluster.shutdown()
            raise
    try:
        ray.init(address=cluster.address, log_to_driver=False)
        cluster.wait_for_nodes()
        warm_every_node(ray)
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()
