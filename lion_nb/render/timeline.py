"""The progression inspector's view model: pages of timeline rows, per-message detail (with
what the model saw, from ``render.turns``), run log and totals. Pure functions of a branch and
its provenance table; the widget in ``lion_nb.widgets.inspector`` only shows their HTML.

Everything is computed per visible page, so a 10,000-message branch costs a page of work to
open; only whole-branch totals walk every message, and they are kept up to date incrementally.
Model and tool text reaches HTML only through ``html.escape`` or the render layer's
``message_html`` (Markdown via markdown-it + nh3).
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lion_nb.messages import ActionRequest, AssistantResponse, Instruction, RoledMessage
from lion_nb.provenance import Provenance, RunRecord
from lion_nb.render.html import message_html
from lion_nb.render.text import format_time, format_usage, label, visible_controls
from lion_nb.render.turns import NextTurn, next_turn_html, payload_json, turn_payload

__all__ = [
    "TimelineRow",
    "TotalsCache",
    "branch_totals",
    "header_html",
    "page_bounds",
    "page_count",
    "row_detail_html",
    "row_summary_html",
    "runs_html",
    "static_html",
    "timeline_rows",
]


def _e(value: Any) -> str:
    return html.escape(visible_controls(str(value)), quote=True)


# ----- paging ----------------------------------------------------------------------------------
def page_count(total: int, page_size: int) -> int:
    return max(1, -(-total // page_size))


def page_bounds(page: int, page_size: int, total: int) -> tuple[int, int]:
    """``[start, stop)`` of ``page`` (clamped to the last page)."""
    page = min(max(0, page), page_count(total, page_size) - 1)
    start = page * page_size
    return start, min(total, start + page_size)


# ----- rows ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class TimelineRow:
    index: int
    message: RoledMessage
    run: RunRecord | None
    cell: int | None
    new_run: bool  # the first row of its run on this page (a run header is shown above it)

    @property
    def usage(self) -> dict[str, Any]:
        if isinstance(self.message, AssistantResponse):
            return self.message.usage
        return {}


def timeline_rows(
    messages: Sequence[RoledMessage] | Any,
    indices: Sequence[int],
    provenance: Provenance | None = None,
) -> list[TimelineRow]:
    """Rows for the messages at ``indices`` only (the visible page: a ``range``, or the
    positions a filter kept)."""
    rows = []
    prev_run = None
    prev_index = None
    for index in indices:
        message = messages[index]
        run = provenance.run_for(message.id) if provenance is not None else None
        if provenance is not None and prev_index != index - 1 and index > 0:
            prev = provenance.run_for(messages[index - 1].id)
            prev_run = prev.run_id if prev else None
        run_id = run.run_id if run else None
        rows.append(
            TimelineRow(
                index=index,
                message=message,
                run=run,
                cell=provenance.cell_for(message.id) if provenance is not None else None,
                new_run=run_id is not None and run_id != prev_run,
            )
        )
        prev_run, prev_index = run_id, index
    return rows


def _preview(message: RoledMessage, limit: int = 110) -> str:
    if isinstance(message, ActionRequest):
        text = message.text
    else:
        try:
            text = message.text
        except NotImplementedError:
            text = ""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _duration(ms: float | None) -> str:
    if ms is None:
        return "…"
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.2f} s"


def run_label(run: RunRecord) -> str:
    status = "" if run.status == "ok" else f" · {run.status}"
    return f"{run.operation} · {_duration(run.duration_ms)}{status}"


def row_summary_html(row: TimelineRow) -> str:
    """One collapsed line: index, role, preview, usage, run, cell, time."""
    msg = row.message
    role = str(msg.role)
    parts = [
        f'<span class="lion-tl-idx">#{row.index}</span>',
        f'<span class="lion-role">{_e(label(role))}</span>',
    ]
    if role == "action_response" and getattr(msg, "is_error", False):
        parts.append('<span class="lion-status lion-error-badge">error</span>')
    parts.append(f'<span class="lion-tl-preview">{_e(_preview(msg))}</span>')
    usage = format_usage(row.usage)
    if usage:
        parts.append(f'<span class="lion-usage">{_e(usage)}</span>')
    if row.run is not None:
        parts.append(
            f'<span class="lion-tl-run" title="run {_e(row.run.run_id)}">'
            f"{_e(row.run.operation)}</span>"
        )
    if row.cell is not None:
        parts.append(f'<span class="lion-tl-cell" title="notebook cell">In [{row.cell}]</span>')
    parts.append(
        f'<time class="lion-time" datetime="{_e(msg.created_at.isoformat())}">'
        f"{_e(format_time(msg.created_at, short=True))}</time>"
    )
    head = ""
    if row.new_run and row.run is not None:
        head = (
            f'<div class="lion-tl-runhead">▶ run {_e(run_label(row.run))}'
            f"{_e(' · ' + format_usage(_run_usage(row.run))) if _run_usage(row.run) else ''}"
            "</div>"
        )
    return (
        f'{head}<div class="lion-tl-row lion-{_e(role)}" data-index="{row.index}" '
        f'data-id="{_e(msg.id)}">{"".join(parts)}</div>'
    )


def _run_usage(run: RunRecord) -> dict[str, Any]:
    return {
        k: v
        for k in ("input_tokens", "output_tokens", "total_cost_usd")
        if (v := getattr(run, k)) is not None
    }


def row_detail_html(
    row: TimelineRow, messages: Sequence[RoledMessage] | Any, *, cli: bool = False
) -> str:
    """The expanded row: the message card, what the model saw, provenance, metadata."""
    msg = row.message
    parts = [message_html(msg)]
    payload = turn_payload(messages, row.index, cli=cli)
    if payload is not None:
        text, note = payload_json(payload)
        count = len(payload.get("messages", ())) if "messages" in payload else 1
        what = (
            "sent with this instruction"
            if isinstance(msg, Instruction)
            else "that produced this message"
        )
        parts.append(
            f'<details class="lion-payload"><summary>What the model saw — the request {what} '
            f"({count:,} message{'s' if count != 1 else ''})</summary>"
            + (f'<div class="lion-meta">{_e(note)}</div>' if note else "")
            + f'<pre class="lion-json">{_e(text)}</pre></details>'
        )
    facts = [("id", str(msg.id)), ("created", format_time(msg.created_at))]
    if row.run is not None:
        facts.append(("run", f"{run_label(row.run)} ({row.run.run_id})"))
    if row.cell is not None:
        facts.append(("cell", f"In [{row.cell}]"))
    if msg.metadata:
        meta = json.dumps(msg.metadata, indent=2, ensure_ascii=False, default=str)
        facts.append(("metadata", meta))
    rows = "".join(
        f'<tr><th>{_e(k)}</th><td><pre class="lion-json">{_e(v)}</pre></td></tr>'
        if k == "metadata"
        else f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>"
        for k, v in facts
    )
    parts.append(f'<table class="lion-facts">{rows}</table>')
    return f'<div class="lion-tl-detail">{"".join(parts)}</div>'


# ----- whole-branch summary --------------------------------------------------------------------
def branch_totals(
    messages: Sequence[RoledMessage] | Any, base: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Counts per role and summed usage, added onto ``base`` (totals of earlier messages)."""
    roles: dict[str, int] = dict(base["roles"]) if base else {}
    usage: dict[str, Any] = dict(base["usage"]) if base else {}
    for msg in messages:
        roles[msg.role] = roles.get(msg.role, 0) + 1
        if msg.role == "assistant":
            for key, value in (msg.metadata.get("usage") or {}).items():
                if isinstance(value, int | float) and not isinstance(value, bool):
                    usage[key] = usage.get(key, 0) + value
    return {"roles": roles, "usage": usage}


