"""``widgets/marimo_cell.py`` outside marimo's kernel: it notes no cell and changes nothing (in
marimo, the grid's Open is tested in tests/browser/test_grid_view_fronts_browser.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from lion_nb.widgets.marimo_cell import current_cell, in_cell


def test_outside_marimo_there_is_no_cell_and_nothing_changes():
    assert current_cell() is None
    with in_cell(None):
        made = "a view"
    with in_cell("some-cell"):
        made += " made"
    assert made == "a view made"


def test_marimo_imported_but_not_running_a_kernel_is_no_cell():
    pytest.importorskip("marimo")
    import marimo  # noqa: F401  # a script that imports marimo has no runtime context

    assert current_cell() is None
    with in_cell("some-cell"):
        pass


def test_importing_the_grid_view_loads_no_marimo():
    code = "import sys, lion_nb.widgets.grid_view; print('marimo' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
