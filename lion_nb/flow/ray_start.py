"""Starting (or joining) Ray for flows, with time to spare on a busy laptop.

    from lion_nb.flow.ray_start import start_ray
    started = start_ray(num_cpus=2)      # StartedRay(seconds=6.8, reused=False, attempts=1)

``ray.init`` waits a fixed 30 s for its raylet to register; with both cores busy that is not
always enough ("The current node timed out during startup"), and a first attempt can also fail
with a gRPC "Deadline Exceeded". ``start_ray`` tries again once after such a failure (the
second start finds the machine warmer: files cached, a stale half-started node cleaned up), and
when Ray still does not start it raises ``EngineUnavailable`` saying what happened and what to
do. Ray's own log lines below WARNING stay out of the notebook cell (``logging_level``,
``log_to_driver=False``); a Ray already running in this process is reused as it is.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from lion_nb.flow.errors import EngineUnavailable

__all__ = ["StartedRay", "is_slow_start", "start_ray"]

_SLOW_START = ("timed out during startup", "Deadline Exceeded", "failed to connect to GCS")


@dataclass(frozen=True, slots=True)
class StartedRay:
    seconds: float  # how long the start took (0 when an initialised Ray was reused)
    reused: bool
    attempts: int = 1


def is_slow_start(exc: BaseException) -> bool:
    """Whether Ray failed to start because its processes were too slow (a busy machine)."""
    return any(words in str(exc) for words in _SLOW_START)


def start_ray(*, attempts: int = 2, ray: Any = None, **init_kw: Any) -> StartedRay:
    """``ray.init(**init_kw)`` with the quiet defaults a notebook wants (no dashboard, Ray's
    INFO lines and workers' prints out of the cell), tried ``attempts`` times when the start
    times out; reuses a Ray already initialised here. ``ray``: the module (tests pass one)."""
    if ray is None:
        from lion_nb.flow.ray_engine import import_ray

        ray = import_ray()
    if ray.is_initialized():
        return StartedRay(0.0, reused=True)
    options = {
        "include_dashboard": False,
        "log_to_driver": False,
        "logging_level": logging.WARNING,
        **init_kw,
    }
    started = time.monotonic()
    for attempt in range(1, attempts + 1):
        try:
            ray.init(**options)
        except Exception as exc:
            ray.shutdown()  # a half-started node: its processes go before the next attempt
            if not is_slow_start(exc) or attempt == attempts:
                waited = time.monotonic() - started
                raise EngineUnavailable(
                    f"Ray did not start ({attempt} attempt{'s' if attempt > 1 else ''} in "
                    f"{waited:.0f} s): {exc}. On a busy machine its processes may need longer "
                    "than Ray waits for them: close other heavy work and run the cell again, "
                    "or start Ray once in a terminal (`ray start --head --num-cpus=2`) and "
                    "connect with ray.init(address='auto')."
                ) from exc
            continue
        return StartedRay(round(time.monotonic() - started, 2), reused=False, attempts=attempt)
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises
