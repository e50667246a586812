"""A structured value as tree rows: ``tree_rows`` flattens a value (a pydantic model, dicts,
lists, scalars; or the partial root of a streaming reply) into rows with a path, depth, type
and value; a model type adds its declared fields that have not arrived yet as pending rows.
``render.parse_tree`` draws the rows."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from lion_nb.incremental.annotations import item_annotation, model_fields, type_name, unwrap

__all__ = ["MAX_ROWS", "MAX_VALUE_CHARS", "Path", "TreeRow", "errors_by_path", "tree_rows"]

Path = tuple[Any, ...]
MAX_ROWS = 2000  # a huge result shows its first rows and says how many were left out
MAX_VALUE_CHARS = 2000


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


class _Pending:
    def __repr__(self) -> str:
        return "<pending>"


_PENDING = _Pending()


class _Full(Exception):
    """``max_rows`` rows were made."""


class _Rows:
    """The walk behind ``tree_rows``: one row per member, depth first."""

    def __init__(
        self,
        errors: dict[Path, list[str]],
        status: dict[Path, str],
        partial: tuple[Path, str] | None,
        max_rows: int,
    ) -> None:
        self.errors = errors
        self.status = status
        self.partial = partial
        self.max_rows = max_rows
        self.rows: list[TreeRow] = []

    def add(self, row: TreeRow) -> None:
        if len(self.rows) >= self.max_rows:
            raise _Full
        self.rows.append(row)

    def walk(self, node: Any, annotation: Any, path: Path, depth: int) -> None:
        if isinstance(node, BaseModel):
            annotation = annotation or type(node)
            node = node.model_dump(mode="python", by_alias=True)
        if isinstance(node, dict):
            items: list[tuple[Any, Any]] = list(node.items())
            expected = model_fields(unwrap(annotation)) or {}
            items += [(key, _PENDING) for key in expected if key not in node]
        elif isinstance(node, list | tuple):
            items = list(enumerate(node))
        else:
            return
        for key, child in items:
            child_ann = item_annotation(annotation, key) if annotation is not None else None
            self.member((*path, key), key, child, child_ann, depth)

    def member(self, path: Path, key: Any, child: Any, annotation: Any, depth: int) -> None:
        label = f"[{key}]" if isinstance(key, int) else str(key)
        tname = type_name(annotation) if annotation is not None else _value_type(child)
        errs = self.errors.get(path, [])
        st = self.status.get(path, "invalid" if errs else "")
        if child is _PENDING:
            text = self.partial[1] if self.partial is not None and self.partial[0] == path else None
            if text is not None:
                self.add(TreeRow(path, depth, label, tname, text, "partial", "streaming", errs))
            else:
                self.add(TreeRow(path, depth, label, tname, None, "pending", st or "pending", errs))
        elif isinstance(child, dict | list | tuple | BaseModel):
            kind = "list" if isinstance(child, list | tuple) else "object"
            if annotation is None:
                size = len(child) if not isinstance(child, BaseModel) else None
                tname = f"list ({size})" if kind == "list" else "object"
            self.add(TreeRow(path, depth, label, tname, None, kind, st, errs))
            self.walk(child, annotation, path, depth + 1)
        else:
            self.add(TreeRow(path, depth, label, tname, _leaf_text(child), "leaf", st, errs))


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
    if isinstance(value, BaseModel):
        model_type = model_type or type(value)
        value = value.model_dump(mode="python", by_alias=True)
    walker = _Rows(errors, status, partial, max_rows)
    try:
        if isinstance(value, dict | list | tuple) or model_type is not None:
            walker.walk(value if value is not None else {}, model_type, (), 0)
        else:
            leaf = _leaf_text(value)
            st = status.get((), "")
            walker.add(
                TreeRow((), 0, "value", _value_type(value), leaf, "leaf", st, errors.get((), []))
            )
    except _Full:
        walker.rows.append(
            TreeRow((), 0, "…", "", f"more rows not shown (limit {max_rows:,})", "more")
        )
    return walker.rows
