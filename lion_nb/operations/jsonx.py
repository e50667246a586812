"""Finding JSON in model text and matching its keys to the fields a caller asked for."""

from __future__ import annotations

import json
import re
from difflib import SequenceMatcher
from typing import Any

_FENCE = re.compile(r"```(?:json|JSON|javascript|js)?\s*\n(.*?)```", re.S)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


def _balanced_spans(text: str):
    """Yield (start, end) of each top-level balanced {...} / [...] span, string-aware."""
    depth = 0
    start = -1
    in_str = False
    escaped = False
    opener = ""
    for i, ch in enumerate(text):
        if in_str:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"' and depth:
            in_str = True
        elif ch in "{[":
            if depth == 0:
                start, opener = i, ch
            depth += 1
        elif ch in "}]" and depth:
            depth -= 1
            if depth == 0:
                yield start, i + 1, opener


def _loads(candidate: str) -> Any:
    try:
        return json.loads(candidate)
    except json.JSONDecodeError:
        fixed = _TRAILING_COMMA.sub(r"\1", candidate)
        return json.loads(fixed)


def extract_json(text: str) -> Any:
    """The first JSON value in ``text``: the whole text, a fenced block, or the first balanced
    object/array. Raises ValueError when there is none."""
    stripped = text.strip()
    try:
        return _loads(stripped)
    except (json.JSONDecodeError, ValueError):
        pass
    for block in _FENCE.findall(text):
        try:
            return _loads(block.strip())
        except (json.JSONDecodeError, ValueError):
            continue
    for start, end, _ in _balanced_spans(text):
        try:
            return _loads(text[start:end])
        except (json.JSONDecodeError, ValueError):
            continue
    raise ValueError("no JSON object or array found in the text")


def _norm(key: str) -> str:
    return re.sub(r"[\s_\-]", "", key).lower()


def fuzzy_keys(data: dict[str, Any], fields: list[str], threshold: float = 0.85) -> dict[str, Any]:
    """Rename keys of ``data`` to the closest of ``fields`` (exact, normalised, then similarity
    >= threshold). Keys that match no field are kept as they are."""
    out: dict[str, Any] = {}
    remaining = list(fields)
    normal = {_norm(f): f for f in fields}
    for key, value in data.items():
        target = key if key in remaining else normal.get(_norm(key))
        if target is None or target not in remaining:
            scored = [(SequenceMatcher(None, _norm(key), _norm(f)).ratio(), f) for f in remaining]
            best = max(scored, default=(0.0, None))
            target = best[1] if best[0] >= threshold else None
        if target is not None and target in remaining:
            remaining.remove(target)
            out[target] = value
        else:
            out.setdefault(key, value)
    return out
