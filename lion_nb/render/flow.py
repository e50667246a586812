"""A flow as HTML and text, from ``FlowViewModel.snapshot()`` (pure functions).

Every value from a node (operation names, instructions, branch names, errors) goes through the
one ``escape``; transcripts go through ``transcript_html`` / ``streaming_html``. Row markup::

    <div class="lion-flow-row lion-flow-<status>" data-id="..">
      <span class="lion-flow-n">3</span> <span class="lion-flow-status">running</span>
      <code class="lion-fn">communicate</code> <span class="lion-flow-label">..</span>
      <span class="lion-flow-time">1.2 s</span> <span class="lion-usage">..</span>
    </div>
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from lion_nb.render.escape import escape
from lion_nb.render.html import streaming_html, transcript_html
from lion_nb.render.text import format_usage

if TYPE_CHECKING:
    from lion_nb.flow.view_model import FlowSnapshot, NodeRow

__all__ = [
    "flow_header_html",
    "flow_html",
    "flow_text",
    "format_run_time",
    "node_detail_html",
    "row_cells_html",
    "row_html",
]


def format_run_time(ms: float | None) -> str:
    if ms is None:
        return ""
    if ms < 1000:
        return f"{ms:.0f} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    return f"{int(ms // 60_000)} min {ms % 60_000 / 1000:.0f} s"


def _usage(row: NodeRow) -> str:
    return format_usage(
        {
            "input_tokens": row.input_tokens,
            "output_tokens": row.output_tokens,
            "total_cost_usd": row.cost_usd,
        }
    )


def row_cells_html(row: NodeRow) -> str:
    """The cells of one node's row (what changes while it runs), separated by " · " so a row
    reads well without the stylesheet (a saved notebook on GitHub)."""
    deps = ", ".join(map(str, row.depends_on))
    cells = [
        f'<span class="lion-flow-n">{row.index}.</span> '
        f'<span class="lion-flow-status lion-flow-{escape(row.status)}">{escape(row.status)}</span>',
        f'<code class="lion-fn">{escape(row.operation)}</code> '
        f'<span class="lion-flow-label">{escape(row.label)}</span>',
        f'<span class="lion-flow-deps" title="runs after">after {deps}</span>' if deps else "",
        f'<span class="lion-flow-branch">{escape(row.branch)}</span>' if row.branch else "",
        f'<span class="lion-flow-attempts">{row.attempts} Ray attempts</span>'
        if row.attempts > 1
        else "",
        f'<span class="lion-flow-time">{escape(format_run_time(row.run_ms))}</span>'
        if row.run_ms is not None
        else "",
        f'<span class="lion-usage">{escape(_usage(row))}</span>' if _usage(row) else "",
    ]
    error = f'<div class="lion-flow-error">{escape(row.error)}</div>' if row.error else ""
    return " · ".join(c for c in cells if c) + error


def row_html(row: NodeRow, *, selected: bool = False) -> str:
    cls = f"lion-flow-row lion-flow-{escape(row.status)}" + (
        " lion-flow-selected" if selected else ""
    )
    return f'<div class="{cls}" data-id="{escape(row.id)}">{row_cells_html(row)}</div>'


def flow_header_html(snapshot: FlowSnapshot) -> str:
    counts = " · ".join(f"{n} {status}" for status, n in snapshot.counts.items() if n)
    usage = format_usage(
        {
            "input_tokens": snapshot.input_tokens,
            "output_tokens": snapshot.output_tokens,
            "total_cost_usd": snapshot.cost_usd,
        }
    )
    return (
        f'<div class="lion-flow-head"><b class="lion-title">{escape(snapshot.title)}</b> '
        f'<span class="lion-view-status">{escape(counts or "no nodes")}</span> '
        f'<span class="lion-usage">{escape(usage)}</span></div>'
    )


def node_detail_html(
    row: NodeRow | None, messages: Iterable[Any], live: Iterable[tuple[uuid.UUID, str]] = ()
) -> str:
    """The selected node's transcript (its branch), with replies still being written."""
    if row is None:
        return ""
    title = f"{row.index}. {row.operation} — {row.branch or 'not run yet'}"
    body = transcript_html(list(messages), title=title)
    streaming = "".join(streaming_html(mid, text) for mid, text in live)
    error = f'<div class="lion-flow-error">{escape(row.error)}</div>' if row.error else ""
    return f'<div class="lion-flow-detail">{body}{streaming}{error}</div>'


def flow_html(snapshot: FlowSnapshot) -> str:
    """The whole flow as one static block (saved notebooks, ``Flow._repr_html_``)."""
    rows = "".join(row_html(r, selected=r.id == snapshot.selected) for r in snapshot.rows)
    return f'<div class="lion-flow">{flow_header_html(snapshot)}{rows}</div>'


def flow_text(snapshot: FlowSnapshot) -> str:
    lines = [snapshot.title]
    for r in snapshot.rows:
        usage = _usage(r)
        parts = [f"{r.index}. [{r.status}] {r.operation}: {r.label}"]
        if r.run_ms is not None:
            parts.append(format_run_time(r.run_ms))
        if usage:
            parts.append(usage)
        if r.error:
            parts.append(r.error)
        lines.append(" | ".join(parts))
    return "\n".join(lines)
