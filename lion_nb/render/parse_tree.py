"""Structured results as HTML: the tree table of ``viewmodels.parse_tree.tree_rows``, validation
errors per field, and the parse attempts; all text is escaped."""

from __future__ import annotations

from typing import Any

from lion_nb.render.escape import escape
from lion_nb.viewmodels.parse_tree import Path, TreeRow

__all__ = [
    "attempts_html",
    "errors_html",
    "parse_header_html",
    "parse_view_html",
    "tree_frame_html",
    "tree_html",
    "tree_row_html",
]

_STATUS_MARK = {"ok": "✓", "invalid": "✗", "pending": "…", "streaming": "…"}


_TREE_HEAD = (
    '<table class="lion-parse-tree"><thead><tr><th>field</th><th>type</th>'
    "<th>value</th><th></th></tr></thead>"
)


def tree_html(rows: list[TreeRow]) -> str:
    """The rows as a table: field (indented by depth), type, value, status/errors."""
    return f"{_TREE_HEAD}<tbody>{''.join(tree_row_html(row) for row in rows)}</tbody></table>"


def tree_frame_html() -> str:
    """The table without its rows, its body marked as the box a live view puts them in
    (``data-parts``)."""
    return f"{_TREE_HEAD}<tbody data-parts></tbody></table>"


def tree_row_html(row: TreeRow) -> str:
    """One row of the tree table."""
    indent = "&#160;&#160;&#160;" * row.depth
    if row.kind == "pending":
        value = '<span class="lion-meta">not received yet</span>'
    elif row.kind == "partial":
        value = f'<span class="lion-parse-partial">{escape(row.value)}</span>…'
    elif row.value is None:
        value = ""
    else:
        value = f'<span class="lion-parse-value">{escape(row.value)}</span>'
    mark = _STATUS_MARK.get(row.status, "")
    errs = "".join(f'<div class="lion-field-error">{escape(m)}</div>' for m in row.errors)
    cls = f"lion-parse-row lion-parse-{escape(row.kind)}"
    if row.status:
        cls += f" lion-parse-{escape(row.status)}"
    return (
        f'<tr class="{cls}" data-path="{escape(_path_text(row.path))}">'
        f"<td>{indent}{escape(row.key)}</td><td><code>{escape(row.type)}</code></td>"
        f"<td>{value}{errs}</td><td>{mark}</td></tr>"
    )


def _path_text(path: Path) -> str:
    return ".".join(f"[{p}]" if isinstance(p, int) else str(p) for p in path) or "(root)"


def errors_html(errors: list[dict[str, Any]] | None) -> str:
    """Validation errors as a table: where, what, error type."""
    if not errors:
        return ""
    rows = "".join(
        f"<tr><td><code>{escape(_path_text(tuple(e.get('loc') or ())))}</code></td>"
        f'<td class="lion-field-error">{escape(e.get("msg", ""))}</td>'
        f"<td><code>{escape(e.get('type', ''))}</code></td></tr>"
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
            f'<span class="lion-meta">{escape(what)} → {escape(a.get("target", ""))}</span> '
            f'<span class="lion-status {"lion-done" if ok else "lion-failed"}">{escape(verdict)}'
            "</span>"
            f"<details><summary>raw text ({len(raw):,} chars)</summary>"
            f'<pre class="lion-json">{escape(raw)}</pre></details>{errors_html(errs)}</li>'
        )
    return f'<ol class="lion-parse-attempts">{"".join(items)}</ol>'


def parse_header_html(title: str, status: str, detail: str = "") -> str:
    """The parse view's heading: its title, the status of the parse, why it is not JSON."""
    return (
        f'<div class="lion-round-head"><span class="lion-round-title">'
        f'{escape(title)}</span><span class="lion-status lion-parse-{escape(status)}">'
        f'{escape(status)}</span><span class="lion-meta">{escape(detail)}</span></div>'
    )


def parse_view_html(
    header: str,
    rows: list[TreeRow],
    errors: list[dict[str, Any]] | None,
    attempts: list[dict[str, Any]] | None,
) -> str:
    """The whole parse view as one fragment (its static fallback)."""
    return (
        f'<div class="lion-view lion-parse">{header}'
        f"{tree_html(rows)}{errors_html(errors)}{attempts_html(attempts)}</div>"
    )
