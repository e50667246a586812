"""The README's conformance matrix is the one the suite checks (``matrix.py``)."""

from __future__ import annotations

from pathlib import Path

from tests.conformance.matrix import readme_table

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_shows_the_matrix_the_suite_checks() -> None:
    assert readme_table() in README.read_text(), (
        "README.md's conformance matrix differs from tests/conformance/matrix.py; paste:\n"
        + readme_table()
    )
