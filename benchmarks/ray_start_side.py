"""One Ray start of B8 in a fresh interpreter: seconds from before ``import ray`` until Ray is
ready, printed as JSON with the load average.

    python ray_start_side.py start_ray|plain|join [ADDRESS]

* ``start_ray``: ``lion_nb.flow.ray_start.start_ray(num_cpus=2, defer_imports=True)``, a new
  local cluster with the start-up shortcut;
* ``plain``: ``ray.init(address="local", num_cpus=2, include_dashboard=False)``, the same start
  without lion_nb (the baseline);
* ``join``: ``start_ray(address=ADDRESS, defer_imports=True)``, joining a running cluster.
"""

from __future__ import annotations

import json
import os
import sys
import time

mode = sys.argv[1]
started = time.perf_counter()
if mode == "plain":
    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
else:
    from lion_nb.flow.ray_start import import_ray, start_ray

    start_ray(num_cpus=2, address=sys.argv[2] if mode == "join" else None, defer_imports=True)
    ray = import_ray(defer_imports=True)
ready = time.perf_counter() - started


@ray.remote(num_cpus=1)
def pid() -> int:
    return os.getpid()


ray.get(pid.remote())
first_task = time.perf_counter() - started
load = round(os.getloadavg()[0], 2)
ray.shutdown()
print(json.dumps({"ready_s": ready, "first_task_s": first_task, "load_1min": load}))
