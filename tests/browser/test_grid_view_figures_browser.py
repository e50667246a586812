"""The grid view's figures in JupyterLab + chromium, the ones ``benchmarks/bench_grid_browser.py``
(B19 in ``make bench``) reports against the goals; these tests assert only bounds that hold on a
busy machine.

- A 4 × 3 grid streaming at ~50 words/s per cell, all twelve at once (the scripted model, a
  word every 20 ms): the page's visible updates per second (every animation frame, the text of
  every cell), the longest gap between two, the first text on screen after the kernel had it
  (the grid's session noting the first streamed text, wall clock on both sides), and the bytes
  the page received over its websockets while it streamed; then twelve chat views on the same
  page, each on a branch of its own with the same model and prompt, streaming the same replies
  at once: their bytes, the yardstick (goal: the grid <= 1.1 × theirs). The kernel's own count
  (each view's channel payloads, plus ``protocol.ENVELOPE_BYTES`` a message) is beside it.
- A 100 × 10 grid of finished cells: the view opens (from the kernel making it to the first
  frame showing its rows; an ``ipywidgets.VBox`` on the page takes each new view, a warm view
  having loaded the module first), three times; then the page scrolls it through, its long
  tasks (``PerformanceObserver``, ``longtask``) recorded.

Figures go to ``test-artifacts/grid_view_figures_browser.json`` (a key per test).
"""

from __future__ import annotations

import json
import statistics
from typing import Any

import pytest

from tests.support.front_ends import ARTIFACTS
from tests.support.lab_notebooks import (
    kernel_execute,
    run_notebook_in_lab,
    shutdown_kernels,
    write_notebook,
)
from tests.support.page_measure import (
    Bytes,
    cadence,
    long_tasks_since,
    scroll_until,
    watch_long_tasks,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]

FIGURES = ARTIFACTS / "grid_view_figures_browser.json"
WORDS = 150  # a reply: ~3 s at a word every 20 ms

# Behaviour, not speed: these hold with both cores busy (the benchmark checks the goals).
KEEPS_COMING = 3.0  # visible updates per second while the grid streams (goal: 30)
NO_FREEZE_MS = 1500  # the longest time the page stands still mid-stream (goal: 100)
FIRST_SOON_MS = 1500  # the first text on screen after the kernel had it (goal: 100)
BYTES_RATIO = 2.0  # the grid's bytes against the twelve chat views' (goal: 1.1)
OPENS_MS = 3000  # the 100 × 10 grid's view opens (goal: 300)
LONG_TASK_MS = 200  # the longest task while it scrolls (goal: 50)

STREAMING = """
import asyncio, json, time
import ipywidgets
import lion_nb
from lion_nb import Branch, Grid, iModel
from lion_nb.signals import StreamDelta
from lion_nb.widgets.protocol import ENVELOPE_BYTES

def model(tag):
    def answer(request):
        return {{"text": f"{{tag}} on {{request.messages[-1]['content']}}: "
                 + " ".join(f"word{{k}}" for k in range({words})), "delay": 0.02}}
    return iModel(provider="scripted", default_reply=answer)

PROMPTS = [f"Prompt number {{i}}" for i in range(4)]
TAGS = {{"alpha": "A", "beta": "B", "gamma": "C"}}
grid = Grid(PROMPTS, {{label: model(tag) for label, tag in TAGS.items()}}, name="Figures grid")
view = lion_nb.view(grid)
_firsts = []
def _first_text(signal):
    if signal.kind == "text" and not _firsts:
        _firsts.append(time.time())
        open({first!r}, "w").write(json.dumps(_firsts))
grid.session.observe(StreamDelta, handler=_first_text)
# the yardstick: twelve chat views showing the same replies (a branch each, the same model)
pairs = [(Branch(chat_model=model(tag)), p) for p in PROMPTS for tag in TAGS.values()]
chats = [lion_nb.view(b, title=p, height=160) for b, p in pairs]
def sent(views):
    return sum(v.channel.sent_bytes + ENVELOPE_BYTES * v.channel.messages for v in views)
display(view)
display(ipywidgets.VBox(chats))
print("STREAMING-" + "SHOWN")
"""

