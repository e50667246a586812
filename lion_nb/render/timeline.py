"""The progression inspector as HTML: a timeline row's summary line and its expanded detail
(the card, what the model saw from ``render.turns``, provenance), the heading with totals, the
run log, and the static fallback. The rows, pages and totals come from
``viewmodels.timeline``. Model and tool text reaches HTML only through ``render.escape`` or the
render layer's ``message_html`` (Markdown via markdown-it + nh3).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from lion_nb.messages import Instruction, RoledMessage
from lion_nb.provenance import Provenance, RunRecord
from lion_nb.render.escape import escape
from lion_nb.render.html import message_html, replayed_badge_html, transcript_html
from lion_nb.render.preview import plain_preview
from lion_nb.render.text import format_time, format_usage, label, unpriced_note
from lion_nb.render.turns import next_turn_html, payload_json, turn_payload
from lion_nb.viewmodels.timeline import TimelineRow, branch_totals, run_usage

if TYPE_CHECKING:
    from lion_nb.tokens import NextTurn

__all__ = [
    "ROWS_FRAME_HTML",
    "RUNS_FRAME_HTML",
    "header_html",
    "replayed_text",
    "row_classes",
    "row_detail_html",
    "row_item_html",
    "row_summary_html",
    "run_label",
    "run_row_html",
    "runs_frame_html",
    "runs_html",
    "runs_summary_html",
    "runs_title",
    "static_html",
]


# ----- rows ------------------------------------------------------------------------------------
RUNS_LIMIT = 200  # the run log lists the latest this many runs
_MARKDOWN_ROLES = ("user", "assistant", "system")  # text read as Markdown (cards render it so)


def _preview(message: RoledMessage, limit: int = 110) -> str:
    """One line of the message as a reader sees it: Markdown turned to plain text."""
    try:
        text = str(message.text)
    except NotImplementedError:
        text = ""
    if str(message.role) in _MARKDOWN_ROLES:
        return plain_preview(text, limit)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def replayed_text(note: Any) -> str:
    """Where a replayed message came from: "replayed from {cassette}, call {call} (line
    {line}), recorded {recorded_at}" (the parts the cassette's note has)."""
    note = note if isinstance(note, dict) else {}
    text = "replayed from " + str(note.get("cassette") or "a cassette")
    if note.get("call") not in (None, ""):
        text += f", call {note['call']}"
    if note.get("line") not in (None, ""):
        text += f" (line {note['line']})"
    if note.get("recorded_at"):
        text += f", recorded {note['recorded_at']}"
    return text


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
        f'<span class="lion-role">{escape(label(role))}</span>',
    ]
    if role == "action_response" and getattr(msg, "is_error", False):
        parts.append('<span class="lion-status lion-error-badge">error</span>')
    parts.append(f'<span class="lion-tl-preview">{escape(_preview(msg))}</span>')
    replayed = msg.metadata.get("replayed")
    if replayed is not None:
        parts.append(replayed_badge_html(replayed))
    usage = format_usage(row.usage)
    if usage:
        parts.append(f'<span class="lion-usage">{escape(usage)}</span>')
    if row.run is not None:
        parts.append(
            f'<span class="lion-tl-run" title="run {escape(row.run.run_id)}">'
            f"{escape(row.run.operation)}</span>"
        )
    if row.cell is not None:
        parts.append(f'<span class="lion-tl-cell" title="notebook cell">In [{row.cell}]</span>')
    parts.append(
        f'<time class="lion-time" datetime="{escape(msg.created_at.isoformat())}">'
        f"{escape(format_time(msg.created_at, short=True))}</time>"
    )
    head = ""
    if row.new_run and row.run is not None:
        head = (
            f'<div class="lion-tl-runhead">▶ run {escape(run_label(row.run))}'
            f"{escape(' · ' + format_usage(run_usage(row.run))) if run_usage(row.run) else ''}"
            "</div>"
        )
    return (
        f'{head}<div class="lion-tl-row lion-{escape(role)}" data-index="{row.index}" '
        f'data-id="{escape(msg.id)}">{"".join(parts)}</div>'
    )


