"""tree_rows: a structured value as rows with paths, types, values and pending fields."""

from __future__ import annotations

from lion_nb.render.parse_tree import tree_html
from lion_nb.viewmodels.parse_tree import tree_rows
from tests.support.orders import ORDER, Order, rows_by_path


def test_a_nested_result_becomes_rows_with_paths_types_and_values() -> None:
    rows = tree_rows(Order.model_validate(ORDER))
    by = rows_by_path(rows)
    assert [r.path for r in rows] == [
        ("customer",),
        ("items",),
        ("items", 0),
        ("items", 0, "name"),
        ("items", 0, "price"),
        ("items", 1),
        ("items", 1, "name"),
        ("items", 1, "price"),
        ("note",),
        ("meta",),
        ("meta", "table"),
    ]
    assert by[("items",)].type == "list[Item]" and by[("items",)].kind == "list"
    assert by[("items", 0)].type == "Item" and by[("items", 0)].depth == 1
    assert by[("items", 1, "price")].value == "4.0" and by[("items", 1, "price")].type == "float"
    assert by[("note",)].type == "str | None"
    assert by[("meta", "table")].type == "int"
    html = tree_html(rows)
    assert 'data-path="items.[1].price"' in html and "list[Item]" in html


def test_huge_results_are_cut_with_a_note() -> None:
    rows = tree_rows({"xs": list(range(5000))}, max_rows=100)
    assert len(rows) == 101 and rows[-1].kind == "more"
