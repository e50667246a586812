"""Structured results as a tree table, validation errors per field, and parse attempts.

``tree_rows`` flattens a value (a pydantic model, dicts, lists, scalars; or the partial root of
a streaming reply) into rows with a path, depth, type and value; a model type adds its declared
fields that have not arrived yet as pending rows. ``tree_html``, ``errors_html`` and
``attempts_html`` render them; all text is escaped.
"""

from __future__ import annotations

import html
import json
import types
import typing
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from lion_nb.render.text import visible_controls

__all__ = [
    "TreeRow",
    "attempts_html",
    "errors_by_path",
    "errors_html",
    "tree_html",
    "tree_rows",
    "type_name",
]

Path = tuple[Any, ...]
MAX_ROWS = 2000  # a huge result shows its first rows and says how many were left out
MAX_VALUE_CHARS = 2000


def _e(value: Any) -> str:
    return html.escape(visible_controls(str(value)), quote=True)


@dataclass(frozen=True, slots=True)
class TreeRow:
    path: Path
    depth: int
    key: str
    type: str
    value: str | None  # a leaf's display text; None for containers and pending fields
    kind: str  # "leaf" | "object" | "list" | "pending" | "partial" | "more"
    status: str = ""  # "" | "ok" | "invalid" | "pending" | "streaming"
    errors: list[str] = field(default_factory=list)


def type_name(annotation: Any) -> str:
    """``list[Item]``, ``str | None``, ``Item`` — readable, without ``typing.``."""
    if annotation is None or annotation is type(None):
        return "None"
    origin = typing.get_origin(annotation)
    if origin is None:
        return getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_name(a) for a in args)
    if origin is typing.Literal:
        return "Literal[" + ", ".join(repr(a) for a in args) + "]"
    if origin is typing.Annotated:
        return type_name(args[0])
    name = getattr(origin, "__name__", str(origin))
    return f"{name}[{', '.join(type_name(a) for a in args)}]" if args else name


def _value_type(value: Any) -> str:
    if value is None:
        return "null"
    return type(value).__name__


def _leaf_text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > MAX_VALUE_CHARS:
        text = text[:MAX_VALUE_CHARS] + f"… ({len(text):,} chars)"
    return text


def errors_by_path(errors: list[dict[str, Any]] | None) -> dict[Path, list[str]]:
    """pydantic-style errors (``loc``, ``msg``) grouped by their location."""
    out: dict[Path, list[str]] = {}
    for err in errors or ():
        out.setdefault(tuple(err.get("loc") or ()), []).append(str(err.get("msg", "")))
    return out


def _model_fields(annotation: Any) -> dict[str, Any] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return {(f.alias or name): f.annotation for name, f in annotation.model_fields.items()}
    return None


