"""The grid view in JupyterLab + chromium, on the scripted model (a delay per word, so the
streaming is observable): a 4 × 3 grid's cells stream as they run (measured every frame in the
page: visible updates per second and the longest gap, written to
``test-artifacts/grid_view_browser.json``); Stop stops the run and the cells say so; Run again
replaces a cell; Enter on a cell opens its conversation in a live chat view under the grid,
where a message sent continues the cell's branch; the arrow keys move between cells, each
named as a screen reader reads it; the grid reads at WCAG AA in JupyterLab Light and Dark.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.test_theme_contrast_browser import AA, MEASURE, set_theme
from tests.support.front_ends import ARTIFACTS, screenshot
from tests.support.lab_notebooks import (
    kernel_execute,
    run_notebook_in_lab,
    shutdown_kernels,
    write_notebook,
)
from tests.support.page_measure import long_tasks_since, scroll_until, watch_long_tasks

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]

READY = "GRID-" + "SHOWN"


def setup(rows: int, delay: float, words: int) -> str:
    return f"""
import asyncio
import lion_nb
from lion_nb import Grid, iModel

def model(tag, delay):
    def answer(request):
        return {{"text": f"{{tag}} on {{request.messages[-1]['content']}}: "
                 + " ".join(f"word{{k}}" for k in range({words})), "delay": delay}}
    return iModel(provider="scripted", default_reply=answer)

grid = Grid([f"Prompt number {{i}}" for i in range({rows})],
            {{"alpha": model("A", {delay}), "beta": model("B", {delay}), "gamma": model("C", {delay})}},
            name="Test grid")
