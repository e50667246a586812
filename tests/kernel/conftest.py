"""A real ipykernel per test module (the kernel and its client: tests/support/kernels.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.support.kernels import IPYKERNEL6, Kernel, started_kernel


@pytest.fixture(scope="module")
def kernel() -> Iterator[Kernel]:
    yield from started_kernel()


@pytest.fixture(scope="module", params=["ipykernel 7", "ipykernel 6"])
def each_kernel(request: pytest.FixtureRequest) -> Iterator[Kernel]:
    """The venv's kernel (ipykernel 7), then one on ipykernel 6 (views must work on both)."""
    if request.param == "ipykernel 7":
        yield request.getfixturevalue("kernel")
        return
    if not (IPYKERNEL6 / "ipykernel").is_dir():
        message = f"ipykernel 6 is not installed in {IPYKERNEL6} (make installs it)"
        if os.environ.get("LION_NB_REQUIRE_LOCAL"):
            pytest.fail(message)
        pytest.skip(message)
    for k in started_kernel(IPYKERNEL6):
        assert k.value("__import__('ipykernel').__version__").startswith("6.")
        yield k
