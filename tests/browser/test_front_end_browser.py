"""The front-end module (widgets/lion_nb.js) in JupyterLab 4 + chromium, measured where users
see it: visible updates per second and the longest gap while a reply streams (the DOM is
sampled every animation frame), first token on screen, keys, focus and draft kept across a
reply, scroll kept, copy controls, reload, no page errors.

The figures (tests/support/page_measure.py) are written to test-artifacts/front_end_browser.json. The
tests assert what the user sees with bounds that hold on a slow, busy machine (updates keep
coming, no long freeze, the first text soon); the goals themselves (>= 30 updates/s, no gap over
100 ms, first text within 100 ms, bytes no more than before the page revealed text frame by
frame) are checked by the browser benchmark, ``benchmarks/bench_browser.py`` (B10 in
``make bench``), which runs these measurements and compares their medians with the goals."""

from __future__ import annotations

import json
import time

import pytest

from tests.support.lab_notebooks import run_notebook_in_lab, shutdown_kernels, write_notebook
from tests.support.live_views import VIEWS, check_streamed, stream_view, view_cell
from tests.support.page_measure import (
    FIRST_TEXT,
    Bytes,
    figures,
    record,
    start_sampler,
    wait_for_reply_end,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]

SETUP = """
import lion_nb
from lion_nb import Branch, iModel
words = [f"w{{i}} " + ("\\n\\n" if i % 40 == 39 else "") for i in range({n})]
head = "Here is code:\\n\\n```python\\nprint('copy me')\\n```\\n\\n"
chunks = [head, *words]
branch = Branch(chat_model=iModel(provider="scripted", replies=[
    {{"chunks": chunks, "delay": {delay}}}, {{"chunks": chunks, "delay": {delay}}}, "short"]))
view = lion_nb.view(branch, title="front end", height=300)
"""

MIN_FONT = """
() => Math.min(...[...document.querySelectorAll('.lion-front *')]
  .filter(el => [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()))
  .filter(el => el.getClientRects().length)
  .map(el => parseFloat(getComputedStyle(el).fontSize)))
"""

# Behaviour, not speed: these hold with both cores busy (the benchmark checks the goals).
KEEPS_COMING = 3.0  # visible updates per second while a reply streams (goal: 30)
NO_FREEZE_MS = 1500  # the longest time the text stands still mid-stream (goal: 100)
FIRST_SOON_MS = 1500  # first text on screen after the kernel has it (goal: 100)


@pytest.fixture(autouse=True)
def _no_kernels_left(jupyter_lab):
    yield
    shutdown_kernels(jupyter_lab)


def _open(page, lab, name, n, delay, extra=()):
    first = lab.root / f"{name}.first.json"
    setup = SETUP.format(n=n, delay=delay) + FIRST_TEXT.format(path=str(first)) + "view\n"
    nb = write_notebook(lab, name, [setup, *extra])
    run_notebook_in_lab(page, lab, nb)
    page.locator(".lion-front .lion-prompt").wait_for()
    return first


@pytest.mark.parametrize(("rate", "n"), [(50, 200), (1000, 3000)])
def test_a_streamed_reply_updates_smoothly(page, jupyter_lab, rate, n):
    received = Bytes(page)  # before the page opens its websockets
    first = _open(page, jupyter_lab, f"smooth_{rate}.ipynb", n, 1 / rate)
    start_sampler(page, page.locator(".lion-front"))
    received.mark()
    prompt = page.locator(".lion-front .lion-prompt")
    prompt.click()
    prompt.fill("stream please")
    prompt.press("Enter")
    wait_for_reply_end(page)
    stats = figures(page, first, received)
    record(f"JupyterLab 4 | chat | {rate} tok/s", stats)
    text = page.locator(".lion-front .lion-assistant .lion-body").last.text_content()
    assert f"w{n - 1}" in text
    assert stats["updates_per_s"] >= KEEPS_COMING, stats
    assert stats["longest_gap_ms"] <= NO_FREEZE_MS, stats
    assert stats["first_token_ms"] <= FIRST_SOON_MS, stats
    assert page.watched.console_errors == [], page.watched.console_errors