class TotalsCache:
    """``branch_totals`` kept up to date by adding only the messages recorded since the last
    call (a live branch grows at its end); recomputed whole if the history changed."""

    __slots__ = ("_count", "_last", "_totals")

    def __init__(self) -> None:
        self._count = 0
        self._last: Any = None
        self._totals: dict[str, Any] = {"roles": {}, "usage": {}}

    def get(self, messages: Sequence[RoledMessage] | Any) -> dict[str, Any]:
        n = len(messages)
        order = messages.progression if hasattr(messages, "progression") else None
        grew = 0 < self._count <= n and order is not None and order[self._count - 1] == self._last
        if grew:
            self._totals = branch_totals(messages[self._count : n], self._totals)
        elif n != self._count or self._count == 0:
            self._totals = branch_totals(messages)
        self._count = n
        self._last = order[n - 1] if order is not None and n else None
        return self._totals


def header_html(title: str, total: int, totals: dict[str, Any], runs: int) -> str:
    roles = ", ".join(f"{n:,} {label(r).lower()}" for r, n in totals["roles"].items())
    usage = format_usage(totals["usage"])
    bits = [f"{total:,} message{'s' if total != 1 else ''}"]
    if roles:
        bits.append(roles)
    if runs:
        bits.append(f"{runs} run{'s' if runs != 1 else ''}")
    if usage:
        bits.append(usage)
    return (
        f'<div class="lion-tl-header"><span class="lion-tl-title">{_e(title)}</span> '
        f'<span class="lion-meta">{_e(" · ".join(bits))}</span></div>'
    )