view = lion_nb.view(grid)
display(view)
print("{READY}")
"""


# per animation frame: the text of every cell (non-space characters), kept when it changes
SAMPLER = """
() => {
  const s = {changes: [], last: -1, done: false};
  window.__gridSampler = s;
  function tick() {
    const cells = document.querySelectorAll('.lion-front.lion-grid td.lion-grid-cell .lion-grid-text');
    let n = 0;
    for (const c of cells) n += c.textContent.replace(/\\s+/g, '').length;
    if (n !== s.last) { if (s.last >= 0) s.changes.push(performance.now()); s.last = n; }
    if (!s.done) requestAnimationFrame(tick);
  }
  requestAnimationFrame(tick);
}
"""

MIN_UPDATES_PER_S = 10.0  # on a busy machine (the view's channel sends at most 15 a second)


@pytest.fixture(autouse=True)
def _no_kernels_left(jupyter_lab):
    yield
    shutdown_kernels(jupyter_lab)
    set_theme(jupyter_lab, "JupyterLab Light")  # the other tests expect the default


def _show(
    page: Any, lab: Any, name: str, *, rows: int = 4, delay: float = 0.02, words: int = 60
) -> Any:
    run_notebook_in_lab(page, lab, write_notebook(lab, name, [setup(rows, delay, words)]))
    page.get_by_text(READY).first.wait_for(timeout=120_000)
    root = page.locator(".lion-front.lion-grid").first
    root.locator("td.lion-grid-cell").first.wait_for(timeout=30_000)
    return root


def _all_done(page: Any, count: int) -> None:
    page.wait_for_function(
        f"() => document.querySelectorAll('.lion-front.lion-grid td.lion-grid-done').length === {count}",
        timeout=120_000,
    )


def _run_in_a_cell(page: Any, lab: Any, root: Any, count: int) -> None:
    """Run the whole grid in a cell and wait for the view the notebook draws anew once the run
    ended (its saved output is refreshed at the end of that cell, or of the next when the run's
    last update went out after it: a second cell makes sure): the test then clicks and types
    into the view that stays, not into one about to go."""
    drawn = root.element_handle()
    kernel_execute(lab, "await grid.run()")
    kernel_execute(lab, "pass")
    page.wait_for_function("(el) => !el.isConnected", arg=drawn, timeout=30_000)
    _all_done(page, count)


def test_cells_stream_as_they_run_and_settle_with_their_figures(page, jupyter_lab):
    root = _show(page, jupyter_lab, "grid_stream.ipynb")
    assert root.locator("td.lion-grid-cell").count() == 12
    page.evaluate(SAMPLER)
    kernel_execute(jupyter_lab, "_run = asyncio.ensure_future(grid.run())")
    root.locator("td.lion-grid-running").first.wait_for(timeout=30_000)
    screenshot(page, "grid_streaming")
    _all_done(page, 12)
    changes = page.evaluate(
        "(() => { window.__gridSampler.done = true; return window.__gridSampler.changes; })()"
    )
    span_s = (changes[-1] - changes[0]) / 1000 if len(changes) > 1 else 0.0
    gaps = [b - a for a, b in itertools.pairwise(changes)]
    kernel = json.loads(
        kernel_execute(
            jupyter_lab,
            "import json; print(json.dumps({'messages': view.channel.messages,"
            " 'bytes': view.channel.sent_bytes,"
            " 'text': sum(len(c.text or '') for c in grid.cells())}))",
        )
    )
    figures = {
        "grid": "4x3, scripted, 0.02 s per word (~50 words/s per cell)",
        "page_updates": len(changes),
        "stream_s": round(span_s, 3),
        "updates_per_s": round(len(changes) / span_s, 1) if span_s > 0 else 0.0,
        "longest_gap_ms": round(max(gaps), 1) if gaps else None,
        "median_gap_ms": round(sorted(gaps)[len(gaps) // 2], 1) if gaps else None,
        "kernel_messages": kernel["messages"],
        "kernel_bytes": kernel["bytes"],
        "reply_chars": kernel["text"],
    }
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "grid_view_browser.json").write_text(json.dumps(figures, indent=2))
    print(json.dumps(figures))
    assert figures["updates_per_s"] >= MIN_UPDATES_PER_S, figures
    # every cell says done with its figures, and is named for a screen reader
    cell = root.get_by_role("gridcell", name=re.compile(r"^Row 2, beta: done, \d"))
    expect(cell).to_have_count(1, timeout=30_000)  # the view may be drawn anew meanwhile
    assert re.search(
        r"done · \d+ tokens · first token", cell.locator(".lion-grid-figs").inner_text()
    )
    assert "4 of 4 done" in root.locator(".lion-grid-sums").inner_text()
    assert "12 of 12 done" in root.locator(".lion-view-statusline").inner_text()
    screenshot(page, "grid_done")
    assert page.watched.console_errors == [], page.watched.console_errors


FOCUSED_KEY = (
    "(el) => el.getRootNode().activeElement?.closest?.('td.lion-grid-cell')?.dataset.key ?? ''"
)


def _focus_stays_on(page: Any, root: Any, key: str) -> None:
    """A button that disabled itself (Stop, Run again) gave the focus to the chosen cell: the
    reader did not leave the view, so its saved output is not refreshed under the next click
    (a refresh makes JupyterLab draw the view anew, the focus lost: CI saw arrow keys go to
    Notebook 7 instead of the grid)."""
    handle = root.element_handle()
    assert handle.evaluate(FOCUSED_KEY) == key, page.evaluate(
        "() => document.activeElement.outerHTML.slice(0, 300)"
    )
    handle.evaluate("(el) => { el.__drawnBefore = true; }")
    page.wait_for_timeout(1500)  # a "leave" would have been answered by now
    assert handle.evaluate("(el) => el.isConnected && el.__drawnBefore === true")
    assert handle.evaluate(FOCUSED_KEY) == key


def test_stop_stops_and_run_again_replaces_a_cell(page, jupyter_lab):
    root = _show(page, jupyter_lab, "grid_stop.ipynb", rows=2, delay=0.1, words=300)
    kernel_execute(jupyter_lab, "_run = asyncio.ensure_future(grid.run())")
    root.locator("td.lion-grid-running").first.wait_for(timeout=30_000)
    page.wait_for_timeout(800)  # some text in
    stop = root.locator(".lion-grid-stop")
    assert stop.is_enabled()
    stop.click()
    page.wait_for_function(
        "() => document.querySelectorAll('.lion-front.lion-grid td.lion-grid-stopped').length === 6",
        timeout=60_000,
    )
    page.wait_for_function(
        "() => document.querySelector('.lion-front.lion-grid .lion-grid-stop').disabled",
        timeout=30_000,
    )
    # Stop disabled itself: the chosen cell has the focus (checked before a cell runs here:
    # a cell's end refreshes the saved output, which draws the view anew)
    _focus_stays_on(page, root, "c0-0")
    statuses = kernel_execute(jupyter_lab, "print(sorted({c.status for c in grid.cells()}))")
    assert statuses.strip() == "['stopped']"
    stopped = root.get_by_role("gridcell", name="Row 1, gamma: stopped")
    expect(stopped).to_have_count(1, timeout=30_000)  # the view may be drawn anew meanwhile
    assert "word" in stopped.locator(".lion-grid-text").inner_text()

    # run one cell again (short replies now): it is replaced, the others stay stopped
    kernel_execute(
        jupyter_lab,
        "grid.cell(0, 2).branch.chat_model.provider.default_reply = "
        "lambda r: {'text': 'A fresh reply.'}",
    )
    stopped.click()
    root.locator(".lion-grid-rerun").click()
    fresh = root.get_by_role("gridcell", name=re.compile(r"^Row 1, gamma: done"))
    fresh.wait_for(timeout=60_000)
    assert "A fresh reply." in fresh.locator(".lion-grid-text").inner_text()
    assert "run 2" in fresh.locator(".lion-grid-figs").inner_text()
    assert root.get_by_role("gridcell", name="Row 1, alpha: stopped").count() == 1
    _focus_stays_on(page, root, "c0-2")
    root.locator("td[data-key='c1-0']").click()  # and the keys still move in this grid
    page.keyboard.press("ArrowRight")
    assert root.element_handle().evaluate(FOCUSED_KEY) == "c1-1"
    attempt = kernel_execute(jupyter_lab, "print(grid[0, 2].attempt, grid[0, 2].text)")
    assert attempt.strip() == "1 A fresh reply."
    screenshot(page, "grid_rerun")
    assert page.watched.console_errors == [], page.watched.console_errors


def test_a_grid_drawn_anew_keeps_the_focused_cell(page, jupyter_lab):
    """A cell that ends refreshes the saved output of a view whose run ended, and JupyterLab
    answers with a new view of the widget in place of the old: a reader who was in one of the
    grid's cells (clicked while it ran) is still there, and the arrow keys still move."""
    root = _show(page, jupyter_lab, "grid_redrawn.ipynb", rows=2, delay=0.05, words=40)
    kernel_execute(jupyter_lab, "_run = asyncio.ensure_future(grid.run())")
    root.locator("td.lion-grid-running").first.wait_for(timeout=30_000)
    root.locator("td[data-key='c1-1']").click()
    _all_done(page, 6)
    old = root.element_handle()
    old.evaluate("(el) => { el.__drawnBefore = true; }")
    assert old.evaluate(FOCUSED_KEY) == "c1-1"
    kernel_execute(jupyter_lab, "pass")  # a cell's end: the saved output is refreshed
    page.wait_for_function("(el) => !el.isConnected", arg=old, timeout=30_000)
    new = page.locator(".lion-front.lion-grid").first
    new.locator("td[data-key='c1-1']").wait_for(timeout=30_000)
    assert new.evaluate("(el) => el.__drawnBefore") is None  # the view drawn anew
    page.wait_for_function("() => document.activeElement?.dataset?.key === 'c1-1'", timeout=10_000)
    page.keyboard.press("ArrowLeft")
    assert new.element_handle().evaluate(FOCUSED_KEY) == "c1-0"
    # a reader who left (the focus to nowhere) is not pulled back by the next drawing anew
    page.evaluate("() => document.activeElement.blur()")
    page.wait_for_timeout(200)
    left = new.element_handle()
    kernel_execute(jupyter_lab, "await grid.run(cells=[(0, 0)])")  # its end: a refresh
    page.wait_for_function("(el) => !el.isConnected", arg=left, timeout=30_000)
    page.locator(".lion-front.lion-grid td[data-key='c1-1']").first.wait_for(timeout=30_000)
    page.wait_for_timeout(1000)
    assert page.evaluate("() => document.activeElement === document.body"), page.evaluate(
        "() => document.activeElement.outerHTML.slice(0, 200)"
    )