@pytest.mark.parametrize("name", list(VIEWS))
def test_the_live_views_stream_as_smoothly(page, jupyter_lab, name):
    received = Bytes(page)  # before the page opens its websockets
    first = jupyter_lab.root / f"{name.split()[0]}.first.json"
    nb = write_notebook(jupyter_lab, f"smooth_{name.split()[0]}.ipynb", [view_cell(name, first)])
    run_notebook_in_lab(page, jupyter_lab, nb)
    stats = stream_view(page, name, first, received)
    check_streamed(name, stats)
    record(f"JupyterLab 4 | {name} | {VIEWS[name].rate}", stats)
    assert stats["seconds"] > 2, stats  # it streamed for a while (~50 chunks a second)
    assert stats["updates_per_s"] >= KEEPS_COMING, stats
    assert stats["longest_gap_ms"] <= NO_FREEZE_MS, stats
    assert stats["first_token_ms"] <= FIRST_SOON_MS, stats
    assert page.watched.console_errors == [], page.watched.console_errors


def test_keys_focus_draft_scroll_and_copy(page, jupyter_lab):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=jupyter_lab.base)
    _open(page, jupyter_lab, "keys.ipynb", 300, 0.01)
    root = page.locator(".lion-front")
    # an empty view is a titled placeholder with a hint, not a thin bar
    assert root.locator(".lion-placeholder-title").inner_text() == "front end"
    assert "press Enter to send" in root.locator(".lion-placeholder-hint").inner_text()
    prompt = root.locator(".lion-prompt")
    prompt.click()
    prompt.type("line one")
    prompt.press("Shift+Enter")  # a new line, nothing sent
    prompt.type("line two")
    assert prompt.input_value() == "line one\nline two"
    assert root.locator(".lion-part").count() == 0
    page.evaluate("() => { document.querySelector('.lion-front').__mark = 1; }")
    prompt.press("Enter")
    root.locator(".lion-live").wait_for()
    assert prompt.input_value() == ""
    follow_up = "Now make it shorter and add a title."
    prompt.type(follow_up[:12])  # typed during the reply
    prompt.press("Escape")  # stops it
    root.locator(".lion-stopped-msg").wait_for()
    prompt.type(follow_up[12:])  # and right after it
    time.sleep(3.2)  # the saved output is never refreshed under the user
    assert prompt.input_value() == follow_up
    assert page.evaluate("() => document.activeElement.classList.contains('lion-prompt')")
    assert page.evaluate("() => document.querySelector('.lion-front').__mark === 1")  # not redrawn
    # a second, complete reply; then scroll up: it stays put
    prompt.fill("again")
    prompt.press("Enter")
    page.wait_for_function(
        "document.querySelectorAll('.lion-front .lion-assistant').length >= 2"
        " && !document.querySelector('.lion-front .lion-streaming-msg')",
        timeout=60_000,
    )
    scroller = root.locator(".lion-scroll")
    scroller.evaluate("el => { el.scrollTop = 0; el.dispatchEvent(new Event('scroll')); }")
    prompt.fill("third")
    prompt.press("Enter")
    page.wait_for_function("document.querySelectorAll('.lion-front .lion-assistant').length >= 3")
    time.sleep(0.5)
    assert scroller.evaluate("el => el.scrollTop") == 0  # not pulled to the bottom
    assert root.locator(".lion-jump").is_visible()
    root.locator(".lion-jump").click()
    # at the bottom (and kept there while the reply may still grow on a slow machine)
    page.wait_for_function(
        "() => { const el = document.querySelector('.lion-front .lion-scroll');"
        " return el.scrollHeight - el.scrollTop - el.clientHeight < 30; }",
        timeout=10_000,
    )
    # copy controls: every message and every code block
    cards = root.locator(".lion-msg")
    assert cards.count() >= 5 and root.locator(".lion-msg .lion-copy-msg").count() == cards.count()
    assert root.locator("pre.lion-code .lion-copy-code").count() >= 2
    root.locator("pre.lion-code .lion-copy-code").first.click()
    assert _clipboard(page, lambda t: t.startswith("print")) == "print('copy me')\n"
    root.locator(".lion-assistant .lion-copy-msg").nth(1).click()  # through the kernel
    copied = _clipboard(page, lambda t: t.startswith("Here is code:"))
    assert (
        copied.startswith("Here is code:\n\n```python\nprint('copy me')\n```") and "w299" in copied
    )
    assert page.watched.console_errors == [], page.watched.console_errors


