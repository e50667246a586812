"""A branch as JSON (lossless, re-importable), Markdown, or one self-contained HTML page.

``export_json(branch)`` writes the branch snapshot (``Branch.to_dict``: messages, names, model
settings — never credentials) plus what the messages do not carry themselves: the provenance
table (runs with their durations and usage, the notebook cell of each message, parse attempts)
and the fork lineage. ``import_json(text)`` returns an equal branch: same ids, messages (tool
calls and results, usage, thinking, parsed results), metadata and lineage.

JSON cannot say "this dict was a ``Order`` model". Pydantic values inside messages or metadata
(a parse result kept in ``metadata["result"]``, a tool output) are written as
``{"__lion_nb_model__": "module:Qualname", "data": {...}}`` and rebuilt on import when that
class is already imported by the program; an import never imports a module named in a file
(that would run code chosen by whoever wrote the file), so otherwise the plain data is kept.
Tuples are tagged the same way so they do not come back as lists.

An export is made to be shared: whatever has a secret's shape is redacted from all three forms
(``lion_nb.secrets.redact``: a key pasted into a prompt, a token a tool printed), so an import
gives ``[REDACTED]`` back in its place.
"""

from __future__ import annotations

import json
import sys
import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from lion_nb.messages import MESSAGE
from lion_nb.provenance import provenance_of
from lion_nb.render.text import safe_markdown_source, transcript_markdown
from lion_nb.secrets import redact
from lion_nb.session.branch import Branch

__all__ = ["FORMAT", "export_html", "export_json", "export_markdown", "import_json"]

FORMAT = "lion_nb.export/1"
_MODEL = "__lion_nb_model__"
_TUPLE = "__lion_nb_tuple__"


# ----- encoding values ---------------------------------------------------------------------------
def _encode(value: Any) -> Any:
    if isinstance(value, BaseModel):
        cls = type(value)
        return {
            _MODEL: f"{cls.__module__}:{cls.__qualname__}",
            "data": _encode(value.model_dump(mode="json")),
        }
    if isinstance(value, dict):
        return {str(k): _encode(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return {_TUPLE: [_encode(v) for v in value]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def _resolve(path: str) -> type[BaseModel] | None:
    module_name, _, qualname = path.partition(":")
    module = sys.modules.get(module_name)  # never import: see the module docstring
    obj: Any = module
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    return obj if isinstance(obj, type) and issubclass(obj, BaseModel) else None


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        if _MODEL in value and set(value) == {_MODEL, "data"}:
            data = _decode(value["data"])
            cls = _resolve(str(value[_MODEL]))
            if cls is not None:
                try:
                    return cls.model_validate(data)
                except ValueError:
                    pass  # the class changed since the export: keep the data
            return {_MODEL: value[_MODEL], "data": data}
        if _TUPLE in value and len(value) == 1:
            return tuple(_decode(v) for v in value[_TUPLE])
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def _message_dict(message: Any) -> dict[str, Any]:
    # field by field (not model_dump) so pydantic values inside Any fields keep their type tag;
    # a reply's tokens are plain data of a known shape: as in the snapshot, absent when None
    out = {}
    for name in type(message).model_fields:
        value = getattr(message, name)
        if name == "tokens":
            if value is not None:
                out[name] = [t.model_dump(mode="json") for t in value]
            continue
        out[name] = _encode(value)
    return out


# ----- JSON ----------------------------------------------------------------------------------------
def export_json(branch: Branch, *, indent: int | None = 1) -> str:
    """The branch as JSON text; ``import_json`` restores it."""
    snapshot = branch.to_dict()
    snapshot["messages"] = [_message_dict(m) for m in branch.messages]
    snapshot["metadata"] = _encode(branch.metadata)
    table = provenance_of(branch, create=False)
    data = {
        "format": FORMAT,
        "branch": snapshot,
        "provenance": table.to_dict() if table is not None and not table.empty else None,
        "lineage": branch.metadata.get("forked_from"),
        "session": {"id": str(branch.session.id), "name": branch.session.name}
        if branch.session is not None
        else None,
    }
    return redact(json.dumps(data, indent=indent, ensure_ascii=False, allow_nan=False))


def import_json(text: str | bytes, **overrides: Any) -> Branch:
    """A branch equal to the exported one (ids, messages, metadata, lineage, provenance).
    ``overrides`` go to ``Branch.from_dict`` (e.g. ``chat_model=`` — a scripted model's
    replies are code and are not exported, and keys never are)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not a lion_nb export: invalid JSON ({exc})") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"not a lion_nb export (format {found!r}, expected {FORMAT!r})")
    snapshot = dict(data["branch"])
    raw_messages = snapshot.pop("messages", [])
    snapshot["metadata"] = _decode(snapshot.get("metadata") or {})
    snapshot["messages"] = []
    branch = Branch.from_dict(snapshot, **overrides)
    for position, raw in enumerate(raw_messages):
        try:
            message = MESSAGE.validate_python(_decode(raw))
        except ValueError as exc:
            raise ValueError(f"message {position} of the export is invalid: {exc}") from exc
        branch.restore_message(message)
    if data.get("provenance"):
        table = provenance_of(branch)
        assert table is not None
        table.load(data["provenance"])
    return branch


# ----- documents -----------------------------------------------------------------------------------
def _title(branch: Branch) -> str:
    return branch.name or f"Branch {str(branch.id)[:8]}"


def _lineage_note(branch: Branch) -> str:
    origin = branch.metadata.get("forked_from")
    if not origin:
        return ""
    return f"Forked from branch {origin.get('branch_id')} at message #{origin.get('index')}"


def export_markdown(branch: Branch) -> str:
    """The transcript as Markdown (safe to render anywhere: no raw HTML, safe links only)."""
    text = transcript_markdown(list(branch.messages), title=_title(branch))
    note = _lineage_note(branch)
    if note:
        head, _, rest = text.partition("\n")
        note_md = safe_markdown_source(f"*{note}*").strip()
        text = f"{head}\n\n{note_md}\n\n{rest.lstrip(chr(10))}"
    return redact(text)


def export_html(branch: Branch) -> str:
    """One self-contained HTML page (stylesheet inlined, no scripts, a CSP forbidding them)."""
    # lazy: markdown-it and nh3 (~65 ms), for an HTML export only
    from lion_nb.render.html import transcript_html

    return redact(transcript_html(list(branch.messages), title=_title(branch), standalone=True))
