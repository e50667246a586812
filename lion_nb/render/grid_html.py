"""A grid of prompts × columns as HTML and text, from ``viewmodels.grid`` values (pure).

The static table (``grid_html``: the saved notebook's fallback) and the live view's pieces
(``GridView``: the frame, the column head, one row per prompt, one cell per column, the column
summaries) are the same markup, so a saved notebook shows what the view showed::

    <table class="lion-grid-table" role="grid" aria-label="…">
      <tr class="lion-grid-cols"><th>Prompt</th><th scope="col" data-col="0">gpt-4.1 …</th>…
      <tr class="lion-grid-row" data-row="1"><th scope="row">2. What is …</th>
        <td class="lion-grid-cell lion-grid-done" data-key="c1-0" aria-label="Row 2, gpt-4.1:
          done, 1.2 s"><div class="lion-grid-text lion-body">…</div>
          <div class="lion-grid-figs" data-slot="tools">done · 120 tokens · …</div></td>…
        <td class="lion-grid-sum">mean 1.2 s · $0.0042 · 1 failed</td></tr>
      <tr class="lion-grid-sums">…one summary per column…</tr>
    </table>

A cell shows the start of its reply, at most ``limit`` characters (cut at a word, "…"), its full
length noted under it; the full text is one step away (the view's "Full text", or the cell's
branch). Every piece of text goes through the one ``escape``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from lion_nb.render.escape import escape
from lion_nb.usage import format_cost

if TYPE_CHECKING:
    from lion_nb.viewmodels.grid import CellView, DiffOp, GridSnapshot, Summary

__all__ = [
    "CELL_CHARS",
    "cell_html",
    "cell_name",
    "cell_tail_html",
    "cell_text",
    "columns_html",
    "detail_html",
    "diff_html",
    "figures_html",
    "figures_text",
    "format_ms",
    "frame_html",
    "gap_html",
    "grid_html",
    "grid_text",
    "row_head_html",
    "row_html",
    "shorten",
    "sum_cell_html",
    "summary_text",
    "sums_html",
]

CELL_CHARS = 480  # a cell shows at most this much of its reply; the rest is on demand
PROMPT_CHARS = 160  # a row's prompt, in its head


def format_ms(ms: float | None) -> str:
    """``"1.2 s"``; under a second ``"340 ms"``; "" when unknown."""
    if ms is None:
        return ""
    if ms < 1000:
        return f"{ms:.0f} ms"
    return f"{ms / 1000:.1f} s"


def shorten(text: str, limit: int = CELL_CHARS) -> tuple[str, bool]:
    """The start of ``text`` up to ``limit`` characters, cut after a word when one ends in the
    last fifth; whether it was cut."""
    if len(text) <= limit:
        return text, False
    cut = text[:limit]
    space = max(cut.rfind(" "), cut.rfind("\n"))
    if space > limit * 4 // 5:
        cut = cut[:space]
    return cut.rstrip(), True


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def figures_text(cell: CellView, *, limit: int = CELL_CHARS) -> str:
    """What a cell says under its text: status, tokens, cost, first token, tokens/s, time (in
    whole seconds while it runs); its length when the cell shows only its start."""
    parts: list[str] = [cell.status]
    if cell.output_tokens is not None:
        parts.append(_plural(cell.output_tokens, "token"))
    if cell.cost_usd is not None:
        parts.append(format_cost(cell.cost_usd))
    if cell.first_token_ms is not None:
        parts.append(f"first token {format_ms(cell.first_token_ms)}")
    if cell.tokens_per_s is not None:
        parts.append(f"{cell.tokens_per_s:.0f} tok/s")
    if cell.latency_ms is not None and cell.status == "running":
        parts.append(f"{cell.latency_ms // 1000:.0f} s")  # whole seconds: one change a second
    elif cell.latency_ms is not None:
        parts.append(format_ms(cell.latency_ms))
    if len(cell.text) > limit and cell.status != "running":
        parts.append(_plural(len(cell.text), "character"))
    if cell.attempt:
        parts.append(f"run {cell.attempt + 1}")
    return " · ".join(parts)


def figures_html(cell: CellView, *, limit: int = CELL_CHARS) -> str:
    """The figures line's content (the cell's ``tools`` slot)."""
    html_ = escape(figures_text(cell, limit=limit))
    if cell.error:
        html_ += f'<div class="lion-grid-error">{escape(cell.error)}</div>'
    return html_


def cell_name(cell: CellView) -> str:
    """What a screen reader says of a cell: ``"Row 2, gpt-4.1-mini: done, 1.2 s"``."""
    said = f"Row {cell.row + 1}, {cell.label}: {cell.status}"
    if cell.status == "done" and cell.latency_ms is not None:
        said += f", {format_ms(cell.latency_ms)}"
    elif cell.status == "failed" and cell.error:
        said += f", {cell.error}"
    return said


def cell_tail_html(text: str) -> str:
    """The cell's text slots: nothing rendered (``frozen``), the text in the growing tail."""
    return (
        '<span data-slot="frozen"></span>'
        f'<span data-slot="tail"><span class="lion-tail-text">{escape(text)}</span></span>'
    )


