"""Two branches side by side as HTML: the shared history once (collapsed), then the turns of
``viewmodels.compare.align`` in two columns, differing ones highlighted, with each side's
figures (``SideStats``) and a word diff of changed turns."""

from __future__ import annotations

import difflib

from lion_nb.messages import RoledMessage
from lion_nb.render.escape import escape
from lion_nb.render.html import message_html
from lion_nb.render.text import format_usage, label
from lion_nb.viewmodels.compare import Alignment, SideStats, message_content

__all__ = ["compare_html", "word_diff_html"]


def word_diff_html(old: str, new: str, *, limit: int = 5000) -> str:
    """Word-level diff of two texts as ``<del>``/``<ins>`` spans (escaped)."""
    a, b = old.split()[:limit], new.split()[:limit]
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(escape(" ".join(a[i1:i2])))
            continue
        if i2 > i1:
            out.append(f'<del class="lion-diff-del">{escape(" ".join(a[i1:i2]))}</del>')
        if j2 > j1:
            out.append(f'<ins class="lion-diff-ins">{escape(" ".join(b[j1:j2]))}</ins>')
    return " ".join(out)


def _stats_html(stats: SideStats) -> str:
    bits = [f"{stats.messages} message{'s' if stats.messages != 1 else ''}"]
    usage = format_usage(stats.usage)
    bits.append(usage if usage else "usage not reported")
    bits.append(f"≈{stats.estimated_tokens:,} tokens (estimate)")
    if stats.turns:
        bits.append(f"latency {stats.latency_ms / 1000:.2f} s ({stats.latency_source})")
    return f'<div class="lion-meta lion-compare-stats">{escape(" · ".join(bits))}</div>'


def _cell(message: RoledMessage | None, kind: str, side: str) -> str:
    if message is None:
        return f'<div class="lion-diff-missing lion-compare-{side}" data-kind="{kind}"></div>'
    cls = {
        "same": "lion-diff-same",
        "changed": "lion-diff-changed",
        "added": "lion-diff-added",
        "missing": "lion-diff-removed",
    }[kind]
    return (
        f'<div class="{cls} lion-compare-{side}" data-kind="{kind}">{message_html(message)}</div>'
    )


SAME_WORDS = (
    "Both say the same, word for word, after the shared history: a model at temperature 0 "
    "gives the same reply to the same messages every time. Regenerate at a temperature above "
    "0 (the view offers 0.8) for a different one."
)


def _summary_html(alignment: Alignment) -> str:
    """How many turns differ after the shared history; when none does but there are turns,
    why two alternatives can say the same."""
    n = alignment.differing
    if n == 0 and alignment.rows:
        return f'<div class="lion-meta lion-compare-same">{escape(SAME_WORDS)}</div>'
    return (
        f'<div class="lion-meta">{n} differing turn{"s" if n != 1 else ""} after the shared '
        "history</div>"
    )


def compare_html(
    alignment: Alignment, title_a: str, title_b: str, stats_a: SideStats, stats_b: SideStats
) -> str:
    n = len(alignment.prefix)
    how = {"fork": "forked here", "identical": "identical history", "none": "no shared history"}
    prefix = ""
    if n:
        cards = "".join(message_html(m) for m in alignment.prefix)
        prefix = (
            f'<details class="lion-compare-prefix"><summary>{n} shared message'
            f"{'s' if n != 1 else ''} ({escape(how[alignment.lineage])}), last: "
            f"{escape(label(alignment.prefix[-1].role))}</summary>{cards}</details>"
        )
    summary = _summary_html(alignment)
    cells = [
        f'<div class="lion-compare-head">{escape(title_a)}{_stats_html(stats_a)}</div>',
        f'<div class="lion-compare-head">{escape(title_b)}{_stats_html(stats_b)}</div>',
    ]
    for x, y, kind in alignment.rows:
        cells.append(_cell(x, kind, "a"))
        right = _cell(y, kind, "b")
        if kind == "changed" and x is not None and y is not None:
            diff = word_diff_html(message_content(x)[1], message_content(y)[1])
            right = right[: -len("</div>")] + (
                f'<details class="lion-compare-diff"><summary>word diff</summary>'
                f'<div class="lion-md">{diff}</div></details></div>'
            )
        cells.append(right)
    if not alignment.rows:
        cells.append('<div class="lion-meta">no messages after the shared history</div>')
        cells.append('<div class="lion-meta">no messages after the shared history</div>')
    return (
        f'<div class="lion-view lion-compare-view">{prefix}{summary}'
        f'<div class="lion-compare">{"".join(cells)}</div></div>'
    )
