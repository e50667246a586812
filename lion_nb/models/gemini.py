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

import httpx

from lion_nb.errors import ConfigurationError, ProviderError
from lion_nb.models.base import DeltaSink, ModelRequest
from lion_nb.models.gemini_format import (
    JSON_IN_WORDS,
    contents,
    declaration,
    gemini_schema,
    generation_config,
    json_with_tools,
    tool_config,
)
from lion_nb.models.http_errors import status_error
from lion_nb.models.http_stream import HTTPStreamProvider, StreamAccumulator
from lion_nb.models.registry import GEMINI_OPTIONS, PROVIDERS
from lion_nb.models.sse import SSEEvent
from lion_nb.usage import Usage

__all__ = ["DEFAULT_BASE_URL", "OPTIONS", "GeminiProvider", "gemini_schema"]

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
API_VERSION = "v1beta"

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
class GeminiProvider(HTTPStreamProvider):
    """``GeminiProvider(model, api_key, base_url=<server root>, **options)``; see the module."""

    name = "gemini"
    default_base_url = DEFAULT_BASE_URL
    options = OPTIONS
    env_key_to_loopback = True  # only Google's API and proxies of it speak this format

    def __init__(self, model: str | None = None, api_key: str | None = None, **kw: Any) -> None:
        kw.setdefault("api_key_env", PROVIDERS["gemini"].key_env)
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

    async def _status_error(self, response: httpx.Response) -> ProviderError:
        error = await super()._status_error(response)
        if response.status_code == 400 and "API_KEY_INVALID" in (error.body or ""):
            # Gemini answers a wrong key with 400 INVALID_ARGUMENT (reason API_KEY_INVALID):
            # an authentication failure all the same, naming the key's variables.
            auth = status_error(
                401,
                response.headers,
                error.body or "",
                provider=self.name,
                key_env=self.key_env,
                key_sent=self._api_key() is not None,
            )
            auth.status = 400
            return auth
        return error

    def new_state(self, on_delta: DeltaSink | None) -> StreamAccumulator:
        return _GeminiState(on_delta, self.name)

    def build_body(self, request: ModelRequest) -> tuple[dict[str, Any], float | None]:
        options, timeout = self.merged_options(request)
        self.url(request)  # a missing model is refused before anything is sent
        system, turns = contents(request.messages)
        body: dict[str, Any] = {"contents": turns}
        if system:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        if request.tools:
            declarations = [declaration(tool) for tool in request.tools]
            body["tools"] = [{"functionDeclarations": declarations}]
            config = tool_config(request.tool_choice)
            if config is not None:
                body["toolConfig"] = {"functionCallingConfig": config}
        generation = generation_config(options, self.model or "")
        if request.response_schema is None:
            pass
        elif request.tools and not json_with_tools(self.model or ""):
            # Before Gemini 3 the API refuses a JSON response type next to function calling
            # (400 INVALID_ARGUMENT): the schema is asked for in words, and the reply is
            # validated (and repaired) by lion_nb's parse as for any text.
            schema = json.dumps(request.response_schema, ensure_ascii=False)
            ask = f"{JSON_IN_WORDS}\n{schema}"
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