def runs_html(provenance: Provenance | None, *, limit: int = 200) -> str:
    """The run log as a table (latest ``limit`` runs)."""
    if provenance is None or not provenance.runs:
        return '<div class="lion-meta">No runs observed yet.</div>'
    rows = []
    for run in provenance.runs[-limit:]:
        cell = f"In [{run.cell}]" if run.cell is not None else ""
        rows.append(
            f'<tr class="lion-run-{_e(run.status)}"><td>{_e(run.operation)}</td>'
            f"<td>{_e(format_time(_dt(run.started_at), short=True))}</td>"
            f"<td>{_e(_duration(run.duration_ms))}</td><td>{_e(run.status)}</td>"
            f"<td>{_e(format_usage(_run_usage(run)))}</td><td>{len(run.message_ids)}</td>"
            f"<td>{_e(cell)}</td><td>{_e(run.error or '')}</td></tr>"
        )
    head = (
        "<tr><th>operation</th><th>started</th><th>duration</th><th>status</th>"
        "<th>usage</th><th>messages</th><th>cell</th><th>error</th></tr>"
    )
    return f'<table class="lion-runs">{head}{"".join(rows)}</table>'


def _dt(epoch: float) -> Any:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(epoch, UTC)


def static_html(
    title: str,
    messages: Sequence[RoledMessage] | Any,
    start: int,
    stop: int,
    provenance: Provenance | None,
    turn: NextTurn | None,
    totals: dict[str, Any] | None = None,
) -> str:
    """The inspector without a kernel (saved notebooks): summary, next turn, run log and the
    messages of the current page as cards."""
    from lion_nb.render.html import transcript_html

    total = len(messages)
    runs = len(provenance.runs) if provenance is not None else 0
    totals = totals if totals is not None else branch_totals(messages)
    parts = [header_html(title, total, totals, runs)]
    if turn is not None:
        parts.append(next_turn_html(turn))
    if runs:
        parts.append(
            f'<details class="lion-tl-runs"><summary>Runs ({runs})</summary>'
            f"{runs_html(provenance)}</details>"
        )
    if total:
        shown = f"messages {start + 1:,}–{stop:,} of {total:,}"
        parts.append(f'<div class="lion-meta">{_e(shown)}</div>')
    parts.append(transcript_html(messages[start:stop]))
    return f'<div class="lion-view lion-inspector">{"".join(parts)}</div>'
