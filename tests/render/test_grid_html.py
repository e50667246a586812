"""``render.grid_html``: the grid as a static table (a saved notebook's copy) and the live
view's pieces, from view-model values: escaped, shortened, figures and names in words."""

from __future__ import annotations

import re
from html import unescape

import pytest

from lion_nb.render import grid_html as gh
from lion_nb.viewmodels.grid import CellView, GridSnapshot, summarize
from tests.support.html_safety import CORPUS, html_problems

# the inert attributes the grid's markup carries (names, keys, table semantics)
GRID_ATTRS = frozenset(
    {
        "aria-label",
        "aria-hidden",
        "aria-rowcount",
        "aria-colcount",
        "role",
        "scope",
        "colspan",
        "data-key",
        "data-row",
        "data-col",
        "data-rows",
        "data-cols",
        "data-slot",
        "data-parts",
        "data-what",
    }
)


def cell(
    row: int = 0,
    column: int = 0,
    *,
    label: str = "gpt-4.1-mini",
    status: str = "done",
    text: str = "Blue.",
    **figures: object,
) -> CellView:
    values: dict[str, object] = {
        "output_tokens": None,
        "cost_usd": None,
        "latency_ms": None,
        "first_token_ms": None,
        "tokens_per_s": None,
        "error": None,
        "attempt": 0,
    }
    values.update(figures)
    return CellView(row, column, label, status, text, **values)  # type: ignore[arg-type]


def snapshot(cells: list[list[CellView]], prompts: list[str], labels: list[str]) -> GridSnapshot:
    return GridSnapshot(
        title="Grid · test",
        labels=tuple(labels),
        prompts=tuple(prompts),
        baseline=0,
        cells=tuple(tuple(r) for r in cells),
        rows=tuple(summarize(r) for r in cells),
        columns=tuple(summarize(r[j] for r in cells) for j in range(len(labels))),
        total=summarize(c for r in cells for c in r),
        running=False,
    )


def test_a_cell_is_named_as_a_screen_reader_reads_it() -> None:
    assert gh.cell_name(cell(1, 0, latency_ms=1234.0)) == "Row 2, gpt-4.1-mini: done, 1.2 s"
    assert gh.cell_name(cell(0, 0, status="running")) == "Row 1, gpt-4.1-mini: running"
    failed = cell(2, 0, status="failed", error="the server is down")
    assert gh.cell_name(failed) == "Row 3, gpt-4.1-mini: failed, the server is down"
    assert 'aria-label="Row 2, gpt-4.1-mini: done, 1.2 s"' in gh.cell_html(
        cell(1, latency_ms=1234.0)
    )


def test_the_figures_say_tokens_cost_first_token_rate_and_time() -> None:
    done = cell(
        output_tokens=120,
        cost_usd=0.0012,
        first_token_ms=310.0,
        tokens_per_s=45.4,
        latency_ms=2900.0,
    )
    assert gh.figures_text(done) == (
        "done · 120 tokens · $0.0012 · first token 310 ms · 45 tok/s · 2.9 s"
    )
    assert gh.figures_text(cell(status="pending", text="")) == "pending"  # nothing made up
    assert gh.figures_text(cell(attempt=1)) == "done · run 2"


def test_a_long_reply_shows_its_start_and_notes_its_length() -> None:
    text = "word " * 300
    html = gh.cell_html(cell(text=text), limit=100)
    shown = unescape(re.search(r'class="lion-tail-text">([^<]*)<', html).group(1))
    assert len(shown) <= 102 and shown.endswith(" …") and text.startswith(shown[:-2])
    assert "1,500 characters" in html
    assert gh.shorten("short", 10) == ("short", False)
    assert gh.shorten("one two three four", 15) == ("one two three", True)  # after a word
    assert gh.shorten("one two threefour", 12) == ("one two thre", True)  # no word ends late


def test_summaries_say_mean_latency_cost_and_failures() -> None:
    summary = summarize(
        [
            cell(latency_ms=1000.0, cost_usd=0.01),
            cell(latency_ms=2000.0),
            cell(status="failed", text=""),
        ]
    )
    assert gh.summary_text(summary) == "2 of 3 done · mean 1.5 s · $0.0100 + 1 unpriced · 1 failed"


def test_the_static_table_has_prompts_down_columns_across_and_summaries() -> None:
    cells = [
        [
            cell(i, j, label=lab, text=f"reply {i}{j}", latency_ms=100.0 * (i + 1))
            for j, lab in enumerate(["a", "b"])
        ]
        for i in range(3)
    ]
    html = gh.grid_html(snapshot(cells, ["p0", "p1", "p2"], ["a", "b"]))
    assert html.count('<tr class="lion-grid-row"') == 3
    assert html.count('class="lion-grid-cell') == 6
    assert re.findall(r'<th scope="col" class="lion-grid-col[^"]*" data-col="\d">(\w)', html) == [
        "a",
        "b",
    ]
    assert html.index("reply 00") < html.index("reply 01") < html.index("reply 10")
    assert "Column summary" in html and "mean 200 ms" in html  # row 2's mean
    assert html_problems(html, allow=GRID_ATTRS) == []


def test_a_diff_marks_words_only_in_the_cell_and_only_in_the_baseline() -> None:
    html = gh.diff_html([("same", "The "), ("removed", "cat"), ("added", "dog<")])
    assert (
        html == 'The <del class="lion-grid-del">cat</del><ins class="lion-grid-ins">dog&lt;</ins>'
    )
    panel = gh.detail_html(
        cell(text="The dog"),
        "Which pet?",
        what="diff",
        diff=[("same", "The dog")],
        baseline_label="base",
    )
    assert "against base (baseline)" in panel and 'data-what="diff"' in panel


@pytest.mark.parametrize("case", CORPUS, ids=[c["name"] for c in CORPUS])
def test_model_text_prompts_labels_and_errors_are_never_markup(case: dict[str, str]) -> None:
    payload = case["payload"]
    bad = cell(0, 1, label=payload, status="failed", text=f"Start {payload} end", error=payload)
    good = cell(0, 0, label=f"base {payload}", text=payload)
    snap = snapshot([[good, bad]], [f"Prompt {payload}"], [f"base {payload}", payload])
    pieces = [
        gh.grid_html(snap),
        gh.detail_html(bad, payload, what="text"),
        gh.detail_html(
            bad, payload, what="diff", diff=[("added", payload)], baseline_label=payload
        ),
        gh.frame_html(payload, 1, 2),
        gh.row_html(0, payload, (), snap.rows[0], nested=True),
    ]
    for html in pieces:
        assert html_problems(html, allow=GRID_ATTRS) == [], html
    # the payload is the cell's text, as text
    assert "Start" in unescape(re.sub(r"<[^>]+>", "", pieces[0]))


def test_the_gap_for_rows_off_the_page_spans_exactly_the_tables_columns() -> None:
    # a wider span added empty columns to the fixed table layout, which took the width: the
    # model columns of a scrolled large grid collapsed to nothing
    html = gh.gap_html(40, columns=10)
    assert 'colspan="12"' in html  # the prompt, the ten columns, the row summary
    assert "calc(40 * var(--lion-grid-row))" in html
    assert len(re.findall(r"<th\b", gh.columns_html([f"m{j}" for j in range(10)], 0))) == 12