def cell_text(cell: CellView, limit: int = CELL_CHARS) -> str:
    """The text a cell shows: all of it while it runs (the box shows its end as it grows),
    then its start, "…" where it was cut."""
    if cell.status == "running":
        return cell.text
    shown, cut = shorten(cell.text, limit)
    return shown + " …" if cut else shown


def cell_html(cell: CellView, *, limit: int = CELL_CHARS, baseline: bool = False) -> str:
    shown = cell_text(cell, limit)
    classes = f"lion-grid-cell lion-grid-{cell.status}" + (" lion-grid-base" if baseline else "")
    return (
        f'<td class="{classes}" data-key="{cell.key}" data-row="{cell.row}" '
        f'data-col="{cell.column}" role="gridcell" aria-label="{escape(cell_name(cell))}">'
        f'<div class="lion-grid-text lion-body">{cell_tail_html(shown)}</div>'
        f'<div class="lion-grid-figs" data-slot="tools">{figures_html(cell, limit=limit)}</div>'
        "</td>"
    )


def summary_text(summary: Summary) -> str:
    """``"3 of 4 done · mean 1.2 s · $0.0042 · 1 failed"``."""
    parts = [f"{summary.done} of {summary.cells} done"]
    if summary.running:
        parts.append(f"{summary.running} running")
    if summary.mean_latency_ms is not None:
        parts.append(f"mean {format_ms(summary.mean_latency_ms)}")
    if summary.cost_usd is not None:
        cost = format_cost(summary.cost_usd)
        if summary.unpriced:
            cost += f" + {summary.unpriced} unpriced"
        parts.append(cost)
    if summary.failed:
        parts.append(f"{summary.failed} failed")
    if summary.stopped:
        parts.append(f"{summary.stopped} stopped")
    return " · ".join(parts)


def row_head_html(index: int, prompt: str) -> str:
    shown, cut = shorten(prompt, PROMPT_CHARS)
    return (
        f'<th scope="row" class="lion-grid-prompt" data-row="{index}" title="{escape(prompt)}">'
        f'<span class="lion-grid-n">{index + 1}.</span> '
        f'<span class="lion-grid-ptext">{escape(shown)}{" …" if cut else ""}</span></th>'
    )


def sum_cell_html(summary: Summary, tag: str = "td") -> str:
    return f'<{tag} class="lion-grid-sum">{escape(summary_text(summary))}</{tag}>'


def row_html(
    index: int,
    prompt: str,
    cells: Sequence[CellView],
    summary: Summary,
    *,
    baseline: int = 0,
    limit: int = CELL_CHARS,
    nested: bool = False,
) -> str:
    """Row ``index``: its prompt, its cells, its summary. ``nested``: the live view's row, an
    empty ``data-parts`` box: its head (``row_head_html``), cells and summary are parts."""
    if nested:  # its head, cells and summary are parts of their own (the page orders them)
        return f'<tr class="lion-grid-row" data-row="{index}" data-parts=""></tr>'
    body = "".join(cell_html(c, limit=limit, baseline=c.column == baseline) for c in cells)
    return (
        f'<tr class="lion-grid-row" data-row="{index}">{row_head_html(index, prompt)}'
        f"{body}{sum_cell_html(summary)}</tr>"
    )


def columns_html(labels: Sequence[str], baseline: int) -> str:
    heads = "".join(
        f'<th scope="col" class="lion-grid-col{" lion-grid-base" if j == baseline else ""}" '
        f'data-col="{j}">{escape(label)}'
        + (' <span class="lion-grid-basemark">baseline</span>' if j == baseline else "")
        + "</th>"
        for j, label in enumerate(labels)
    )
    return (
        '<tr class="lion-grid-cols"><th scope="col" class="lion-grid-corner">Prompt</th>'
        f'{heads}<th scope="col" class="lion-grid-sumhead">Row summary</th></tr>'
    )


