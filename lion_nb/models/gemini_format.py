"""The Gemini API's request, built from lion_nb's provider-neutral one (``models/gemini.py``
sends it): chat messages as ``contents`` and ``systemInstruction``, tools as
``functionDeclarations`` with ``toolConfig``, options as ``generationConfig``, JSON schemas in
the API's OpenAPI subset (``gemini_schema``), thought signatures put back on their parts."""

from __future__ import annotations

import json
from typing import Any

from lion_nb.errors import ConfigurationError
from lion_nb.models.chat_format import format_tool

__all__ = [
    "JSON_IN_WORDS",
    "contents",
    "declaration",
    "gemini_schema",
    "generation_config",
    "json_with_tools",
    "sign_parts",
    "tool_config",
]

_GENERATION = {
    "temperature": "temperature",
    "top_p": "topP",
    "top_k": "topK",
    "max_tokens": "maxOutputTokens",
    "max_output_tokens": "maxOutputTokens",
    "stop": "stopSequences",
    "stop_sequences": "stopSequences",
    "seed": "seed",
    "presence_penalty": "presencePenalty",
    "frequency_penalty": "frequencyPenalty",
    "candidate_count": "candidateCount",
    "response_mime_type": "responseMimeType",
}
_THINKING = {
    "thinking_budget": "thinkingBudget",
    "thinking_level": "thinkingLevel",
    "include_thoughts": "includeThoughts",
}


_SCHEMA_KEYS = frozenset(
    {
        "type",
        "format",
        "title",
        "description",
        "nullable",
        "enum",
        "items",
        "properties",
        "required",
        "minItems",
        "maxItems",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "pattern",
        "anyOf",
        "propertyOrdering",
        "default",
        "example",
        "minProperties",
        "maxProperties",
    }
)


