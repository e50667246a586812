"""The Gemini API (Google AI Studio keys): ``models/{model}:streamGenerateContent?alt=sse``.

``iModel(provider="gemini", model="gemini-2.5-flash", api_key=... | $GEMINI_API_KEY /
$GOOGLE_API_KEY, base_url=<server root>)``. Spoken over httpx with the house's SSE decoder
(``models/http_stream.py``), not the ``google-genai`` SDK: the wire format is one JSON object
per event, the SDK would add ~100 MB of dependencies and its own retry/error layer in front of
ours, and the tests check our requests and parsing against the SDK anyway
(``tests/models/test_vendor_sdk_fidelity.py``).

What is translated, both ways:

* messages: the system message becomes ``systemInstruction``; user / assistant turns become
  ``contents`` with roles ``user`` / ``model`` (images as ``inlineData`` or ``fileData``);
  tool calls become ``functionCall`` parts and tool results ``functionResponse`` parts (named
  after the call they answer);
* tools: ``tools[0].functionDeclarations``, parameters in the API's OpenAPI-subset schema
  (``gemini_schema``); ``tool_choice`` becomes ``toolConfig.functionCallingConfig``;
* structured output: ``responseMimeType="application/json"`` with ``responseSchema``; next to
  tools on a model before Gemini 3 (whose API refuses the combination) the schema is asked for
  in the system instruction instead, and the reply validated as text;
* options: ``temperature``, ``top_p``, ``top_k``, ``max_tokens`` (= ``max_output_tokens``),
  ``stop``, ``seed``, ``presence_penalty``, ``frequency_penalty``, ``thinking_budget``,
  ``thinking_level``, ``include_thoughts`` go into ``generationConfig``; ``safety_settings``,
  ``cached_content`` and a raw ``generation_config`` dict too. Any other option is refused by
  name. Thinking models (``gemini-2.5*``, ``gemini-3*``) are asked to include their thoughts;
* the reply: ``thought: true`` parts are thinking (``metadata["thinking"]``, streamed as
  thinking deltas); their ``thoughtSignature``s are kept as ``thinking_blocks`` and sent back on
  the same parts in a tool loop (the registry entry asks ``compile_messages`` for them);
  ``functionCall`` parts become tool calls; ``finishReason`` maps to ``"stop"`` / ``"length"``
  (``MAX_TOKENS``) / ``"content_filter"`` (safety, recitation, blocklist...) / ``"tool_calls"``;
  ``usageMetadata``: input = ``promptTokenCount``, output = ``candidatesTokenCount`` +
  ``thoughtsTokenCount``.

An error object in the stream raises the classified error with what arrived so far.
"""

from __future__ import annotations

import json
import uuid
from typing import Any
from urllib.parse import quote

from lion_nb.errors import ConfigurationError, ProviderError
from lion_nb.models.base import DeltaSink, ModelRequest
from lion_nb.models.chat_format import format_tool
from lion_nb.models.http_errors import status_error
from lion_nb.models.http_stream import HTTPStreamProvider, StreamAccumulator
from lion_nb.models.registry import GEMINI_OPTIONS
from lion_nb.models.sse import SSEEvent
from lion_nb.usage import Usage

__all__ = ["DEFAULT_BASE_URL", "OPTIONS", "GeminiProvider", "gemini_schema"]

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
API_VERSION = "v1beta"

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
OPTIONS = GEMINI_OPTIONS
"""The request options ``GeminiProvider`` takes (its registry entry's list)."""

_FINISH = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "MALFORMED_FUNCTION_CALL": "malformed_function_call",
}
_STATUS_CODES = {
    "UNAUTHENTICATED": 401,
    "PERMISSION_DENIED": 403,
    "RESOURCE_EXHAUSTED": 429,
    "UNAVAILABLE": 503,
    "INTERNAL": 500,
}

# JSON-schema keywords the API's Schema object knows (others are dropped by gemini_schema).
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
    return _SchemaConverter(defs).convert(schema, 0)  # type: ignore[no-any-return]


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


