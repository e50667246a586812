"""One side of B3 in a fresh interpreter: cold import time and per-Branch construction time.

python import_side.py lion_nb|lionagi
"""

from __future__ import annotations

import json
import statistics
import sys
import time

side = sys.argv[1]
start = time.perf_counter()
if side == "lion_nb":
    import lion_nb  # noqa: F401 - the package alone, timed

    package_s = time.perf_counter() - start
    from lion_nb import Branch
else:
    import lionagi  # noqa: F401

    package_s = time.perf_counter() - start
    from lionagi import Branch
import_s = time.perf_counter() - start

first = time.perf_counter()
Branch()
first_s = time.perf_counter() - first
samples = []
for _ in range(200):
    t = time.perf_counter()
    Branch()
    samples.append(time.perf_counter() - t)
print(
    json.dumps(
        {
            "side": side,
            "package_s": package_s,
            "import_s": import_s,
            "first_construct_s": first_s,
            "construct_median_s": statistics.median(samples),
        }
    )
)
