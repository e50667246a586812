"""Fixtures for the CLI provider tests (helpers live in tests/support/fake_cli.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.fake_cli import FakeCLI, make_fake_cli


@pytest.fixture
def fake_cli(tmp_path: Path) -> FakeCLI:
    """The fake agent behind an ``exec`` wrapper in ``tmp_path``."""
    return make_fake_cli(tmp_path)