# every frame: the non-space characters of every cell's text; when the first text came, and
# the time of each change after it
GRID_SAMPLER = """
() => {
  const s = {changes: [], last: -1, firstWall: null, done: false};
  window.__gridFigures = s;
  function tick() {
    let n = 0;
    for (const c of document.querySelectorAll('.lion-front.lion-grid td.lion-grid-cell .lion-grid-text'))
      n += c.textContent.replace(/\\s+/g, '').length;
    if (s.last >= 0 && n !== s.last) {
      if (s.firstWall === null) s.firstWall = Date.now();
      s.changes.push(performance.now());
    }
    s.last = n;
    if (!s.done) requestAnimationFrame(tick);
  }
  requestAnimationFrame(tick);
}
"""

ALL_DONE = (
    "() => document.querySelectorAll('.lion-front.lion-grid td.lion-grid-done').length === 12"
)
CHATS_DONE = f"""() => [...document.querySelectorAll('.lion-front.lion-chat .lion-assistant .lion-body')]
  .filter((b) => b.textContent.includes('word{WORDS - 1}')).length === 12"""


def _record(key: str, figures: dict[str, Any]) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    rows = json.loads(FIGURES.read_text()) if FIGURES.exists() else {}
    rows[key] = figures
    FIGURES.write_text(json.dumps(rows, indent=2))
    print(json.dumps(figures))


@pytest.fixture(autouse=True)
def _no_kernels_left(jupyter_lab):
    yield
    shutdown_kernels(jupyter_lab)


def _settled_bytes(page: Any, received: Bytes, wait_for: str) -> int:
    """The bytes since ``received.mark()`` once ``wait_for`` holds and the page received
    nothing more for half a second (the last update and the saved output have come)."""
    page.wait_for_function(wait_for, timeout=120_000)
    seen = -1
    while seen != received.since():
        seen = received.since()
        page.wait_for_timeout(500)
    return seen


def test_the_streaming_grid_figures(page, jupyter_lab):
    received = Bytes(page)  # before the page opens its websockets
    first = jupyter_lab.root / "grid_figures.first.json"
    first.unlink(missing_ok=True)
    cell = STREAMING.format(words=WORDS, first=str(first))
    run_notebook_in_lab(
        page, jupyter_lab, write_notebook(jupyter_lab, "grid_figures.ipynb", [cell])
    )
    page.get_by_text("STREAMING-SHOWN").first.wait_for(timeout=120_000)
    page.locator(".lion-front.lion-grid td.lion-grid-cell").nth(11).wait_for(timeout=30_000)
    page.locator(".lion-front.lion-chat").nth(11).wait_for(timeout=30_000)
    page.wait_for_timeout(1000)  # the page at rest
    page.evaluate(GRID_SAMPLER)
    received.mark()
    kernel_execute(jupyter_lab, "_run = asyncio.ensure_future(grid.run(max_concurrent=12))")
    grid_bytes = _settled_bytes(page, received, ALL_DONE)
    s = page.evaluate(
        "(() => { window.__gridFigures.done = true; return window.__gridFigures; })()"
    )
    kernel_grid = int(kernel_execute(jupyter_lab, "print(sent([view]))"))

    received.mark()  # the yardstick: the same twelve replies in twelve chat views
    kernel_execute(
        jupyter_lab,
        "_chats = asyncio.ensure_future(asyncio.gather(*(b.communicate(p) for b, p in pairs)))",
    )
    chat_bytes = _settled_bytes(page, received, CHATS_DONE)
    kernel_chats = int(kernel_execute(jupyter_lab, "print(sent(chats))"))
    texts = kernel_execute(
        jupyter_lab,
        "print(json.dumps([[c.text for c in grid.cells()], [str(r) for r in _chats.result()]]))",
    )
    grid_texts, chat_texts = json.loads(texts)
    figures = {
        "grid": f"4x3, scripted, {WORDS} words at 20 ms each, 12 at once",
        **cadence(s["changes"]),
        "first_token_ms": round(s["firstWall"] - json.loads(first.read_text())[0] * 1000, 1),
        "bytes": grid_bytes,
        "chat_views_bytes": chat_bytes,
        "bytes_ratio": round(grid_bytes / chat_bytes, 3),
        "kernel_bytes": kernel_grid,
        "kernel_chat_views_bytes": kernel_chats,
    }
    _record("streaming", figures)
    assert grid_texts == chat_texts  # the same replies
    assert all(t.endswith(f"word{WORDS - 1}") for t in grid_texts)
    assert figures["updates_per_s"] >= KEEPS_COMING, figures
    assert figures["longest_gap_ms"] <= NO_FREEZE_MS, figures
    assert figures["first_token_ms"] <= FIRST_SOON_MS, figures
    assert figures["bytes_ratio"] <= BYTES_RATIO, figures
    assert page.watched.console_errors == [], page.watched.console_errors