def test_keys_move_between_cells_and_enter_opens_a_live_chat_view(page, jupyter_lab):
    root = _show(page, jupyter_lab, "grid_keys.ipynb", rows=3, delay=0.0, words=8)
    _run_in_a_cell(page, jupyter_lab, root, 9)
    table = root.get_by_role("grid", name="Test grid · 3 prompts × 3 columns")
    assert table.count() == 1
    # prompts down, columns across: each row its prompt, then alpha, beta, gamma, its summary
    for r in range(3):
        kinds = root.locator(f"tr.lion-grid-row[data-row='{r}'] > *").evaluate_all(
            "(els) => els.map((e) => e.getAttribute('data-key') || e.className)"
        )
        assert kinds == ["lion-grid-prompt", f"c{r}-0", f"c{r}-1", f"c{r}-2", "lion-grid-sum"]
    first = root.get_by_role("gridcell", name=re.compile(r"^Row 1, alpha: done"))
    first.click()
    assert page.evaluate("document.activeElement.getAttribute('data-key')") == "c0-0"
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowDown")
    name = page.evaluate("document.activeElement.getAttribute('aria-label')")
    assert re.match(r"Row 2, beta: done, \d", name), name
    assert page.evaluate("document.activeElement.tabIndex") == 0
    assert root.locator("td.lion-grid-cell[tabindex='0']").count() == 1  # one tab stop
    assert root.locator(".lion-grid-chosen").inner_text() == "Row 2, beta:"
    page.keyboard.press("End")
    assert page.evaluate("document.activeElement.getAttribute('data-key')") == "c1-2"
    page.keyboard.press("ArrowLeft")

    # the panel: full text and the diff against the baseline
    root.get_by_role("button", name="Diff of row 2, beta against the baseline").click()
    panel = root.locator(".lion-grid-detail")
    panel.wait_for(timeout=30_000)
    assert panel.locator(".lion-grid-diff del.lion-grid-del").first.inner_text() == "A"
    assert panel.locator(".lion-grid-diff ins.lion-grid-ins").first.inner_text() == "B"

    # Enter opens the cell's conversation in a chat view under the grid
    root.locator("td[data-key='c1-1']").focus()
    page.keyboard.press("Enter")
    chat = root.locator(".lion-grid-chat .lion-front.lion-chat")
    chat.wait_for(timeout=30_000)
    chat.locator(".lion-assistant", has_text="B on Prompt number 1").wait_for(timeout=30_000)
    screenshot(page, "grid_opened")
    # it is live: a message sent there continues the cell's branch
    kernel_execute(
        jupyter_lab,
        "grid[1, 1].branch.chat_model.provider.default_reply = lambda r: {'text': 'Continued.'}",
    )
    prompt = chat.locator("textarea.lion-prompt")
    prompt.fill("And then?")
    prompt.press("Enter")
    chat.locator(".lion-assistant", has_text="Continued.").wait_for(timeout=30_000)
    count = kernel_execute(jupyter_lab, "print(len(grid[1, 1].branch.messages))")
    assert count.strip() == "4"
    assert page.watched.console_errors == [], page.watched.console_errors


