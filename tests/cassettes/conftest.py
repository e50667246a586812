"""Fixtures for the cassette tests: no cassette leaks from one test into the next."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_default_cassette(no_default_cassette: None) -> None:
    """Every cassette test runs without a notebook-wide cassette (tests/conftest.py)."""
