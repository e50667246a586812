"""BranchView in JupyterLab in a real chromium: streaming, Stop, hostile model output."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.support.front_ends import screenshot
from tests.support.lab_notebooks import run_notebook_in_lab, shutdown_kernels, write_notebook

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(240)]

CORPUS = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures" / "xss_corpus.json").read_text()
)

SLOW_VIEW = """
import lion_nb
from lion_nb import Branch, iModel
words = [f"token{{i}} " + ("\\n\\n" if i % 25 == 24 else "") for i in range({n})]
branch = Branch(system="You stream slowly.", chat_model=iModel(
    provider="scripted", replies=[{{"chunks": words, "delay": {delay}}}]))
view = lion_nb.view(branch, title="streaming test")
view
"""


def live_text(page) -> str:
    cards = page.locator(".lion-view .lion-assistant")
    return cards.last.inner_text() if cards.count() else ""


@pytest.fixture(autouse=True)
def _no_kernels_left(jupyter_lab):
    yield
    shutdown_kernels(jupyter_lab)


def test_streamed_text_appears_progressively(page, jupyter_lab):
    nb = write_notebook(
        jupyter_lab,
        "stream.ipynb",
        [SLOW_VIEW.format(n=120, delay=0.03), "view.send('Please stream')"],
    )
    run_notebook_in_lab(page, jupyter_lab, nb)
    page.locator(".lion-view .lion-assistant").first.wait_for()
    lengths = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        text = live_text(page)
        lengths.append(text.count("token"))
        if "token119" in text and "streaming" not in text:
            break
        time.sleep(0.1)
    distinct = sorted(set(n for n in lengths if 0 < n < 120))
    assert len(distinct) >= 5, f"expected progressive updates, saw counts {distinct}"
    screenshot(page, "chat_view_streamed")
    assert "token119" in live_text(page)
    assert page.locator(".lion-view button:has-text('Send')").is_enabled()
    assert page.watched.dialogs == [] and page.watched.external_requests == []


def test_stop_button_ends_a_run(page, jupyter_lab):
    nb = write_notebook(
        jupyter_lab,
        "stop.ipynb",
        [SLOW_VIEW.format(n=2000, delay=0.02), "view.send('A very long answer please')"],
    )
    run_notebook_in_lab(page, jupyter_lab, nb)
    page.locator(".lion-view .lion-assistant").first.wait_for()
    page.wait_for_function(
        "() => [...document.querySelectorAll('.lion-view .lion-assistant')]"
        ".some(e => e.innerText.includes('token30'))",
        timeout=30_000,
    )
    stop = page.locator(".lion-view button:has-text('Stop')")
    assert stop.is_enabled()
    assert page.locator(".lion-view button:has-text('Send')").is_disabled()
    stop.click()
    page.locator(".lion-view .lion-view-stopped").wait_for(timeout=15_000)
    text = live_text(page)
    time.sleep(1.0)
    assert live_text(page) == text, "the reply kept growing after Stop"
    assert "token1999" not in text and "stopped" in text
    assert page.locator(".lion-view button:has-text('Send')").is_enabled()
    # Stop disabled itself: the focus went to the prompt box, not out of the view (a leave)
    focused = page.evaluate(
        "() => document.activeElement.matches('.lion-view textarea.lion-prompt')"
    )
    assert focused, page.evaluate("() => document.activeElement.outerHTML.slice(0, 200)")
    screenshot(page, "chat_view_stopped")


def test_hostile_model_output_executes_nothing(page, jupyter_lab):
    payloads = [c["payload"] for c in CORPUS]
    setup = f"""
import json
from lion_nb import Branch, iModel
from lion_nb.messages import ActionRequest, ActionResponse, Instruction
payloads = json.loads({json.dumps(json.dumps(payloads))})
# every payload streams through the live renderer, a dozen per reply (one run per payload
# took minutes: each reply's view settles on its own idle timer)
groups = ["\\n\\n".join(payloads[i:i + 12]) for i in range(0, len(payloads), 12)]
replies = [{{"text": g, "thinking": g, "delay": 0.0}} for g in groups]
branch = Branch(system=payloads[0], chat_model=iModel(provider="scripted", replies=replies))
for p in payloads:
    branch.add_message(ActionRequest(function=p[:40], arguments={{"q": p}}))
    branch.add_message(ActionResponse(function=p[:40], arguments={{"q": p}}, output=p,
                                      is_error=True))
    branch.add_message(ActionResponse(function="tool", output={{"html": p}}))