def sums_html(columns: Sequence[Summary], total: Summary) -> str:
    cells = "".join(sum_cell_html(s) for s in columns)
    return (
        '<tr class="lion-grid-sums"><th scope="row" class="lion-grid-prompt">Column summary</th>'
        f"{cells}{sum_cell_html(total)}</tr>"
    )


def gap_html(rows: int, columns: int) -> str:
    """Rows not on the page (a large grid shows the rows in view): their height, kept. It
    spans exactly the table's columns (the prompt, ``columns``, the row summary): a wider
    span would add empty columns to the fixed table layout, which would take the width."""
    return (
        f'<tr class="lion-grid-gap" aria-hidden="true" data-rows="{rows}">'
        f'<td colspan="{columns + 2}" style="height:calc({rows} * var(--lion-grid-row))"></td></tr>'
    )


def frame_html(title: str, rows: int, columns: int) -> str:
    """The live view's table: its rows are parts of their own, inside ``data-parts``."""
    return (
        f'<div class="lion-grid-frame" data-rows="{rows}" data-cols="{columns}">'
        f'<table class="lion-grid-table" role="grid" aria-label="{escape(title)}" '
        f'aria-rowcount="{rows + 2}" aria-colcount="{columns + 2}"><tbody data-parts="">'
        "</tbody></table></div>"
    )


def diff_html(pieces: Sequence[tuple[DiffOp, str]]) -> str:
    """A word diff: words only in the cell ``<ins>``, only in the baseline ``<del>``."""
    out = []
    for op, text in pieces:
        if op == "added":
            out.append(f'<ins class="lion-grid-ins">{escape(text)}</ins>')
        elif op == "removed":
            out.append(f'<del class="lion-grid-del">{escape(text)}</del>')
        else:
            out.append(escape(text))
    return "".join(out)


def detail_html(
    cell: CellView,
    prompt: str,
    *,
    what: str,
    diff: Sequence[tuple[DiffOp, str]] | None = None,
    baseline_label: str = "",
) -> str:
    """The panel under the grid: a cell's full text, or its diff against the baseline."""
    head = f"Row {cell.row + 1}, {cell.label}"
    if what == "diff" and diff is not None:
        title = f"{head} against {baseline_label} (baseline)"
        legend = (
            '<div class="lion-grid-legend"><ins class="lion-grid-ins">only here</ins> '
            f'<del class="lion-grid-del">only in {escape(baseline_label)}</del></div>'
        )
        body = f'<div class="lion-grid-full lion-grid-diff">{diff_html(diff)}</div>'
    else:
        title = f"{head}: full text ({_plural(len(cell.text), 'character')})"
        legend = ""
        body = f'<div class="lion-grid-full">{escape(cell.text)}</div>'
    return (
        f'<div class="lion-grid-detail" role="region" aria-label="{escape(title)}" '
        f'data-key="{cell.key}" data-what="{escape(what)}">'
        f'<div class="lion-grid-dtitle">{escape(title)}</div>'
        f'<div class="lion-grid-dprompt">{escape(prompt)}</div>{legend}{body}</div>'
    )


def grid_html(snapshot: GridSnapshot, *, limit: int = CELL_CHARS) -> str:
    """The whole grid as one static table (a saved notebook's output)."""
    rows = "".join(
        row_html(
            i, prompt, snapshot.cells[i], snapshot.rows[i], baseline=snapshot.baseline, limit=limit
        )
        for i, prompt in enumerate(snapshot.prompts)
    )
    return (
        '<div class="lion-view lion-static lion-grid-view">'
        f'<div class="lion-title">{escape(snapshot.title)}</div>'
        f'<div class="lion-grid-frame"><table class="lion-grid-table" aria-label="{escape(snapshot.title)}">'
        f"<tbody>{columns_html(snapshot.labels, snapshot.baseline)}{rows}"
        f"{sums_html(snapshot.columns, snapshot.total)}</tbody></table></div>"
        f'<div class="lion-view-statusline">{escape(summary_text(snapshot.total))}</div></div>'
    )


def grid_text(snapshot: GridSnapshot, *, limit: int = 120) -> str:
    """The grid as plain text: one block per prompt, a line per column."""
    lines = [snapshot.title]
    for i, prompt in enumerate(snapshot.prompts):
        lines.append(f"{i + 1}. {shorten(prompt, limit)[0]}")
        for cell in snapshot.cells[i]:
            text, cut = shorten(" ".join(cell.text.split()), limit)
            lines.append(f"   {cell.label}: {text}{' …' if cut else ''} [{figures_text(cell)}]")
    lines.append(summary_text(snapshot.total))
    return "\n".join(lines)