def _unwrap(annotation: Any) -> Any:
    """``X | None`` -> ``X`` (for walking into the value)."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    return annotation


def _item_annotation(annotation: Any, key: Any) -> Any:
    annotation = _unwrap(annotation)
    fields = _model_fields(annotation)
    if fields is not None:
        return fields.get(key)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (list, tuple, set, frozenset) and args:
        return args[0]
    if origin is dict and len(args) == 2:
        return args[1]
    return None


def tree_rows(
    value: Any,
    *,
    model_type: Any = None,
    errors: dict[Path, list[str]] | None = None,
    status: dict[Path, str] | None = None,
    partial: tuple[Path, str] | None = None,
    max_rows: int = MAX_ROWS,
) -> list[TreeRow]:
    """Rows for ``value``. ``model_type`` names expected fields (pending until they arrive);
    ``status`` marks paths ("ok", "invalid", ...); ``partial`` is a string still streaming."""
    errors = errors or {}
    status = status or {}
    rows: list[TreeRow] = []
    if isinstance(value, BaseModel):
        model_type = model_type or type(value)
        value = value.model_dump(mode="python", by_alias=True)

    def add(row: TreeRow) -> bool:
        if len(rows) >= max_rows:
            return False
        rows.append(row)
        return True

    def walk(node: Any, annotation: Any, path: Path, depth: int) -> bool:
        if isinstance(node, BaseModel):
            annotation = annotation or type(node)
            node = node.model_dump(mode="python", by_alias=True)
        if isinstance(node, dict):
            items: list[tuple[Any, Any]] = list(node.items())
            expected = _model_fields(_unwrap(annotation)) or {}
            for key in expected:
                if key not in node:
                    items.append((key, _PENDING))
        elif isinstance(node, list | tuple):
            items = list(enumerate(node))
        else:
            return True
        for key, child in items:
            child_path = (*path, key)
            child_ann = _item_annotation(annotation, key) if annotation is not None else None
            label = f"[{key}]" if isinstance(key, int) else str(key)
            tname = type_name(child_ann) if child_ann is not None else _value_type(child)
            errs = errors.get(child_path, [])
            st = status.get(child_path, "invalid" if errs else "")
            if child is _PENDING:
                partial_text = (
                    partial[1] if partial is not None and partial[0] == child_path else None
                )
                is_partial = partial_text is not None
                ok = add(
                    TreeRow(
                        child_path,
                        depth,
                        label,
                        tname,
                        partial_text,
                        "partial" if is_partial else "pending",
                        "streaming" if is_partial else (st or "pending"),
                        errs,
                    )
                )
                if not ok:
                    return False
                continue
            if isinstance(child, dict | list | tuple | BaseModel):
                kind = "list" if isinstance(child, list | tuple) else "object"
                size = len(child) if not isinstance(child, BaseModel) else None
                tname = (
                    tname
                    if child_ann is not None
                    else (f"list ({size})" if kind == "list" else "object")
                )
                if not add(TreeRow(child_path, depth, label, tname, None, kind, st, errs)):
                    return False
                if not walk(child, child_ann, child_path, depth + 1):
                    return False
            else:
                if not add(
                    TreeRow(child_path, depth, label, tname, _leaf_text(child), "leaf", st, errs)
                ):
                    return False
        return True

    if isinstance(value, dict | list | tuple) or model_type is not None:
        root = value if value is not None else {}
        complete = walk(root, model_type, (), 0)
    else:
        complete = add(
            TreeRow(
                (),
                0,
                "value",
                _value_type(value),
                _leaf_text(value),
                "leaf",
                status.get((), ""),
                errors.get((), []),
            )
        )
    if not complete:
        rows.append(TreeRow((), 0, "…", "", f"more rows not shown (limit {max_rows:,})", "more"))
    return rows


class _Pending:
    def __repr__(self) -> str:
        return "<pending>"


_PENDING = _Pending()

_STATUS_MARK = {"ok": "✓", "invalid": "✗", "pending": "…", "streaming": "…"}


def tree_html(rows: list[TreeRow]) -> str:
    """The rows as a table: field (indented by depth), type, value, status/errors."""
    out = [
        '<table class="lion-parse-tree"><thead><tr><th>field</th><th>type</th>'
        "<th>value</th><th></th></tr></thead><tbody>"
    ]
    for row in rows:
        indent = "&#160;&#160;&#160;" * row.depth
        if row.kind == "pending":
            value = '<span class="lion-meta">not received yet</span>'
        elif row.kind == "partial":
            value = f'<span class="lion-parse-partial">{_e(row.value)}</span>…'
        elif row.value is None:
            value = ""
        else:
            value = f'<span class="lion-parse-value">{_e(row.value)}</span>'
        mark = _STATUS_MARK.get(row.status, "")
        errs = "".join(f'<div class="lion-field-error">{_e(m)}</div>' for m in row.errors)
        cls = f"lion-parse-row lion-parse-{_e(row.kind)}"
        if row.status:
            cls += f" lion-parse-{_e(row.status)}"
        out.append(
            f'<tr class="{cls}" data-path="{_e(_path_text(row.path))}">'
            f"<td>{indent}{_e(row.key)}</td><td><code>{_e(row.type)}</code></td>"
            f"<td>{value}{errs}</td><td>{mark}</td></tr>"
        )
    out.append("</tbody></table>")
    return "".join(out)


def _path_text(path: Path) -> str:
    return ".".join(f"[{p}]" if isinstance(p, int) else str(p) for p in path) or "(root)"


def errors_html(errors: list[dict[str, Any]] | None) -> str:
    """Validation errors as a table: where, what, error type."""
    if not errors:
        return ""
    rows = "".join(
        f"<tr><td><code>{_e(_path_text(tuple(e.get('loc') or ())))}</code></td>"
        f'<td class="lion-field-error">{_e(e.get("msg", ""))}</td>'
        f"<td><code>{_e(e.get('type', ''))}</code></td></tr>"
        for e in errors
    )
    return (
        '<table class="lion-parse-errors"><thead><tr><th>field</th><th>error</th>'
        f"<th>type</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def attempts_html(attempts: list[dict[str, Any]] | None) -> str:
    """The parse rounds that led to the result: 0 is local extraction, later ones are repair
    turns; each with its raw text and errors."""
    if not attempts:
        return ""
    items = []
    for a in attempts:
        n = int(a.get("attempt", 0))
        what = "local extraction" if n == 0 else f"repair turn {n}"
        ok = bool(a.get("ok"))
        errs = a.get("errors") or []
        verdict = "valid" if ok else f"{len(errs)} error{'s' if len(errs) != 1 else ''}"
        raw = str(a.get("raw", ""))
        items.append(
            f'<li class="lion-parse-attempt lion-parse-{"ok" if ok else "invalid"}">'
            f'<span class="lion-round-title">Attempt {n}</span> '
            f'<span class="lion-meta">{_e(what)} → {_e(a.get("target", ""))}</span> '
            f'<span class="lion-status {"lion-done" if ok else "lion-failed"}">{_e(verdict)}'
            "</span>"
            f"<details><summary>raw text ({len(raw):,} chars)</summary>"
            f'<pre class="lion-json">{_e(raw)}</pre></details>{errors_html(errs)}</li>'
        )
    return f'<ol class="lion-parse-attempts">{"".join(items)}</ol>'
