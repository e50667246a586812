"""lion_nb's own JSON action requests, for models whose server ignores native tools.

A server whose model's chat template declares no tool support (llama.cpp's ``llama-server``
on SmolLM2, even with ``--jinja``) drops ``tools`` and ``tool_choice``; the embedded model
cannot choose a tool by itself. When ``iModel.capabilities().native_tools is False``,
``operate`` sends no tools natively: the offered tools travel in the instruction's context,
and the reply's ``action_requests`` are constrained by the response schema instead — each item
is one of the offered tools, ``{"function": <its name>, "arguments": <its parameters>}`` — which
a server with JSON-schema grammars (``llama-server``'s ``json_schema``, the embedded model's
llama.cpp grammar) enforces. So the names are real, the arguments fit, and nothing in the
schema is left free-form (no ``UnboundedSchemaWarning`` about lion_nb's own models).

``tool_choice`` keeps its meaning: a tool's name allows only that tool and at least one call,
``"required"`` at least one call, ``"none"`` no call, ``"auto"``/None any number up to one per
offered tool (a small model fills an array to its limit).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from lion_nb.errors import ConfigurationError
from lion_nb.models.schema_bounds import DEFAULT_MAX_ITEMS, bound_schema
from lion_nb.operations.instruction import response_schema_of

if TYPE_CHECKING:
    from lion_nb.models.imodel import iModel
    from lion_nb.port.tools import Tool

__all__ = ["action_requests_schema", "ignores_native_tools", "own_request_schema"]

# A string in lion_nb's own reply schema: room for a few sentences of analysis, and a bound a
# grammar enforces (an unbounded string lets a small model write until max_tokens).
OWN_MAX_LENGTH = 400

_REQUESTS_DESC = (
    "Tool calls to run now: each names one of the offered functions and gives its arguments."
)


async def ignores_native_tools(model: iModel | None) -> bool:
    """Whether ``model``'s server is known to ignore native tools (its capabilities say so)."""
    if model is None:
        return False
    caps = await model.capabilities()
    return caps.native_tools is False


def _forced_name(tool_choice: Any) -> str | None:
    if isinstance(tool_choice, dict):
        return (tool_choice.get("function") or {}).get("name") or tool_choice.get("name")
    if isinstance(tool_choice, str) and tool_choice not in ("auto", "none", "required"):
        return tool_choice
    return None


def action_requests_schema(tools: list[Tool], tool_choice: Any = None) -> dict[str, Any]:
    """The ``action_requests`` property: an array of calls of the offered ``tools``."""
    name = _forced_name(tool_choice)
    if name is not None:
        chosen = [t for t in tools if t.name == name]
        if not chosen:
            known = ", ".join(t.name for t in tools) or "none"
            raise ConfigurationError(
                f"tool_choice names {name!r}, which is not among the offered tools ({known})"
            )
        tools = chosen
    variants = [
        {
            "type": "object",
            "description": tool.description,
            "properties": {
                "function": {"type": "string", "enum": [tool.name]},
                "arguments": copy.deepcopy(tool.parameters),
            },
            "required": ["function", "arguments"],
            "additionalProperties": False,
        }
        for tool in tools
    ]
    schema: dict[str, Any] = {"type": "array", "description": _REQUESTS_DESC}
    if tool_choice == "none" or not variants:
        return {**schema, "items": {"type": "object"}, "maxItems": 0}
    schema["items"] = variants[0] if len(variants) == 1 else {"anyOf": variants}
    schema["maxItems"] = len(variants)
    if name is not None or tool_choice == "required":
        schema["minItems"] = 1
    return schema


def own_request_schema(request_fmt: Any, tools: list[Tool], tool_choice: Any) -> dict[str, Any]:
    """``request_fmt``'s JSON schema with its ``action_requests`` constrained to ``tools``
    (and required when a call is forced), every string and array bounded (the caller's own
    limits kept)."""
    schema = copy.deepcopy(response_schema_of(request_fmt) or {"type": "object"})
    props = schema.setdefault("properties", {})
    props["action_requests"] = action_requests_schema(tools, tool_choice)
    if props["action_requests"].get("minItems"):
        required = schema.setdefault("required", [])
        if "action_requests" not in required:
            required.append("action_requests")
    defs = schema.get("$defs")
    if isinstance(defs, dict):  # the free-form ActionRequestModel is referenced no more
        defs.pop("ActionRequestModel", None)
        if not defs:
            schema.pop("$defs")
    bounded, _unbounded = bound_schema(
        schema, max_items=DEFAULT_MAX_ITEMS, max_length=OWN_MAX_LENGTH
    )  # what stays unbounded is the caller's (a tool's free-form argument): the model warns
    return _compact(bounded)


_NAMED = ("properties", "$defs", "definitions")  # maps of names to schemas


def _compact(node: Any) -> Any:
    """``node`` without ``title`` and ``default``: the schema travels in every round's
    instruction, and a small model's window is small; a grammar ignores both."""
    if isinstance(node, list):
        return [_compact(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("title", "default"):
            continue
        if key in _NAMED and isinstance(value, dict):
            out[key] = {name: _compact(sub) for name, sub in value.items()}
        else:
            out[key] = _compact(value)
    return out
