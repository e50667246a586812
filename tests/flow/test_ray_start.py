"""``start_ray``: Ray started quietly, once more when a busy machine makes its start time out,
and a clear message when it still does not start. The retry rule is checked on a stand-in for
the ``ray`` module (a slow raylet cannot be produced on demand); the real start is checked by
every Ray test, whose clusters start through it (tests/flow/conftest.py)."""

from __future__ import annotations

import logging

import pytest

from lion_nb.flow.errors import EngineUnavailable
from lion_nb.flow.ray_start import is_slow_start, start_ray

TIMED_OUT = Exception(
    "The current node timed out during startup. This could happen because some of the raylet "
    "failed to startup or the GCS has become overloaded."
)


class RayStandIn:
    def __init__(self, *failures: Exception) -> None:
        self.failures = list(failures)
        self.inits: list[dict] = []
        self.shutdowns = 0
        self.up = False

    def is_initialized(self) -> bool:
        return self.up

    def init(self, **kw) -> None:
        self.inits.append(kw)
        if self.failures:
            raise self.failures.pop(0)
        self.up = True

    def shutdown(self) -> None:
        self.shutdowns += 1
        self.up = False


def test_a_start_that_times_out_is_tried_again_quietly() -> None:
    ray = RayStandIn(TIMED_OUT)
    started = start_ray(num_cpus=2, ray=ray)
    assert started.attempts == 2 and not started.reused and ray.up
    assert ray.shutdowns == 1  # the half-started node went before the second attempt
    assert ray.inits[0] == {
        "include_dashboard": False,
        "log_to_driver": False,
        "logging_level": logging.WARNING,  # Ray's INFO lines stay out of the cell
        "num_cpus": 2,
    }


def test_a_start_that_keeps_timing_out_says_what_to_do() -> None:
    ray = RayStandIn(
        TIMED_OUT, Exception("Failed to get node info b'RPC error: Deadline Exceeded'")
    )
    with pytest.raises(EngineUnavailable, match="Ray did not start") as info:
        start_ray(ray=ray)
    assert "ray start --head" in str(info.value) and "2 attempts" in str(info.value)
    assert not ray.up


def test_other_failures_are_not_retried_and_a_running_ray_is_reused() -> None:
    ray = RayStandIn(ValueError("bad address"))
    with pytest.raises(EngineUnavailable, match="bad address"):
        start_ray(ray=ray)
    assert len(ray.inits) == 1 and not is_slow_start(ValueError("bad address"))
    ray.up = True
    assert start_ray(ray=ray).reused and len(ray.inits) == 1
