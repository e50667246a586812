"""render/ holds renderers only: no module of it imports an operation, a provider, a view
widget or an incremental parser (even inside a function); token estimates and provider facts
come in as data. Nothing on the view side reads a branch's or a model's private state."""

from __future__ import annotations

import ast
import pathlib
import re

import lion_nb

ROOT = pathlib.Path(lion_nb.__file__).parent
FORBIDDEN = ("lion_nb.operations", "lion_nb.models", "lion_nb.widgets", "lion_nb.incremental")


def imports(path: pathlib.Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
    return names


def test_render_imports_no_operation_provider_or_widget() -> None:
    bad = [
        f"{path.name}: {name}"
        for path in sorted(ROOT.glob("render/*.py"))
        for name in imports(path)
        if name.startswith(FORBIDDEN)
    ]
    assert bad == []


def test_views_and_renderers_reach_into_no_branch_or_model() -> None:
    """The reach-in figure of issue 13, for the view side: no ``branch._x``, ``model._x``..."""
    reach_in = re.compile(
        r"\b(branch|session|b|br|other|target|source|origin|model|imodel|view)\._[a-z]"
    )
    bad = [
        f"{path.relative_to(ROOT)}:{number}"
        for folder in ("render", "widgets", "viewmodels", "incremental")
        for path in sorted(ROOT.glob(f"{folder}/*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if reach_in.search(line)
    ]
    assert bad == []
