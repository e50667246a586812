"""bound_schema: every string and array of a response schema gets a limit (no model needed)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel, Field

from lion_nb.models.schema_bounds import bound_schema


class Inner(BaseModel):
    label: str
    tags: list[str]


class Outer(BaseModel):
    title: str
    short: str = Field(max_length=10)
    items: list[Inner]
    maybe: str | None = None
    few: list[int] = Field(max_length=2)
    anything: Any = None


def _strings_and_arrays(node: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    if isinstance(node, dict):
        if node.get("type") in ("string", "array"):
            found.append((path, node))
        for key, value in node.items():
            found += _strings_and_arrays(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += _strings_and_arrays(value, f"{path}/{i}")
    return found


def test_every_string_and_array_is_bounded_recursively_including_defs() -> None:
    schema = Outer.model_json_schema()
    bounded, unbounded = bound_schema(schema, max_items=4, max_length=50)
    assert unbounded == []
    found = _strings_and_arrays(bounded)
    assert len(found) >= 6
    for path, node in found:
        key = "maxLength" if node["type"] == "string" else "maxItems"
        assert key in node, f"{path} is unbounded: {node}"
    props = bounded["properties"]
    assert props["title"]["maxLength"] == 50
    assert props["short"]["maxLength"] == 10  # the caller's own limit is kept
    assert props["few"]["maxItems"] == 2
    assert props["items"]["maxItems"] == 4
    assert bounded["$defs"]["Inner"]["properties"]["tags"]["items"]["maxLength"] == 50
    assert props["maybe"]["anyOf"][0] == {"type": "string", "maxLength": 50}
    # "Any" has no type: llama.cpp's converter cannot compile it, so it becomes bounded scalars
    assert {"type": "string", "maxLength": 50} in props["anything"]["anyOf"]
    assert schema["properties"]["title"] == {"title": "Title", "type": "string"}  # not mutated


def test_minimums_win_over_the_defaults() -> None:
    schema = {
        "type": "object",
        "properties": {
            "s": {"type": "string", "minLength": 300},
            "a": {"type": "array", "items": {"type": "integer"}, "minItems": 12},
        },
    }
    bounded, _ = bound_schema(schema, max_items=8, max_length=200)
    assert bounded["properties"]["s"]["maxLength"] == 300
    assert bounded["properties"]["a"]["maxItems"] == 12


def test_type_lists_become_bounded_unions_and_bare_arrays_get_items() -> None:
    bounded, unbounded = bound_schema(
        {
            "type": "object",
            "properties": {"x": {"type": ["string", "null"]}, "y": {"type": "array"}},
        }
    )
    assert unbounded == []
    assert bounded["properties"]["x"] == {
        "anyOf": [{"type": "string", "maxLength": 100}, {"type": "null"}]
    }
    assert bounded["properties"]["y"]["maxItems"] == 5
    assert "anyOf" in bounded["properties"]["y"]["items"]


@pytest.mark.parametrize(
    "schema, path",
    [
        ({"type": "object"}, "/"),
        (
            {
                "type": "object",
                "properties": {"m": {"type": "object", "additionalProperties": True}},
            },
            "/properties/m",
        ),
        (
            {"type": "object", "properties": {"m": {"additionalProperties": {"type": "string"}}}},
            "/properties/m",
        ),
    ],
)
def test_free_form_objects_are_reported(schema: dict[str, Any], path: str) -> None:
    bounded, unbounded = bound_schema(schema)
    assert unbounded == [path]
    assert json.dumps(bounded)  # still a usable schema


def test_enum_const_pattern_and_refs_are_left_alone() -> None:
    schema = {
        "type": "object",
        "properties": {
            "e": {"type": "string", "enum": ["a", "b"]},
            "c": {"const": "x"},
            "p": {"type": "string", "pattern": "^[a-z]{1,5}$"},
            "r": {"$ref": "#/$defs/D"},
        },
        "$defs": {"D": {"type": "string"}},
    }
    bounded, _ = bound_schema(schema)
    for key in ("e", "c", "p", "r"):
        assert bounded["properties"][key] == schema["properties"][key]
    assert bounded["$defs"]["D"]["maxLength"] == 100
