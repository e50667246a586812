"""View models hold view state, nothing else: no module of ``lion_nb.viewmodels`` records or
takes back a message — what a turn means lives in ``session/`` and ``operations/``. (That they
import no operation or provider is ARCHITECTURE.md's table, checked by
tests/test_architecture.py.)"""

from __future__ import annotations

import ast
import pathlib

import lion_nb

ROOT = pathlib.Path(lion_nb.__file__).parent / "viewmodels"
RECORDING = {"add_message", "record", "restore_message", "retract", "retract_message"}


def _modules() -> list[pathlib.Path]:
    found = sorted(ROOT.glob("*.py"))
    assert len(found) > 5  # the folder is where this test thinks it is
    return found


def test_view_models_record_no_message() -> None:
    bad = [
        f"{path.name}:{node.lineno} .{node.func.attr}()"
        for path in _modules()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in RECORDING
    ]
    assert bad == []
