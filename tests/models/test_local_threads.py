"""The embedded model's default thread count: half the CPUs, at most ``OMP_NUM_THREADS`` (which
Ray sets in each worker to the CPUs its task reserved), so a flow's workers do not each take
half the machine."""

from __future__ import annotations

import os

import pytest

from lion_nb.models import local_runtime


@pytest.mark.parametrize(
    ("omp", "threads"),
    [(None, 4), ("1", 1), ("2", 2), ("16", 4), ("", 4), ("0", 4), ("two", 4)],
)
def test_half_the_cpus_at_most_omp_num_threads(omp, threads, monkeypatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    if omp is None:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OMP_NUM_THREADS", omp)
    assert local_runtime.default_threads() == threads