def row_classes(expanded: bool) -> str:
    """The classes of a row's box (``row_item_html``): open while expanded."""
    return "lion-tl-item lion-tl-open" if expanded else "lion-tl-item"


def row_item_html(index: int, summary: str, *, expanded: bool = False) -> str:
    """A row on the front end: its line (the page adds the expand control before the summary
    and "Fork here" after it) and the box its detail goes in, when expanded (a nested part)."""
    return (
        f'<div class="{row_classes(expanded)}" data-index="{index}">'
        f'<div class="lion-tl-line"><div class="lion-tl-summary">{summary}</div></div>'
        '<div class="lion-tl-more" data-parts></div></div>'
    )


# the inspector's boxes on the front end: the run log (its title and table are nested parts,
# so an open log stays open while they change) and the rows (the page puts its pager first)
RUNS_FRAME_HTML = '<details class="lion-tl-runs" data-parts></details>'
ROWS_FRAME_HTML = (
    '<div class="lion-tl-body"><div class="lion-tl-pager-slot"></div>'
    '<div class="lion-tl-rows" data-parts></div></div>'
)


def runs_summary_html(runs: int, untracked: int = 0) -> str:
    """The run log's title, in its ``<details>``."""
    return f"<summary>{escape(runs_title(runs, untracked))}</summary>"


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
            + (f'<div class="lion-meta">{escape(note)}</div>' if note else "")
            + f'<pre class="lion-json">{escape(text)}</pre></details>'
        )
    facts = [("id", str(msg.id)), ("created", format_time(msg.created_at))]
    if msg.metadata.get("replayed") is not None:
        facts.append(("replayed", replayed_text(msg.metadata["replayed"])))
    if row.run is not None:
        facts.append(("run", f"{run_label(row.run)} ({row.run.run_id})"))
    if row.cell is not None:
        facts.append(("cell", f"In [{row.cell}]"))
    if msg.metadata:
        meta = json.dumps(msg.metadata, indent=2, ensure_ascii=False, default=str)
        facts.append(("metadata", meta))
    rows = "".join(
        f'<tr><th>{escape(k)}</th><td><pre class="lion-json">{escape(v)}</pre></td></tr>'
        if k == "metadata"
        else f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>"
        for k, v in facts
    )
    parts.append(f'<table class="lion-facts">{rows}</table>')
    return f'<div class="lion-tl-detail" data-index="{row.index}">{"".join(parts)}</div>'


def header_html(title: str, total: int, totals: dict[str, Any], runs: int) -> str:
    roles = ", ".join(f"{n:,} {label(r).lower()}" for r, n in totals["roles"].items())
    usage = format_usage(totals["usage"])
    if "total_cost_usd" in totals["usage"]:
        usage += unpriced_note(totals.get("unpriced", 0), "reply")
    bits = [f"{total:,} message{'s' if total != 1 else ''}"]
    if roles:
        bits.append(roles)
    if runs:
        bits.append(f"{runs} run{'s' if runs != 1 else ''}")
    if usage:
        bits.append(usage)
    return (
        f'<div class="lion-tl-header"><span class="lion-tl-title">{escape(title)}</span> '
        f'<span class="lion-meta">{escape(" · ".join(bits))}</span></div>'
    )


def runs_title(runs: int, untracked: int = 0) -> str:
    """The run log's title: "Runs (3)", or what came before run tracking started
    (``untracked``: messages recorded before the first observed run)."""
    if not untracked:
        return f"Runs ({runs})"
    earlier = f"{untracked:,} message{'s' if untracked != 1 else ''} came before run tracking"
    return f"Runs: none observed — {earlier}" if not runs else f"Runs ({runs}) · {earlier}"


