"""What identifies a model call on a cassette: the request as the model would see it.

``request_of(model, request)`` is a plain JSON value: provider, model, the compiled messages
(or the CLI prompt, system prompt and resumed session), tools, tool choice, response format and
the sampling options (the iModel's defaults overlaid by the request's own). Left out, so that a
recording made on one machine replays on another: credentials, headers, the base URL, transport
settings (timeouts, retries), machine-local settings (working directory, executable path,
environment) and the scripted model's fixtures. Tool-call ids are replaced by their order of
appearance (``#1``, ``#2`` ...): providers mint them at random, and they are ids, not content.

``fingerprint`` hashes that value; for a miss, ``closest`` finds the recording nearest a request
(the same position in the session first) and ``differences`` / ``describe`` say how they differ.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from lion_nb.models.registry import COMMON_LOCAL_OPTIONS, PROVIDERS

__all__ = [
    "closest",
    "describe",
    "differences",
    "fingerprint",
    "last_instruction",
    "request_of",
]


def _excluded(model: Any) -> frozenset[str]:
    """Options of ``model`` that never match: its registry entry's (credentials, transport,
    model facts, machine-local settings such as a CLI's working directory, the scripted
    model's fixtures); a model without an entry keeps only the options every provider keeps."""
    spec = PROVIDERS.get(getattr(model, "provider_name", ""))
    if spec is None:
        return COMMON_LOCAL_OPTIONS
    return spec.unmatched_options


def _jsonable(value: Any) -> Any:
    """``value`` as plain JSON (dict keys sorted); unknown objects become their ``repr``-free
    type name so no address or secret-bearing ``repr`` slips in."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return f"<{type(value).__name__}>"


def _options(model: Any, request_options: dict[str, Any]) -> dict[str, Any]:
    merged = {**getattr(model, "request_defaults", {}), **request_options}
    excluded = _excluded(model)
    return {
        k: _jsonable(v)
        for k, v in merged.items()
        if v is not None and k not in excluded and not callable(v)
    }


def _renumber_call_ids(messages: list[Any]) -> list[Any]:
    ids: dict[str, str] = {}

    def alias(cid: Any) -> Any:
        if not isinstance(cid, str):
            return cid
        return ids.setdefault(cid, f"#{len(ids) + 1}")

    out = []
    for msg in messages:
        if not isinstance(msg, dict):
            out.append(msg)
            continue
        msg = dict(msg)
        if isinstance(msg.get("tool_calls"), list):
            msg["tool_calls"] = [
                {**c, "id": alias(c.get("id"))} if isinstance(c, dict) else c
                for c in msg["tool_calls"]
            ]
        if "tool_call_id" in msg:
            msg["tool_call_id"] = alias(msg["tool_call_id"])
        out.append(msg)
    return out


def request_of(model: Any, request: Any) -> dict[str, Any]:
    """The matched form of an API ``ModelRequest`` or a ``CLIRequest`` sent through ``model``."""
    out: dict[str, Any] = {"provider": model.provider_name, "model": model.model}
    if hasattr(request, "messages"):
        out["messages"] = _jsonable(_renumber_call_ids(list(request.messages)))
        if request.tools:
            out["tools"] = _jsonable(request.tools)
        if request.tool_choice is not None:
            out["tool_choice"] = _jsonable(request.tool_choice)
        if request.response_schema is not None:
            out["response_schema"] = _jsonable(request.response_schema)
            out["response_name"] = request.response_name
        if getattr(request, "prefix", None) is not None:  # a fork from a token continues it
            out["prefix"] = request.prefix
    else:
        out["prompt"] = request.prompt
        if request.system is not None:
            out["system"] = request.system
        if request.resume is not None:
            out["resume"] = request.resume
        if request.response_schema is not None:
            out["response_schema"] = _jsonable(request.response_schema)
    options = _options(model, dict(request.options))
    if options:
        out["options"] = options
    return out


def fingerprint(request: dict[str, Any]) -> str:
    text = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def last_instruction(request: dict[str, Any]) -> str:
    """The user's last words in a matched request (the CLI prompt, or the last user message)."""
    if "prompt" in request:
        return str(request["prompt"])
    for msg in reversed(request.get("messages") or []):
        if isinstance(msg, dict) and msg.get("role") == "user":
            content = msg.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


def _walk(path: str, a: Any, b: Any, out: list[tuple[str, Any, Any]]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            _walk(f"{path}.{key}" if path else str(key), a.get(key), b.get(key), out)
    elif isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            _walk(f"{path}[{i}]", x, y, out)
        if len(a) != len(b):
            out.append((f"{path} (length)", len(a), len(b)))
    elif a != b:
        out.append((path, a, b))


def differences(recorded: dict[str, Any], now: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """``[(path, recorded value, requested value), ...]``, e.g. ``("messages[1].content",
    "Capital of France?", "Capital of Spain?")``; lists are compared item by item, then by length."""
    out: list[tuple[str, Any, Any]] = []
    _walk("", recorded, now, out)
    return out


def _turns(request: dict[str, Any]) -> int:
    messages = request.get("messages")
    return len(messages) if isinstance(messages, list) else 0


def closest(
    now: dict[str, Any], recorded: list[dict[str, Any]], position: int = 0
) -> tuple[int, list[tuple[str, Any, Any]]] | None:
    """The recorded request nearest ``now``: ``(its index in recorded, differences)``, or None
    when nothing is recorded. The same position in the session first: the same provider, then
    as many messages (the same turn of a conversation: editing the second prompt compares it
    with the recorded second turn, not with the first), then the fewest differences, then the
    nearest in call order to ``position`` (the call's 0-based place among the session's
    calls)."""
    if not recorded:
        return None
    provider, turns = now.get("provider"), _turns(now)
    ranked = []
    for index, request in enumerate(recorded):
        diffs = differences(request, now)
        rank = (
            request.get("provider") != provider,
            _turns(request) != turns,
            len(diffs),
            abs(index - position),
        )
        ranked.append((rank, index, diffs))
    _, index, diffs = min(ranked, key=lambda r: (r[0], r[1]))
    return index, diffs


def _short(value: Any, limit: int = 80) -> str:
    if isinstance(value, str):
        return repr(value if len(value) <= limit else value[: limit - 1] + "…")
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe(diffs: list[tuple[str, Any, Any]], limit: int = 3) -> str:
    """The first few differences, readable: ``messages[1].content: recorded 'a', now 'b'``,
    ``messages: recorded 2 items, now 4``."""
    parts = []
    for path, old, new in diffs[:limit]:
        if path.endswith(" (length)"):  # a list of another length: say how many items
            items = "item" if old == 1 else "items"
            parts.append(f"{path.removesuffix(' (length)')}: recorded {old} {items}, now {new}")
            continue
        rec = "(absent)" if old is None else _short(old)
        cur = "(absent)" if new is None else _short(new)
        parts.append(f"{path}: recorded {rec}, now {cur}")
    more = f" (and {len(diffs) - limit} more)" if len(diffs) > limit else ""
    return "; ".join(parts) + more