class GeminiProvider(HTTPStreamProvider):
    """``GeminiProvider(model, api_key, base_url=<server root>, **options)``; see the module."""

    name = "gemini"
    default_base_url = DEFAULT_BASE_URL
    options = OPTIONS
    env_key_to_loopback = True  # only Google's API and proxies of it speak this format

    def __init__(self, model: str | None = None, api_key: str | None = None, **kw: Any) -> None:
        kw.setdefault("api_key_env", ("GEMINI_API_KEY", "GOOGLE_API_KEY"))
        super().__init__(model, api_key, **kw)

    def url(self, request: ModelRequest) -> str:
        if not self.model:
            raise ConfigurationError(
                "the gemini provider needs a model: iModel(provider='gemini', "
                "model='gemini-2.5-flash')"
            )
        root = self.base_url
        version = "" if root.rsplit("/", 1)[-1].startswith("v1") else f"/{API_VERSION}"
        model = self.model.removeprefix("models/")
        return f"{root}{version}/models/{quote(model, safe='-._')}:streamGenerateContent?alt=sse"

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"x-goog-api-key": key}

    def new_state(self, on_delta: DeltaSink | None) -> StreamAccumulator:
        return _GeminiState(on_delta, self.name)

    def build_body(self, request: ModelRequest) -> tuple[dict[str, Any], float | None]:
        options, timeout = self.merged_options(request)
        self.url(request)  # a missing model is refused before anything is sent
        system, contents = _contents(request.messages)
        body: dict[str, Any] = {"contents": contents}
        if system:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        if request.tools:
            declarations = [_declaration(tool) for tool in request.tools]
            body["tools"] = [{"functionDeclarations": declarations}]
            config = _tool_config(request.tool_choice)
            if config is not None:
                body["toolConfig"] = {"functionCallingConfig": config}
        generation = _generation(options, self.model or "")
        if request.response_schema is None:
            pass
        elif request.tools and not _json_with_tools(self.model or ""):
            # Before Gemini 3 the API refuses a JSON response type next to function calling
            # (400 INVALID_ARGUMENT): the schema is asked for in words, and the reply is
            # validated (and repaired) by lion_nb's parse as for any text.
            schema = json.dumps(request.response_schema, ensure_ascii=False)
            ask = f"{_JSON_IN_WORDS}\n{schema}"
            body["systemInstruction"] = {
                "parts": [{"text": f"{system}\n\n{ask}" if system else ask}]
            }
        else:
            generation["responseMimeType"] = "application/json"
            generation["responseSchema"] = gemini_schema(request.response_schema)
        if generation:
            body["generationConfig"] = generation
        if "safety_settings" in options:
            body["safetySettings"] = options["safety_settings"]
        if "cached_content" in options:
            body["cachedContent"] = options["cached_content"]
        return body, timeout


_JSON_IN_WORDS = (
    "When you give your answer (not when you call a function), reply with only a JSON object "
    "that matches this JSON schema:"
)


def _json_with_tools(model: str) -> bool:
    """Whether the model takes a JSON response type together with function declarations
    (Gemini 3 and later; the 1.x / 2.x models refuse the combination)."""
    bare = model.removeprefix("models/")
    return not bare.startswith(("gemini-1", "gemini-2"))


def _generation(options: dict[str, Any], model: str) -> dict[str, Any]:
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


def _declaration(tool: dict[str, Any]) -> dict[str, Any]:
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


def _tool_config(choice: Any) -> dict[str, Any] | None:
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