def _untracked_note(untracked: int, runs: int) -> str:
    which = "The first" if runs else "The branch's"
    return (
        f"{which} {untracked:,} message{'s' if untracked != 1 else ''} came before run "
        "tracking started for this branch, so their runs are not listed (the inspector starts "
        "it when it opens; call lion_nb.provenance.provenance_of(branch) before the first run "
        "to record every run)."
    )


_RUNS_HEAD = (
    "<tr><th>operation</th><th>started</th><th>duration</th><th>status</th>"
    "<th>usage</th><th>messages</th><th>cell</th><th>error</th></tr>"
)


def run_row_html(run: RunRecord) -> str:
    """One run of the run log: a table row."""
    cell = f"In [{run.cell}]" if run.cell is not None else ""
    return (
        f'<tr class="lion-run-{escape(run.status)}"><td>{escape(run.operation)}</td>'
        f"<td>{escape(format_time(_dt(run.started_at), short=True))}</td>"
        f"<td>{escape(_duration(run.duration_ms))}</td><td>{escape(run.status)}</td>"
        f"<td>{escape(format_usage(run_usage(run)))}</td><td>{len(run.message_ids)}</td>"
        f"<td>{escape(cell)}</td><td>{escape(run.error or '')}</td></tr>"
    )


def _runs_note(runs: int, untracked: int) -> str:
    if not untracked:
        return ""
    text = escape(_untracked_note(untracked, runs))
    return f'<div class="lion-meta lion-tl-untracked">{text}</div>'


def runs_html(provenance: Provenance | None, *, limit: int = RUNS_LIMIT, untracked: int = 0) -> str:
    """The run log as a table (latest ``limit`` runs), and a note when ``untracked`` messages
    came before run tracking started."""
    runs = provenance.runs if provenance is not None else []
    note = _runs_note(len(runs), untracked)
    if not runs:
        return note or '<div class="lion-meta">No runs observed yet.</div>'
    rows = "".join(run_row_html(run) for run in runs[-limit:])
    return f'{note}<table class="lion-runs">{_RUNS_HEAD}{rows}</table>'


def runs_frame_html(runs: int, untracked: int = 0) -> str:
    """The run log's body on the front end: the note, and the table whose rows
    (``run_row_html``) are nested parts, each sent once and again only when its run changed."""
    note = _runs_note(runs, untracked)
    if not runs:
        note = note or '<div class="lion-meta">No runs observed yet.</div>'
        return f'<div class="lion-tl-runs-body">{note}</div>'
    return (
        f'<div class="lion-tl-runs-body">{note}<table class="lion-runs"><thead>{_RUNS_HEAD}'
        "</thead><tbody data-parts></tbody></table></div>"
    )


def _dt(epoch: float) -> Any:
    return datetime.fromtimestamp(epoch, UTC)


def static_html(
    title: str,
    messages: Sequence[RoledMessage] | Any,
    start: int,
    stop: int,
    provenance: Provenance | None,
    turn: NextTurn | None,
    totals: dict[str, Any] | None = None,
    untracked: int = 0,
) -> str:
    """The inspector without a kernel (saved notebooks): summary, next turn, run log and the
    messages of the current page as cards (``untracked``: messages from before run tracking
    started, as ``runs_title`` says)."""
    total = len(messages)
    runs = len(provenance.runs) if provenance is not None else 0
    totals = totals if totals is not None else branch_totals(messages)
    parts = [header_html(title, total, totals, runs)]
    if turn is not None:
        parts.append(next_turn_html(turn))
    if runs or untracked:
        parts.append(
            f'<details class="lion-tl-runs"><summary>{escape(runs_title(runs, untracked))}'
            f"</summary>{runs_html(provenance, untracked=untracked)}</details>"
        )
    if total:
        shown = f"messages {start + 1:,}–{stop:,} of {total:,}"
        parts.append(f'<div class="lion-meta">{escape(shown)}</div>')
    parts.append(transcript_html(messages[start:stop]))
    return f'<div class="lion-view lion-inspector">{"".join(parts)}</div>'