view = lion_nb.view(branch, height=600)
view
"""
    drive = """
for g in groups:
    await view.asend(g)
print("sent", len(branch.messages))
"""
    static = "branch"  # the Branch's own _repr_html_ (static transcript) in the page too
    nb = write_notebook(jupyter_lab, "xss.ipynb", ["import lion_nb", setup, drive, static])
    run_notebook_in_lab(page, jupyter_lab, nb)
    groups = -(-len(payloads) // 12)
    page.get_by_text(f"sent {1 + 3 * len(payloads) + 2 * groups}").wait_for(timeout=120_000)
    page.locator(".lion-transcript").last.wait_for()
    time.sleep(2.0)  # give any onerror/onload/animation a chance to fire
    screenshot(page, "chat_view_xss")
    executed = page.evaluate("() => window.__lion_xss || null")
    assert page.watched.dialogs == [], page.watched.dialogs
    assert page.watched.external_requests == [], page.watched.external_requests
    assert executed is None
    # no element from model text made it into the DOM as markup
    bad = page.evaluate("""() => {
        // everything rendered from messages: the view's HTML widgets, the static transcript
        const root = document.querySelectorAll(
            '.lion-view .widget-html-content, .jp-OutputArea-output .lion-transcript');
        const found = [];
        for (const r of root) {
            for (const el of r.querySelectorAll('script, iframe, object, embed, img, svg, '
                + 'math, form, input, video, audio, base, meta, link, textarea')) {
                found.push(el.outerHTML.slice(0, 80));
            }
            for (const el of r.querySelectorAll('*')) {
                for (const a of el.attributes) {
                    if (a.name.startsWith('on') || /^\\s*(javascript|data|vbscript):/i
                            .test(a.value)) found.push(el.tagName + ' ' + a.name);
                }
            }
        }
        return found;
    }""")
    assert bad == [], bad
    relevant = [
        e
        for e in page.watched.console_errors
        if "lion" in e.lower() or "alert" in e.lower() or "evil" in e.lower()
    ]
    assert relevant == [], relevant


def test_a_notebook_saved_from_lab_after_send_runs_holds_the_final_transcript(page, jupyter_lab):
    """Runs started with the Send button end outside any cell. The view never replaces its
    saved output while the user is in it (that would draw it anew under their cursor); when
    focus leaves the view it does (JupyterLab routes the update to the display), and the widget,
    rendered anew for the update from its synced state, is shown once and keeps working."""
    import nbformat

    setup = """
import lion_nb
from lion_nb import Branch, iModel
mark = "MARK-".join
branch = Branch(chat_model=iModel(provider="scripted", replies=[
    mark(["LAB-SAVED-", "1"]), mark(["LAB-SAVED-", "2"])]))
view = lion_nb.view(branch, title="save test")
view
"""
    nb = write_notebook(jupyter_lab, "saved.ipynb", [setup])
    run_notebook_in_lab(page, jupyter_lab, nb)
    output = page.locator(".jp-OutputArea-output").first
    for n in (1, 2):
        output.locator(".lion-view textarea").wait_for(timeout=60_000)
        output.locator(".lion-view textarea").fill(f"question {n}")
        output.locator(".lion-view button:has-text('Send')").click()
        output.locator(f".lion-view .lion-assistant:has-text('LAB-SAVED-MARK-{n}')").wait_for(
            timeout=30_000
        )
        page.wait_for_timeout(2500)  # nothing is redrawn while the user is in the view
        assert output.locator(".lion-view .lion-transcript").count() == 1
    page.locator(".jp-Notebook >> visible=true").first.click()  # focus leaves the view
    page.keyboard.press("Escape")
    page.wait_for_timeout(1500)
    # leaving refreshes the saved output, which Lab may be drawing anew right now: one view
    expect(output.locator(".lion-view .lion-transcript")).to_have_count(1, timeout=30_000)
    html = ""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # page.wait_for_timeout: requests are routed meanwhile
        page.keyboard.press("Control+s")
        page.wait_for_timeout(1000)
        saved = nbformat.read(jupyter_lab.root / nb, as_version=4)
        outputs = [o for o in saved.cells[0].get("outputs", []) if "data" in o]
        html = outputs[0]["data"].get("text/html", "") if outputs else ""
        if "LAB-SAVED-MARK-2" in html:
            break
    assert "LAB-SAVED-MARK-1" in html and "LAB-SAVED-MARK-2" in html, html[-500:]
    assert "question 2" in html
    assert page.watched.dialogs == [] and page.watched.external_requests == []
