"""Bounding a JSON schema before it becomes a llama.cpp grammar.

A grammar only says what may come next; it does not make a model stop. Small models fed an
unbounded ``string`` or ``array`` rule keep writing (another character, another item) until
``max_tokens``, and the reply is cut mid-JSON. So before a schema is compiled to a grammar,
``bound_schema`` gives every string without a limit a ``maxLength`` and every array a
``maxItems`` (recursively, ``$defs`` included); the caller's own limits are kept.

What a grammar cannot bound is reported rather than silently accepted (the caller warns with
``UnboundedSchemaWarning``): the number of keys of a free-form object (``additionalProperties``,
an object without ``properties``). A value with no type at all ("any", e.g. pydantic's ``Any``)
is generated as a bounded scalar (string, number, boolean or null): llama.cpp's grammar
converter cannot compile a type-less schema, and a scalar is the answer a small model can give.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["DEFAULT_MAX_ITEMS", "DEFAULT_MAX_LENGTH", "UnboundedSchemaWarning", "bound_schema"]

# Measured on SmolLM2-135M: it rarely closes an array on its own (it fills it to maxItems) and
# sometimes repeats a fragment until a string is full. With these limits the worst case of a
# small schema (a few strings and a list of strings) still fits the default max_tokens (512),
# so the reply is complete JSON; 8 items / 200 characters did not (cut replies).
DEFAULT_MAX_ITEMS = 5
DEFAULT_MAX_LENGTH = 100

# Keywords that give a schema a shape; a schema with none of them accepts any value.
_SHAPE_KEYS = frozenset(
    {
        "type",
        "$ref",
        "anyOf",
        "oneOf",
        "allOf",
        "enum",
        "const",
        "properties",
        "items",
        "prefixItems",
        "additionalProperties",
        "pattern",
        "format",
    }
)
_DEFS_KEYS = ("$defs", "definitions")


class UnboundedSchemaWarning(UserWarning):
    """Part of a response schema could not be bounded; the model may write until max_tokens."""


def _any_scalar(max_length: int) -> dict[str, Any]:
    return {
        "anyOf": [
            {"type": "string", "maxLength": max_length},
            {"type": "number"},
            {"type": "boolean"},
            {"type": "null"},
        ]
    }


class _Bounder:
    def __init__(self, max_items: int, max_length: int) -> None:
        self.max_items = max_items
        self.max_length = max_length
        self.unbounded: list[str] = []

    def walk(self, node: Any, path: str) -> Any:
        if node is True or (isinstance(node, dict) and not (_SHAPE_KEYS & node.keys())):
            return _any_scalar(self.max_length)  # keeps title/description out: they are unused
        if not isinstance(node, dict):
            return node
        out = dict(node)
        for key in _DEFS_KEYS:
            if isinstance(out.get(key), dict):
                out[key] = {
                    name: self.walk(sub, f"{path}/{key}/{name}") for name, sub in out[key].items()
                }
        for key in ("anyOf", "oneOf", "allOf"):
            if isinstance(out.get(key), list):
                out[key] = [self.walk(sub, f"{path}/{key}/{i}") for i, sub in enumerate(out[key])]
        if "enum" in out or "const" in out or "$ref" in out:
            return out
        kind = out.get("type")
        if isinstance(kind, list):  # the converter drops every other keyword of a type list
            rest = {k: v for k, v in out.items() if k != "type"}
            return {"anyOf": [self.walk({**rest, "type": t}, f"{path}/type/{t}") for t in kind]}
        if kind == "string":
            if not any(k in out for k in ("maxLength", "pattern", "format")):
                out["maxLength"] = max(self.max_length, int(out.get("minLength", 0)))
        elif kind == "array" or "items" in out or "prefixItems" in out:
            self._array(out, path)
        elif kind == "object" or "properties" in out or "additionalProperties" in out:
            self._object(out, path)
        return out

    def _array(self, out: dict[str, Any], path: str) -> None:
        if isinstance(out.get("prefixItems"), list):
            out["prefixItems"] = [
                self.walk(sub, f"{path}/prefixItems/{i}")
                for i, sub in enumerate(out["prefixItems"])
            ]
        items = out.get("items")
        if isinstance(items, list):  # draft-4 tuple form: fixed length already
            out["items"] = [self.walk(sub, f"{path}/items/{i}") for i, sub in enumerate(items)]
            return
        # Without "items" the converter ignores maxItems; an explicit "any" item is bounded.
        out["items"] = self.walk(items if items is not None else {}, f"{path}/items")
        if "maxItems" not in out:
            out["maxItems"] = max(self.max_items, int(out.get("minItems", 0)))

    def _object(self, out: dict[str, Any], path: str) -> None:
        props = out.get("properties")
        if isinstance(props, dict):
            out["properties"] = {
                name: self.walk(sub, f"{path}/properties/{name}") for name, sub in props.items()
            }
        extra = out.get("additionalProperties")
        if extra is True or isinstance(extra, dict):
            self.unbounded.append(path or "/")
            out["additionalProperties"] = self.walk(extra, f"{path}/additionalProperties")
        elif not isinstance(props, dict) or not props:
            if extra is not False:
                self.unbounded.append(path or "/")


def bound_schema(
    schema: dict[str, Any],
    *,
    max_items: int = DEFAULT_MAX_ITEMS,
    max_length: int = DEFAULT_MAX_LENGTH,
) -> tuple[dict[str, Any], list[str]]:
    """``(bounded copy of schema, JSON-pointer paths of the parts that stay unbounded)``.
    The input is not modified."""
    bounder = _Bounder(max_items, max_length)
    bounded = bounder.walk(copy.deepcopy(schema), "")
    return bounded, bounder.unbounded
