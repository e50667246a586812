"""Fixtures for the cassette tests: no cassette leaks from one test into the next."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lion_nb.cassettes import active


@pytest.fixture(autouse=True)
def _no_default_cassette() -> Iterator[None]:
    previous = active.set_default(None)
    yield
    active.set_default(previous)
