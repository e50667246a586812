"""Building the Instruction for a turn: parameters + context providers (shared by chat/run)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from lion_nb.errors import ResponseFormatError
from lion_nb.messages import Instruction
from lion_nb.tokens import estimate_tokens

if TYPE_CHECKING:
    from lion_nb.operations.types import ChatParam
    from lion_nb.port.branch_port import BranchPort


_JSON_TYPES = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})
# Keywords that make a dict a JSON schema (one of them at least: a schema says something).
_SCHEMA_KEYS = frozenset(
    {
        "type", "properties", "items", "prefixItems", "$ref", "anyOf", "oneOf", "allOf",
        "enum", "const", "additionalProperties", "required", "$defs", "definitions", "not",
    }
)  # fmt: skip


def json_schema_problem(schema: dict[str, Any]) -> str | None:
    """Why ``schema`` is no JSON schema a model can be asked for, or None when it is one.
    Checks the shape only (what a mistake looks like), not every keyword."""
    kind = schema.get("type")
    if kind in ("json_schema", "json_object"):
        inner = "the schema inside it" if (schema.get("json_schema") or {}).get("schema") else ""
        return (
            f'{{"type": "{kind}"}} is OpenAI\'s wrapper, not a schema; pass '
            f'{inner or "a schema"} such as {{"type": "object", "properties": {{...}}}}, '
            "or a pydantic model class"
        )
    kinds = kind if isinstance(kind, list) else [kind] if kind is not None else []
    bad = [k for k in kinds if k not in _JSON_TYPES]
    if bad:
        return f"its type {bad[0]!r} is not a JSON-schema type ({', '.join(sorted(_JSON_TYPES))})"
    if not _SCHEMA_KEYS & schema.keys():
        return f"it has none of a JSON schema's keywords (type, properties, ...): {sorted(schema)}"
    if "properties" in schema and not isinstance(schema["properties"], dict):
        return "its properties must be an object of {name: schema}"
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        return "its required must be a list of property names"
    return None


def check_response_format(fmt: Any) -> Any:
    """``fmt`` when it is a ``response_format`` lion_nb can use (a pydantic model class or
    instance, a JSON-schema dict, None); raised before anything is sent or recorded: a dict
    that is no JSON schema, or anything else, is a ``ResponseFormatError`` (both a
    ``ValueError`` and a ``TypeError``, so either ``except`` catches it)."""
    if fmt is None or isinstance(fmt, BaseModel):
        return fmt
    if isinstance(fmt, type) and issubclass(fmt, BaseModel):
        return fmt
    if isinstance(fmt, dict):
        problem = json_schema_problem(fmt)
        if problem:
            raise ResponseFormatError(f"response_format is not a JSON schema: {problem}")
        return fmt
    if isinstance(fmt, str):
        raise ResponseFormatError(
            f"response_format={fmt!r} is a string: pass the pydantic model class itself "
            f"(response_format={fmt}), or a JSON schema dict"
        )
    raise ResponseFormatError(
        f"response_format must be a pydantic model class or a JSON schema dict, not {fmt!r}"
    )


def response_schema_of(fmt: Any) -> dict[str, Any] | None:
    """A JSON schema for a pydantic model class/instance, or a dict taken as a schema
    (checked: ``check_response_format``)."""
    fmt = check_response_format(fmt)
    if fmt is None:
        return None
    if isinstance(fmt, BaseModel):
        fmt = type(fmt)
    if isinstance(fmt, dict):
        return fmt
    return fmt.model_json_schema()


def context_list(context: Any) -> list[Any]:
    if context is None:
        return []
    return list(context) if isinstance(context, list | tuple) else [context]


def build_instruction(port: BranchPort, instruction: Any, param: ChatParam) -> Instruction:
    """The Instruction for this turn. Context providers run here; what they add is recorded in
    the instruction's context (so the inspector shows what the model saw, and nothing of it
    lingers on the branch after the call)."""
    injected = port.context_additions(instruction)
    if isinstance(instruction, Instruction):
        if not injected:
            return instruction
        return instruction.model_copy(update={"context": [*instruction.context, *injected]})
    request_fields = param.request_fields
    if isinstance(request_fields, list):
        request_fields = {name: "..." for name in request_fields}
    context = context_list(param.context) + injected
    if param.include_token_usage_to_model:
        used = estimate_tokens(m.text for m in port.messages)
        context.append(f"Conversation so far: about {used} tokens.")
    return Instruction(
        instruction=instruction,
        guidance=param.guidance,
        context=context,
        plain_content=param.plain_content,
        request_fields=request_fields,
        response_schema=response_schema_of(param.response_format),
        images=list(param.images or []),
        image_detail=param.image_detail,
        sender=param.sender or port.user or "user",
        recipient=param.recipient or str(port.id),
    )