LARGE = """
import asyncio
import lion_nb
from lion_nb import Grid, iModel

def model(tag):
    return iModel(provider="scripted", default_reply=lambda r: {"text": f"{tag}: " + "word " * 40})

grid = Grid([f"Prompt {i}" for i in range(100)], {f"m{j}": model(j) for j in range(10)})
await grid.run(max_concurrent=100)
view = lion_nb.view(grid)
display(view)
print("LARGE-" + "SHOWN")
"""


def test_a_large_grid_keeps_only_the_rows_in_view_and_scrolls_without_long_tasks(page, jupyter_lab):
    run_notebook_in_lab(page, jupyter_lab, write_notebook(jupyter_lab, "grid_large.ipynb", [LARGE]))
    page.get_by_text("LARGE-SHOWN").first.wait_for(timeout=120_000)
    root = page.locator(".lion-front.lion-grid").first
    root.locator("td.lion-grid-cell").first.wait_for(timeout=30_000)
    on_page = root.locator("tr.lion-grid-row").count()
    assert 3 <= on_page <= 45, on_page  # the rows in view and a margin, not 100
    # it opens at its first row (it once followed its bottom, as a chat does)
    root.locator("tr.lion-grid-row[data-row='0']").wait_for(timeout=30_000)
    page.wait_for_timeout(500)  # the frame after the first draw
    assert root.locator("tr.lion-grid-row[data-row='0']").count() == 1
    watch_long_tasks(page)
    started = page.evaluate("performance.now()")
    scroller = root.locator(":scope > .lion-scroll")
    last_row = root.locator("tr.lion-grid-row[data-row='99']")
    scroll_until(scroller, last_row, step=600, tries=40)
    assert root.locator("tr.lion-grid-row[data-row='0']").count() == 0  # dropped
    assert root.locator("tr.lion-grid-row").count() <= 45
    # scrolled, with a gap row above: the model columns keep their width (a gap spanning
    # more columns than the table has made them collapse to nothing)
    widths = root.locator("th.lion-grid-col").evaluate_all(
        "(els) => els.map((e) => e.getBoundingClientRect().width)"
    )
    assert len(widths) == 10 and min(widths) >= 30, widths
    long_tasks = long_tasks_since(page, started)
    figures = {
        "grid": "100x10 finished, scripted",
        "rows_on_page": on_page,
        "scroll_long_tasks": len(long_tasks),
        "longest_task_ms": max(long_tasks, default=0.0),
    }
    (ARTIFACTS / "grid_view_large_browser.json").write_text(json.dumps(figures, indent=2))
    print(json.dumps(figures))
    assert figures["longest_task_ms"] <= 200, figures  # goal 50 ms: generous on a busy machine
    root.get_by_role("gridcell", name=re.compile(r"^Row 100, m9: done")).wait_for(timeout=30_000)
    screenshot(page, "grid_large_scrolled")
    assert page.watched.console_errors == [], page.watched.console_errors