def _clipboard(page, ready, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        text = page.evaluate("navigator.clipboard.readText()")
        if ready(text):
            return text
        time.sleep(0.1)
    return text


def test_reload_after_save_shows_the_transcript(page, jupyter_lab):
    _open(page, jupyter_lab, "reload.ipynb", 50, 0.005, extra=["await view.asend('hello there')"])
    page.wait_for_function(
        "document.querySelector('.lion-front .lion-transcript').textContent.includes('w49')"
    )
    # the saved output is refreshed at the end of the cell that ran, a moment after the page
    # shows the last word: saved again until the file holds it
    deadline = time.monotonic() + 30
    while True:
        page.get_by_role("menuitem", name="File", exact=True).click()
        page.get_by_role("menuitem", name="Save Notebook").first.click()
        page.wait_for_timeout(500)
        if "w49" in (jupyter_lab.root / "reload.ipynb").read_text():
            break
        assert time.monotonic() < deadline, "the saved notebook never held the last word"
    # a fresh page (what a reload is, without the unload prompt): it attaches to the running
    # kernel's widgets and renders them from their synced state alone
    page = page.context.new_page()
    page.goto(jupyter_lab.url("lab/tree/reload.ipynb"), wait_until="domcontentloaded")
    page.locator(".jp-Notebook >> visible=true").first.wait_for(timeout=60_000)
    page.wait_for_function(
        "(() => { const t = document.querySelector('.lion-front .lion-transcript');"
        " return t && t.textContent.includes('w49') && t.textContent.includes('hello there'); })()",
        timeout=60_000,
    )
    saved = json.loads((jupyter_lab.root / "reload.ipynb").read_text())
    html = "".join(
        "".join(out.get("data", {}).get("text/html", ""))
        for cell in saved["cells"]
        for out in cell.get("outputs", [])
    )
    assert "w49" in html  # the saved output holds the transcript (end of the cell that ran)


PARAGRAPHS = """
import lion_nb
from lion_nb import Branch, iModel
# long one-line paragraphs, as a model writes them: a paragraph is finished only when the
# line after it is, so the next one has grown long by then (the text-shrink glitch)
words = [f"p{{p}}w{{i}} " + ("\\n\\n" if i == 59 else "") for p in range(6) for i in range(60)]
branch = Branch(chat_model=iModel(provider="scripted", replies=[
    {{"chunks": words, "delay": {delay}}}, "REGENERATED",
    {{"chunks": words * 4, "delay": 0.02}}, "after"]))
view = lion_nb.view(branch, title="shrink", height=300)
view
"""

SHRINK_SAMPLER = """
() => {
  // the visible text of the reply being streamed, every animation frame (whitespace aside)
  const list = document.querySelector('.lion-front .lion-transcript');
  const s = {last: -1, shrinks: [], samples: 0, done: false};
  window.__lionShrink = s;
  function tick() {
    const body = list.querySelector('.lion-live.lion-streaming-msg .lion-body');
    if (body) {
      const n = body.textContent.replace(/\\s+/g, '').length;
      if (n < s.last) s.shrinks.push([s.last, n]);
      s.last = n;
      s.samples++;
    } else {
      s.last = -1;
    }
    if (!s.done) requestAnimationFrame(tick);
  }
  requestAnimationFrame(tick);
}
"""


@pytest.mark.parametrize("delay", [0.004, 0.02])
def test_the_visible_text_never_shrinks_while_a_reply_streams(page, jupyter_lab, delay):
    nb = write_notebook(jupyter_lab, f"shrink_{delay}.ipynb", [PARAGRAPHS.format(delay=delay)])
    run_notebook_in_lab(page, jupyter_lab, nb)
    prompt = page.locator(".lion-front .lion-prompt")
    prompt.wait_for()
    page.evaluate(SHRINK_SAMPLER)
    prompt.click()
    prompt.fill("stream please")
    prompt.press("Enter")
    page.wait_for_function(
        "document.querySelector('.lion-front .lion-transcript').textContent.includes('p5w59')"
        " && !document.querySelector('.lion-front .lion-live')",
        timeout=120_000,
    )
    page.evaluate("() => { window.__lionShrink.done = true; }")
    shrink = page.evaluate("() => window.__lionShrink")
    assert shrink["samples"] > 5, shrink
    assert shrink["shrinks"] == [], shrink  # [before, after] of each frame the text shrank
    assert page.watched.console_errors == [], page.watched.console_errors


def test_screen_readers_hear_blocks_status_and_named_controls(page, jupyter_lab):
    nb = write_notebook(jupyter_lab, "a11y.ipynb", [PARAGRAPHS.format(delay=0.01)])
    run_notebook_in_lab(page, jupyter_lab, nb)
    root = page.locator(".lion-front")
    prompt = root.locator(".lion-prompt")
    prompt.wait_for()
    # the status line is a status
    assert root.locator(".lion-view-statusline[role=status]").count() == 1
    prompt.click()
    prompt.fill("first")
    prompt.press("Enter")
    # the streaming reply is a polite live region; its growing tail is busy while it streams
    # (announced a finished block at a time, never token by token)
    live = root.locator(".lion-streaming-msg .lion-body[aria-live=polite]")
    live.locator("[data-slot=tail][aria-busy=true]").wait_for(timeout=30_000)
    page.wait_for_function(
        "document.querySelector('.lion-front .lion-transcript').textContent.includes('p5w59')"
        " && !document.querySelector('.lion-front .lion-live')",
        timeout=120_000,
    )
    assert root.locator("[aria-busy=true]").count() == 0
    # every control is named with what it acts on; the visible text stays short
    assert root.locator(".lion-assistant .lion-copy-msg").get_attribute("aria-label") == (
        "Copy reply 1"
    )
    assert root.locator(".lion-assistant .lion-copy-msg").inner_text() == "Copy"
    regen = root.locator(".lion-assistant .lion-act:has-text('Regenerate')")
    assert regen.get_attribute("aria-label") == "Regenerate reply 1"
    edit = root.locator(".lion-user .lion-act:has-text('Edit')")
    assert edit.get_attribute("aria-label") == "Edit message 1"
    assert page.get_by_role("button", name="Copy message 1", exact=True).count() == 1
    # a second alternative: the switcher's names are words, not glyphs
    regen.click()
    root.locator(".lion-switch-pos:has-text('2/2')").wait_for(timeout=60_000)
    assert root.get_by_role("button", name="Previous alternative", exact=True).count() == 1
    assert root.get_by_role("button", name="Next alternative", exact=True).count() == 1
    assert root.locator(".lion-switch .lion-act:has-text('‹')").count() == 1
    page.wait_for_function("!document.querySelector('.lion-front .lion-live')", timeout=120_000)
    # Clear while a reply streams: it stops first, then clears, and the status line says so
    prompt.fill("second")
    prompt.press("Enter")
    root.locator(".lion-streaming-msg").wait_for(timeout=30_000)
    root.locator("button.lion-clear").click()
    status = root.locator(".lion-view-statusline")
    page.wait_for_function(
        "document.querySelector('.lion-front .lion-view-statusline').textContent"
        ".includes('stopped the reply, then cleared')",
        timeout=30_000,
    )
    assert "stopped the reply, then cleared" in status.inner_text()
    assert root.locator(".lion-streaming-msg").count() == 0
    assert page.watched.console_errors == [], page.watched.console_errors
