"""render.escape: the one HTML escape of the render layer."""

from __future__ import annotations

import ast
import pathlib

import lion_nb
from lion_nb.render.escape import escape


def test_text_is_safe_in_content_and_attributes() -> None:
    assert (
        escape("<a href=\"x\">'&'</a>") == "&lt;a href=&quot;x&quot;&gt;&#x27;&amp;&#x27;&lt;/a&gt;"
    )
    assert escape(42) == "42" and escape(None) == "None"


def test_control_characters_are_made_visible() -> None:
    out = escape("a\x1b[31mred\r\nb")
    assert "\x1b" not in out and out.endswith("red\nb")


def test_no_other_escape_helper_is_defined() -> None:
    """One escape helper: no module of the render layer or the views defines its own."""
    root = pathlib.Path(lion_nb.__file__).parent
    found = []
    for path in [
        *root.glob("render/*.py"),
        *root.glob("widgets/*.py"),
        *root.glob("viewmodels/*.py"),
    ]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name in ("_e", "_escape", "escape"):
                found.append(f"{path.relative_to(root)}:{node.name}")
    assert found == ["render/escape.py:escape"]