@pytest.mark.parametrize("theme", ["JupyterLab Light", "JupyterLab Dark"])
def test_the_grid_reads_at_aa_contrast(page, jupyter_lab, theme):
    set_theme(jupyter_lab, theme)
    name = "grid_" + theme.split()[-1].lower()
    root = _show(page, jupyter_lab, f"{name}.ipynb", rows=2, delay=0.0, words=8)
    _run_in_a_cell(page, jupyter_lab, root, 6)
    root.locator("td.lion-grid-cell").nth(1).click()  # a chosen cell too
    root.get_by_role("button", name=re.compile("^Diff of")).click()
    root.locator(".lion-grid-detail").wait_for(timeout=30_000)
    page.wait_for_timeout(300)
    measured = [m for m in page.evaluate(MEASURE) if "lion-grid" in m["view"].split()]
    kinds = {c for m in measured for c in m["cls"].split()}
    want = {"lion-tail-text", "lion-grid-figs", "lion-grid-sum", "lion-grid-ins", "lion-grid-col"}
    assert want <= kinds, kinds
    screenshot(page, f"{name}_contrast")
    failures = [
        f"{m['ratio']}:1 {m['fg']} on {m['bg']} <{m['tag']} class={m['cls']!r}> {m['text']!r}"
        for m in measured
        if m["ratio"] < AA
    ]
    print(theme, "worst:", min(measured, key=lambda m: m["ratio"]))
    assert not failures, "\n".join(failures)


XSS = """
import json, pathlib
import lion_nb
from lion_nb import Grid, iModel

corpus = [c["payload"] for c in json.loads(pathlib.Path({corpus!r}).read_text())]

def model(k):
    return iModel(provider="scripted", default_reply=lambda r: {{"text": " ".join(corpus[k::3])}})

grid = Grid(corpus[:20], {{corpus[20 + j]: model(j) for j in range(3)}}, name=corpus[30])
await grid.run()
view = lion_nb.view(grid)
display(view)
print("XSS-" + "SHOWN")
"""


def test_hostile_prompts_labels_and_replies_execute_nothing(page, jupyter_lab):
    """Every payload of the corpus as a prompt, a column label, the grid's name and in the
    replies; the panel's full text and diff and the opened chat view too: no dialog, no
    request off the machine, the payloads shown as text."""
    corpus = str(Path(__file__).resolve().parents[1] / "fixtures" / "xss_corpus.json")
    cells = [XSS.format(corpus=corpus)]
    run_notebook_in_lab(page, jupyter_lab, write_notebook(jupyter_lab, "grid_xss.ipynb", cells))
    page.get_by_text("XSS-SHOWN").first.wait_for(timeout=120_000)
    root = page.locator(".lion-front.lion-grid").first
    root.locator("td.lion-grid-done").first.wait_for(timeout=30_000)
    cell = root.locator("td[data-key='c0-1']")
    cell.click()
    root.locator(".lion-grid-fulltext").click()
    root.locator(".lion-grid-detail[data-what='text']").wait_for(timeout=30_000)
    assert "<script>alert(1)</script>" in root.locator(".lion-grid-full").inner_text()
    root.locator(".lion-grid-diff").click()
    root.locator(".lion-grid-detail[data-what='diff']").wait_for(timeout=30_000)
    cell.focus()
    page.keyboard.press("Enter")
    root.locator(".lion-grid-chat .lion-assistant").first.wait_for(timeout=30_000)
    page.wait_for_timeout(500)
    screenshot(page, "grid_xss")
    assert page.watched.dialogs == [], page.watched.dialogs
    assert page.watched.external_requests == [], page.watched.external_requests
    assert root.locator("script, iframe, object, embed, img, svg").count() == 0
    assert "<script>alert(1)</script>" in root.locator("th.lion-grid-prompt").first.inner_text()
