"""JSON forms of what a model call produced: deltas, CLI chunks, responses and errors.

Every encoder leaves out fields at their default so a line shows only what happened; every
decoder gives back an equal object (``decode_chunk(encode_chunk(c))`` compares equal field by
field, the error as the same ``lion_nb.errors`` class with the same message, status, body and
retry hints). ``Chunk.raw`` and ``ModelResponse.raw`` (the undecoded provider payloads) are not
kept: they can carry request echoes and headers, and nothing downstream of the seam needs them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pydantic import ValidationError

from lion_nb import errors
from lion_nb.messages import TokenChoice
from lion_nb.models.base import Chunk, ModelResponse, ToolCall
from lion_nb.usage import Usage

__all__ = [
    "decode_chunk",
    "decode_error",
    "decode_response",
    "decode_tokens",
    "encode_chunk",
    "encode_error",
    "encode_response",
]


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return f.default  # MISSING for ``type``, which is always written


_CHUNK_DEFAULTS = {f.name: _default(f) for f in dataclasses.fields(Chunk)}
_CHUNK_SKIP = frozenset({"raw", "replayed", "error"})
_ERROR_EXTRAS = ("retry_after", "stderr", "partial_text")


def encode_error(error: BaseException) -> dict[str, Any]:
    """A ``ProviderError`` as ``{"type", "message", ...}`` (only the attributes it has set)."""
    out: dict[str, Any] = {"type": type(error).__name__}
    if isinstance(error, errors.ProviderError):
        out["message"] = error.message
        for name in ("provider", "status", "body"):
            value = getattr(error, name)
            if value is not None:
                out[name] = value
        if error.retryable != type(error).retryable:
            out["retryable"] = error.retryable
    else:
        out["message"] = str(error)
    for name in _ERROR_EXTRAS:
        value = getattr(error, name, None)
        if value is not None:
            out[name] = value
    return out


def decode_error(data: dict[str, Any]) -> errors.ProviderError:
    """The recorded error as the same class (a ``ProviderError`` for an unknown name)."""
    cls = getattr(errors, str(data.get("type")), None)
    if not (isinstance(cls, type) and issubclass(cls, errors.ProviderError)):
        cls = errors.ProviderError
    kw: dict[str, Any] = {k: data[k] for k in ("provider", "status", "body") if k in data}
    if "retryable" in data:
        kw["retryable"] = data["retryable"]
    if issubclass(cls, errors.RateLimitError):
        kw["retry_after"] = data.get("retry_after")
    if issubclass(cls, errors.CLIError):
        kw["stderr"] = data.get("stderr")
    error = cls(str(data.get("message", "")), **kw)
    if "partial_text" in data:
        error.partial_text = data["partial_text"]
    return error


def encode_chunk(chunk: Chunk) -> dict[str, Any]:
    out: dict[str, Any] = {"type": chunk.type}
    for name, default in _CHUNK_DEFAULTS.items():
        if name in _CHUNK_SKIP or name == "type":
            continue
        value = getattr(chunk, name)
        if value != default:
            out[name] = value
    if chunk.error is not None:
        out["error"] = encode_error(chunk.error)
    return out


def decode_chunk(data: dict[str, Any], replayed: dict[str, Any] | None = None) -> Chunk:
    kw = {k: v for k, v in data.items() if k in _CHUNK_DEFAULTS and k not in _CHUNK_SKIP}
    if isinstance(data.get("error"), dict):
        kw["error"] = decode_error(data["error"])
    if isinstance(kw.get("metadata"), dict):
        kw["metadata"] = dict(kw["metadata"])
    return Chunk(**kw, replayed=replayed)


def encode_response(response: ModelResponse) -> dict[str, Any]:
    out: dict[str, Any] = {"text": response.text}
    if response.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in response.tool_calls
        ]
    if response.thinking is not None:
        out["thinking"] = response.thinking
    if response.thinking_blocks:
        out["thinking_blocks"] = response.thinking_blocks
    usage = response.usage.as_dict()
    if usage:
        out["usage"] = usage
    if response.model is not None:
        out["model"] = response.model
    if response.finish_reason is not None:
        out["finish_reason"] = response.finish_reason
    if response.tokens is not None:
        out["tokens"] = [
            {"text": t.text, "logprob": t.logprob, "top": [list(a) for a in t.top]}
            for t in response.tokens
        ]
    return out


def decode_tokens(data: dict[str, Any]) -> list[Any] | None:
    """The ``tokens`` of a recorded response as ``TokenChoice``s (None when absent);
    ``ValueError`` says what is wrong with a damaged entry (the store reports the line)."""
    raw = data.get("tokens")
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise ValueError("'tokens' must be a list")
    try:
        tokens = [TokenChoice.model_validate(t) for t in raw]
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"a token is damaged ({where}: {first['msg']})") from None
    if "".join(t.text for t in tokens) != data.get("text", ""):
        raise ValueError("the texts of 'tokens' do not join to the response text")
    return tokens


def decode_response(data: dict[str, Any], replayed: dict[str, Any] | None = None) -> ModelResponse:
    return ModelResponse(
        text=str(data.get("text", "")),
        tool_calls=[
            ToolCall(id=c["id"], name=c["name"], arguments=dict(c.get("arguments") or {}))
            for c in data.get("tool_calls") or []
        ],
        thinking=data.get("thinking"),
        thinking_blocks=data.get("thinking_blocks") or None,
        usage=Usage.from_dict(data.get("usage") or {}),
        model=data.get("model"),
        finish_reason=data.get("finish_reason"),
        replayed=replayed,
        tokens=_tokens(data),
    )


def _tokens(data: dict[str, Any]) -> list[Any] | None:
    try:
        return decode_tokens(data)
    except ValueError as exc:
        raise errors.CassetteError(f"a recorded response is damaged: {exc}") from None