def gemini_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON schema (pydantic's, with ``$defs`` / ``$ref``) in the Gemini API's OpenAPI
    subset: references inlined, ``null`` alternatives as ``nullable``, ``const`` as a one-value
    ``enum``, unknown keywords (``additionalProperties``, ``$schema``...) dropped."""
    defs = {**schema.get("definitions", {}), **schema.get("$defs", {})}
    return _SchemaConverter(defs).convert(schema, 0)


class _SchemaConverter:
    def __init__(self, defs: dict[str, Any]) -> None:
        self.defs = defs

    def convert(self, node: Any, depth: int) -> Any:
        if not isinstance(node, dict):
            return node
        if depth > 32:
            raise ConfigurationError("the schema nests deeper than 32 levels (a recursive $ref?)")
        if isinstance(node.get("$ref"), str):
            target = self.defs.get(node["$ref"].rsplit("/", 1)[-1])
            if target is None:
                raise ConfigurationError(f"unresolved schema reference {node['$ref']!r}")
            merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
            return self.convert(merged, depth + 1)
        out: dict[str, Any] = {}
        self._type(node.get("type"), out)
        for key in ("anyOf", "oneOf"):
            if isinstance(node.get(key), list):
                self._alternatives(node[key], out, depth)
        if "const" in node:
            out["enum"] = [node["const"]]
        for key, value in node.items():
            if key not in _SCHEMA_KEYS or key in ("type", "anyOf"):
                continue
            if key == "properties" and isinstance(value, dict):
                out[key] = {name: self.convert(sub, depth + 1) for name, sub in value.items()}
            else:
                out[key] = self.convert(value, depth + 1) if key == "items" else value
        if out.get("enum") and out.get("type") not in (None, "string"):
            out["enum"] = [str(v) for v in out["enum"]]  # the API's enums are strings
        return out

    @staticmethod
    def _type(kind: Any, out: dict[str, Any]) -> None:
        if not isinstance(kind, list):
            if kind is not None:
                out["type"] = kind
            return
        others = [t for t in kind if t != "null"]
        if len(others) < len(kind):
            out["nullable"] = True
        if len(others) == 1:
            out["type"] = others[0]
        elif others:
            out["anyOf"] = [{"type": t} for t in others]

    def _alternatives(self, options: list[Any], out: dict[str, Any], depth: int) -> None:
        rest = [o for o in options if not (isinstance(o, dict) and o.get("type") == "null")]
        if len(rest) < len(options):
            out["nullable"] = True
        if len(rest) == 1:
            out.update(self.convert(rest[0], depth + 1))
        else:
            out["anyOf"] = [self.convert(o, depth + 1) for o in rest]


JSON_IN_WORDS = (
    "When you give your answer (not when you call a function), reply with only a JSON object "
    "that matches this JSON schema:"
)


def json_with_tools(model: str) -> bool:
    """Whether the model takes a JSON response type together with function declarations
    (Gemini 3 and later; the 1.x / 2.x models refuse the combination)."""
    bare = model.removeprefix("models/")
    return not bare.startswith(("gemini-1", "gemini-2"))


def generation_config(options: dict[str, Any], model: str) -> dict[str, Any]:
    config: dict[str, Any] = {}
    thinking: dict[str, Any] = {}
    for key, value in options.items():
        if key in _GENERATION:
            if _GENERATION[key] == "stopSequences" and isinstance(value, str):
                value = [value]
            config[_GENERATION[key]] = value
        elif key in _THINKING:
            thinking[_THINKING[key]] = value
    bare = model.removeprefix("models/")
    if bare.startswith(("gemini-2.5", "gemini-3")) and options.get("thinking_budget") != 0:
        thinking.setdefault("includeThoughts", True)
    if thinking:
        config["thinkingConfig"] = thinking
    raw = options.get("generation_config")
    if isinstance(raw, dict):
        config.update(raw)
    return config


def declaration(tool: dict[str, Any]) -> dict[str, Any]:
    function = format_tool(tool).get("function") or {}
    if not isinstance(function.get("name"), str):
        raise ConfigurationError(f"a tool for gemini needs a function name: {sorted(tool)}")
    out: dict[str, Any] = {"name": function["name"]}
    if function.get("description"):
        out["description"] = function["description"]
    params = function.get("parameters")
    if isinstance(params, dict) and params.get("properties"):
        out["parameters"] = gemini_schema(params)
    return out


def tool_config(choice: Any) -> dict[str, Any] | None:
    if choice is None or choice == "auto":
        return None
    if choice == "none":
        return {"mode": "NONE"}
    if choice == "required":
        return {"mode": "ANY"}
    name = choice if isinstance(choice, str) else (choice.get("function") or {}).get("name")
    if not isinstance(name, str):
        raise ConfigurationError(f"tool_choice {choice!r} is not understood")
    return {"mode": "ANY", "allowedFunctionNames": [name]}


def _parts_of(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"text": content}] if content else []
    parts: list[dict[str, Any]] = []
    for part in content or []:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text":
            parts.append({"text": part.get("text", "")})
        elif part.get("type") == "image_url":
            url = (part.get("image_url") or {}).get("url", "")
            if url.startswith("data:") and ";base64," in url:
                mime, data = url[5:].split(";base64,", 1)
                parts.append({"inlineData": {"mimeType": mime or "image/png", "data": data}})
            else:
                parts.append({"fileData": {"fileUri": url}})
    return parts


def contents(messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """(system instruction, contents) from chat-completions messages."""
    system: list[str] = []
    contents: list[dict[str, Any]] = []
    names: dict[str, str] = {}  # tool call id -> function name

    def add(role: str, parts: list[dict[str, Any]]) -> None:
        if not parts:
            return
        if contents and contents[-1]["role"] == role:  # one turn per role, in order
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": parts})

    for message in messages:
        role = message.get("role")
        if role in ("system", "developer"):
            text = message.get("content")
            system.append(
                text
                if isinstance(text, str)
                else "".join(p.get("text", "") for p in text or [] if isinstance(p, dict))
            )
        elif role == "user":
            add("user", _parts_of(message.get("content")))
        elif role == "assistant":
            parts = _parts_of(message.get("content"))
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                names[call.get("id", "")] = function.get("name", "")
                args = function.get("arguments") or "{}"
                parts.append(
                    {
                        "functionCall": {
                            "name": function.get("name", ""),
                            "args": json.loads(args) if isinstance(args, str) else args,
                        }
                    }
                )
            sign_parts(parts, message.get("thinking_blocks"))
            add("model", parts)
        elif role == "tool":
            output = message.get("content")
            try:
                value = json.loads(output) if isinstance(output, str) else output
            except ValueError:
                value = output
            result = value if isinstance(value, dict) else {"result": value}
            name = names.get(message.get("tool_call_id", ""), "")
            add("user", [{"functionResponse": {"name": name, "response": result}}])
    return "\n\n".join(s for s in system if s), contents


def sign_parts(parts: list[dict[str, Any]], blocks: Any) -> None:
    """Put the signatures recorded with an assistant turn back on its parts: a function
    call's on that call (in order, by name), the others on the first text part."""
    if not isinstance(blocks, list):
        return
    calls = [p for p in parts if "functionCall" in p]
    texts = [p for p in parts if "text" in p]
    for block in blocks:
        if not isinstance(block, dict) or block.get("type") != "thought_signature":
            continue  # another provider's blocks (a conversation that changed models)
        if block.get("on") == "functionCall":
            target = next(
                (
                    c
                    for c in calls
                    if c["functionCall"]["name"] == block.get("name")
                    and "thoughtSignature" not in c
                ),
                None,
            )
        else:
            target = next((t for t in texts if "thoughtSignature" not in t), None)
        if target is not None:
            target["thoughtSignature"] = block["signature"]