LARGE = """
import time
import ipywidgets
import lion_nb
from lion_nb import Grid, iModel

def model(tag):
    return iModel(provider="scripted", default_reply=lambda r: {"text": f"{tag}: " + "word " * 40})

small = Grid(["Warm"], {"m": model("w")})
await small.run()
grid = Grid([f"Prompt {i}" for i in range(100)], {f"m{j}": model(j) for j in range(10)})
await grid.run(max_concurrent=100)
box = ipywidgets.VBox([lion_nb.view(small)])  # the module loaded: what opens next is the view
box.add_class("grid-figures-box")
display(box)
print("LARGE-" + "SHOWN")
"""

# the first frame with a new grid's rows drawn in the box (wall clock, to compare with the
# kernel's), and how many rows it had
OPEN_SAMPLER = """
() => {
  const s = {wall: null, rows: 0};
  window.__gridOpen = s;
  function tick() {
    const rows = document.querySelectorAll('.grid-figures-box .lion-front.lion-grid tr.lion-grid-row');
    if (rows.length >= 10 && rows[0].querySelectorAll('td.lion-grid-cell').length === 10) {
      s.wall = Date.now();
      s.rows = rows.length;
      return;
    }
    requestAnimationFrame(tick);
  }
  requestAnimationFrame(tick);
}
"""


# a task of 120 ms, to show the observer records long tasks in this chromium
BUSY = """
() => new Promise((done) => setTimeout(() => {
  const t = performance.now();
  while (performance.now() - t < 120);
  done();
}, 0))
"""

OPENS = 3


def _open_large(page: Any, lab: Any) -> tuple[float, int]:
    """Empty the box, then put a new view of the 100 × 10 grid in it: milliseconds from the
    kernel making the view to the first frame showing its rows, and how many rows it had."""
    kernel_execute(lab, "box.children = []")
    page.wait_for_function(
        "() => !document.querySelector('.grid-figures-box .lion-front.lion-grid')", timeout=30_000
    )
    page.wait_for_timeout(300)
    page.evaluate(OPEN_SAMPLER)
    started = float(
        kernel_execute(lab, "_t0 = time.time(); box.children = [lion_nb.view(grid)]; print(_t0)")
    )
    page.wait_for_function("window.__gridOpen.wall !== null", timeout=60_000)
    s = page.evaluate("window.__gridOpen")
    return round(s["wall"] - started * 1000, 1), s["rows"]


def test_the_large_grid_figures(page, jupyter_lab):
    run_notebook_in_lab(
        page, jupyter_lab, write_notebook(jupyter_lab, "grid_large_figures.ipynb", [LARGE])
    )
    page.get_by_text("LARGE-SHOWN").first.wait_for(timeout=120_000)
    page.locator(".grid-figures-box .lion-front.lion-grid td.lion-grid-done").first.wait_for(
        timeout=30_000
    )
    opens = [_open_large(page, jupyter_lab) for _ in range(OPENS)]
    root = page.locator(".grid-figures-box .lion-front.lion-grid").first
    watch_long_tasks(page)
    page.evaluate(BUSY)  # the observer sees a long task: this one
    page.wait_for_function("() => window.__long.some(([, d]) => d >= 100)", timeout=10_000)
    started = page.evaluate("performance.now()")
    scroller = root.locator(":scope > .lion-scroll")
    last_row = root.locator("tr.lion-grid-row[data-row='99']")
    scroll_until(scroller, last_row, step=400, tries=60)
    page.wait_for_timeout(500)  # the last rows put and drawn
    long_tasks = long_tasks_since(page, started)
    figures = {
        "grid": "100x10 finished, scripted",
        "open_ms": statistics.median(ms for ms, _ in opens),
        "open_samples_ms": [ms for ms, _ in opens],
        "rows_on_page": opens[-1][1],
        "scroll_long_tasks": len(long_tasks),
        "longest_task_ms": round(max(long_tasks, default=0.0), 1),
    }
    _record("large", figures)
    assert figures["open_ms"] <= OPENS_MS, figures
    assert figures["longest_task_ms"] <= LONG_TASK_MS, figures
    assert figures["rows_on_page"] < 100, figures  # the rows in view, not all of them
    assert page.watched.console_errors == [], page.watched.console_errors
