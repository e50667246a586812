"""render.parse_tree: the tree table, the errors table and the attempts list, escaped."""

from __future__ import annotations

from lion_nb.render.parse_tree import (
    tree_html,
)
from lion_nb.viewmodels.parse_tree import tree_rows


def test_values_are_escaped() -> None:
    html = tree_html(tree_rows({"x": "<img src=x onerror=alert(1)>", "<b>k</b>": 1}))
    assert "<img" not in html and "<b>" not in html and "&lt;img" in html
