"""A flow as HTML and text, from ``FlowViewModel.snapshot()`` (pure functions).

Every value from a node (operation names, instructions, branch names, errors) goes through the
one ``escape``; transcripts go through ``transcript_html`` / ``streaming_html``. A row is a line
of fields, each one ``lion-flow-f`` (``white-space: nowrap``), joined by " · ": a narrow row
wraps between fields, never inside one ("552 ms" stays whole)::

    <div class="lion-flow-row lion-flow-<status>" data-id="..">
      <span class="lion-flow-f"><span class="lion-flow-n">3.</span>
        <span class="lion-flow-status lion-flow-running">running</span></span> ·
      <span class="lion-flow-f lion-flow-what"><code class="lion-fn">communicate</code>
        <span class="lion-flow-label">..</span></span> ·      (cut with "…" when too wide)
      <span class="lion-flow-f lion-flow-time">1.2 s</span> · <span class="lion-flow-f lion-usage">..</span>
    </div>

The picture is a time strip (``strip_html``): one lane per node, a bar from when it started for
as long as it ran (so far, while running), coloured by status, with where it ran. Bars are
CSS-positioned ``<span>``s (``left``/``width`` in %, the only inline style, made of numbers), so
the same markup serves the live view and the static fallback, with no script and no SVG.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from lion_nb.render.escape import escape
from lion_nb.render.html import streaming_html, transcript_html
from lion_nb.render.text import format_usage, unpriced_note

if TYPE_CHECKING:
    from lion_nb.viewmodels.flow import FlowSnapshot, NodeRow

__all__ = [
    "detail_frame_html",
    "detail_title_html",
    "flow_error_html",
    "flow_header_html",
    "flow_html",
    "flow_text",
    "format_run_time",
    "node_detail_html",
    "row_cells_html",
    "row_html",
    "row_part_html",
    "strip_box_html",
    "strip_html",
]

_MIN_BAR = 0.6  # % of the strip: a node that ran for no time at all still shows


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


def _field(html: str, cls: str = "", title: str | None = None) -> str:
    """One field of a row: never wrapped inside (``lion-flow-f``: ``white-space: nowrap``)."""
    tip = f' title="{escape(title)}"' if title else ""
    return f'<span class="lion-flow-f{" " + cls if cls else ""}"{tip}>{html}</span>'


def row_cells_html(row: NodeRow) -> str:
    """The cells of one node's row (what changes while it runs), separated by " · " so a row
    reads well without the stylesheet (a saved notebook on GitHub). The branch is left out
    when it is the fork named after the node (its title says it already)."""
    deps = ", ".join(map(str, row.depends_on))
    name = f'<b class="lion-flow-name">{escape(row.name)}</b> ' if row.name else ""
    usage = _usage(row)
    cells = [
        _field(
            f'<span class="lion-flow-n">{row.index}.</span> <span class="lion-flow-status '
            f'lion-flow-{escape(row.status)}">{escape(row.status)}</span>'
        ),
        _field(
            f'<code class="lion-fn">{escape(row.operation)}</code> {name}'
            f'<span class="lion-flow-label">{escape(row.label)}</span>',
            "lion-flow-what",
            title=row.label or None,
        ),
        _field(f"after {deps}", "lion-flow-deps", "runs after") if deps else "",
        _field(escape(row.branch), "lion-flow-branch", "branch")
        if row.branch and row.branch != row.title
        else "",
        _field(f"{row.attempts} Ray attempts", "lion-flow-attempts") if row.attempts > 1 else "",
        _field(escape(format_run_time(row.run_ms)), "lion-flow-time")
        if row.run_ms is not None
        else "",
        _field(escape(usage), "lion-usage") if usage else "",
    ]
    error = f'<div class="lion-flow-error">{escape(row.error)}</div>' if row.error else ""
    return " · ".join(c for c in cells if c) + error


def row_html(row: NodeRow, *, selected: bool = False) -> str:
    cls = f"lion-flow-row lion-flow-{escape(row.status)}" + (
        " lion-flow-selected" if selected else ""
    )
    return f'<div class="{cls}" data-id="{escape(row.id)}">{row_cells_html(row)}</div>'


def row_part_html(row: NodeRow, *, selected: bool = False) -> str:
    """A node's row in a live view: its cells in a box of their own (the page adds the row's
    open/close control before them)."""
    cls = f"lion-flow-row lion-flow-{escape(row.status)}" + (
        " lion-flow-selected" if selected else ""
    )
    return (
        f'<div class="{cls}" data-id="{escape(row.id)}">'
        f'<div class="lion-flow-cells">{row_cells_html(row)}</div></div>'
    )


def strip_box_html() -> str:
    """The box of the time strip in a live view (``data-parts``: the strip, redrawn as time
    passes, is a nested part; the box stays)."""
    return '<div class="lion-flow-strip-box" data-parts></div>'


def detail_frame_html() -> str:
    """The box of the selected node's transcript in a live view (``data-parts``: its cards
    are nested parts)."""
    return '<div class="lion-flow-detail"><div class="lion-transcript" data-parts></div></div>'


def detail_title_html(row: NodeRow) -> str:
    title = f"{row.index}. {row.operation} — {row.branch or 'not run yet'}"
    return f'<h2 class="lion-title">{escape(title)}</h2>'


def flow_error_html(row: NodeRow) -> str:
    return f'<div class="lion-flow-error">{escape(row.error)}</div>' if row.error else ""


def flow_header_html(snapshot: FlowSnapshot) -> str:
    counts = " · ".join(f"{n} {status}" for status, n in snapshot.counts.items() if n)
    usage = format_usage(
        {
            "input_tokens": snapshot.input_tokens,
            "output_tokens": snapshot.output_tokens,
            "total_cost_usd": snapshot.cost_usd,
        }
    ) + unpriced_note(snapshot.unpriced, "node")
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


def _pct(value: float) -> str:
    return f"{value:.2f}%"


def _lane_html(row: NodeRow, span_ms: float) -> str:
    where = f"{row.index}. {row.title or row.operation}"
    if row.start_ms is None:  # never started: a lane without a bar says why
        track = f'<span class="lion-flow-nobar">{escape(row.status)}</span>'
        info = ""
    else:
        run_ms = row.run_ms or 0.0
        left = min(100.0 - _MIN_BAR, row.start_ms / span_ms * 100.0) if span_ms else 0.0
        width = max(_MIN_BAR, min(100.0 - left, run_ms / span_ms * 100.0 if span_ms else 100.0))
        words = [f"+{format_run_time(row.start_ms)}", format_run_time(run_ms)]
        if row.worker:
            words.append(row.worker)
        info = " · ".join(words)
        tip = f"{where} — {row.status}: started {words[0]}, ran {' on '.join(words[1:])}"
        track = (
            f'<span class="lion-flow-bar lion-flow-{escape(row.status)}" '
            f'style="left:{_pct(left)};width:{_pct(width)}" title="{escape(tip)}"></span>'
        )
    return (
        f'<div class="lion-flow-lane lion-flow-{escape(row.status)}" data-id="{escape(row.id)}">'
        f'<span class="lion-flow-lane-name" title="{escape(where)}">{escape(where)}</span> '
        f'<span class="lion-flow-track">{track}</span> '
        f'<span class="lion-flow-lane-info">{escape(info)}</span></div>'
    )


def strip_html(snapshot: FlowSnapshot) -> str:
    """The time strip: which node ran when, for how long, where ("" for an empty flow)."""
    if not snapshot.rows:
        return ""
    span = snapshot.span_ms
    axis = (
        '<div class="lion-flow-axis"><span class="lion-flow-lane-name">when each node ran</span> '
        f'<span class="lion-flow-track"><span class="lion-flow-tick">0</span>'
        f'<span class="lion-flow-tick lion-flow-tick-end">{escape(format_run_time(span))}'
        '</span></span> <span class="lion-flow-lane-info"></span></div>'
    )
    lanes = "".join(_lane_html(r, span) for r in snapshot.rows)
    return f'<div class="lion-flow-strip">{axis}{lanes}</div>'


def flow_html(snapshot: FlowSnapshot) -> str:
    """The whole flow as one static block (saved notebooks, ``Flow._repr_html_``): the
    header, the rows and the time strip."""
    rows = "".join(row_html(r, selected=r.id == snapshot.selected) for r in snapshot.rows)
    return f'<div class="lion-flow">{flow_header_html(snapshot)}{rows}{strip_html(snapshot)}</div>'


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
