"""Ray clusters for the tests: the run's shared local cluster (``ray_head`` in tests/conftest.py)
and the helpers of the two-node cluster in tests/flow/conftest.py."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator

import pytest


def started(start):
    """``start()``, once more if a busy machine made Ray's fixed start-up wait run out."""
    from lion_nb.flow.ray_start import is_slow_start

    try:
        return start()
    except Exception as exc:
        if not is_slow_start(exc):
            raise
        return start()


def warm_every_node(ray) -> None:
    """Run one task pinned to each node: a node whose raylet is registered may still have no
    worker that can take a task (seen on a loaded machine), and tests about where nodes run
    must start from a cluster where every node can."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    @ray.remote(num_cpus=1)
    def here() -> str:
        return ray.get_runtime_context().get_node_id()

    alive = [n["NodeID"] for n in ray.nodes() if n["Alive"]]
    pinned = [
        here.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote()
        for node in alive
    ]
    assert sorted(ray.get(pinned, timeout=120)) == sorted(alive)


@contextlib.contextmanager
def shared_ray_head() -> Iterator[str]:
    """A local Ray cluster started by ``python -m lion_nb.flow.ray_start`` in its own process,
    stopped after; yields its address (what ``RAY_ADDRESS`` names)."""
    import signal
    import subprocess
    import sys
    import tempfile
    import threading

    # Ray's socket paths must stay under 107 bytes: its session folder cannot live in tmp_path
    ray_tmp = tempfile.mkdtemp(prefix="ray", dir="/tmp")
    env = {**os.environ, "RAY_TMPDIR": ray_tmp}
    env.pop("RAY_ADDRESS", None)
    head = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lion_nb.flow.ray_start",
            "--num-cpus=2",
            "--node-ip-address=127.0.0.1",
            "--defer-imports",  # the start-up shortcut, opt-in (lion_nb/flow/ray_start.py)
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    ready = threading.Event()

    def read() -> None:  # the head's output, until it says where it is (or exits)
        assert head.stdout is not None
        for line in head.stdout:
            lines.append(line)
            if "RAY_ADDRESS=" in line:
                ready.set()
        ready.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        # start_ray tries twice, each within Ray's own waits; this bound is only a backstop
        if not ready.wait(300) or "RAY_ADDRESS=" not in "".join(lines):
            pytest.fail("the shared Ray cluster did not start:\n" + "".join(lines)[-3000:])
        yield "".join(lines).split("RAY_ADDRESS=", 1)[1].split()[0]
    finally:
        head.send_signal(signal.SIGTERM)  # the head shuts its cluster down and exits
        try:
            head.wait(60)
        except subprocess.TimeoutExpired:
            head.kill()
            head.wait()
        reader.join(10)
        assert head.stdout is not None
        head.stdout.close()
        shutil.rmtree(ray_tmp, ignore_errors=True)