def _contents(messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
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
            _sign(parts, message.get("thinking_blocks"))
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


class _GeminiState(StreamAccumulator):
    """``GenerateContentResponse`` events -> the reply. The format has no end marker: a
    stream is complete once a candidate reported its ``finishReason``."""

    def __init__(self, on_delta: DeltaSink | None, provider: str) -> None:
        super().__init__(on_delta, provider)
        self.signatures: list[dict[str, Any]] = []  # thinking_blocks: where each signature was
        self.block_reason: str | None = None
        self._calls = 0

    def feed(self, event: SSEEvent) -> None:
        if not event.data.strip():
            return
        self.apply(self.json_of(event), event.data)

    def whole(self, obj: Any, text: str) -> None:
        for item in obj if isinstance(obj, list) else [obj]:  # the JSON-array framing too
            self.apply(item, text)

    def ended(self) -> bool:
        return self.finish_reason is not None or self.block_reason is not None

    def apply(self, obj: Any, text: str) -> None:
        if not isinstance(obj, dict):
            raise self.malformed("a stream event is not a JSON object", text[:2000])
        if isinstance(obj.get("error"), dict):
            raise self.fail(_stream_error(obj["error"], text))
        if isinstance(obj.get("modelVersion"), str):
            self.model = obj["modelVersion"]
        if isinstance(obj.get("responseId"), str):
            self.id = obj["responseId"]
        if isinstance(obj.get("usageMetadata"), dict):
            self.usage = _usage(obj["usageMetadata"])
        feedback = obj.get("promptFeedback")
        if isinstance(feedback, dict) and feedback.get("blockReason"):
            self.block_reason = str(feedback["blockReason"])
            self.finish_reason = "content_filter"
        candidates = obj.get("candidates") or []
        if not isinstance(candidates, list):
            raise self.malformed("candidates is not a list", text[:2000])
        for candidate in candidates[:1]:  # one candidate is asked for
            self._candidate(candidate, text)

    def _candidate(self, candidate: Any, text: str) -> None:
        if not isinstance(candidate, dict):
            raise self.malformed("a candidate is not an object", text[:2000])
        parts = (candidate.get("content") or {}).get("parts") or []
        for part in parts:
            if not isinstance(part, dict):
                raise self.malformed("a part is not an object", text[:2000])
            call = part.get("functionCall")
            if isinstance(part.get("thoughtSignature"), str):
                self.signatures.append(_signature_block(part, call))
            if isinstance(call, dict):
                self._call(call, text)
            elif isinstance(part.get("text"), str):
                if part.get("thought"):
                    self.add_thinking(part["text"])
                else:
                    self.add_text(part["text"])
        reason = candidate.get("finishReason")
        if isinstance(reason, str) and reason:
            mapped = _FINISH.get(reason, reason.lower())
            self.finish_reason = (
                "tool_calls" if mapped == "stop" and self.has_tool_calls else mapped
            )

    def _call(self, call: dict[str, Any], text: str) -> None:
        name, args = call.get("name"), call.get("args") or {}
        if not isinstance(name, str) or not name:
            raise self.malformed("a functionCall has no name", text[:2000])
        if not isinstance(args, dict):
            raise self.malformed(f"the args of functionCall {name!r} are not an object")
        call_id = call.get("id") if isinstance(call.get("id"), str) else None
        self._calls += 1
        self.add_whole_tool(
            str(self._calls), call_id or f"call_{uuid.uuid4().hex[:24]}", name, args
        )

    def response(self, raw: Any = None) -> Any:
        result = super().response(raw)
        result.thinking_blocks = self.signatures or None
        return result


def _signature_block(part: dict[str, Any], call: Any) -> dict[str, Any]:
    """A part's ``thoughtSignature``, and what it was on: kept as a thinking block, so a tool
    loop sends it back on the same part (Gemini 3 refuses a function call without it)."""
    block = {"type": "thought_signature", "signature": part["thoughtSignature"]}
    if isinstance(call, dict):
        return {**block, "on": "functionCall", "name": call.get("name")}
    return {**block, "on": "thought" if part.get("thought") else "text"}


def _sign(parts: list[dict[str, Any]], blocks: Any) -> None:
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


def _usage(data: dict[str, Any]) -> Usage:
    def count(key: str) -> int | None:
        value = data.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    candidates, thoughts = count("candidatesTokenCount"), count("thoughtsTokenCount")
    output = None
    if candidates is not None or thoughts is not None:
        output = (candidates or 0) + (thoughts or 0)
    return Usage(
        input_tokens=count("promptTokenCount"),
        output_tokens=output,
        cache_read_tokens=count("cachedContentTokenCount"),
        reasoning_tokens=thoughts,
    )


def _stream_error(error: dict[str, Any], text: str) -> ProviderError:
    """An error object in the stream carries the HTTP status it stands for: classified as that
    status would be (``http_errors.status_error``), but never retried (part of the reply may
    have been shown)."""
    status = error.get("code") if isinstance(error.get("code"), int) else None
    status = status or _STATUS_CODES.get(str(error.get("status")), 500)
    found = status_error(status, {}, text, provider="gemini")
    found.message = f"mid-stream: {found.message}"
    found.args = (found.message,)
    found.retryable = False
    return found
