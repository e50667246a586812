"""The grid view in Notebook 7, Voilà and marimo, in a real chromium (the JupyterLab tests are
in ``test_grid_view_browser.py``; playwright's sync API runs one browser per module): the cells
of a 2 × 3 grid on the scripted model stream and settle, named for a screen reader; Stop is
enabled only while the grid runs; Enter on a cell opens its conversation in a chat view under
the grid (the chat view is another model of the same module, drawn by it). In each of the three,
a grid of long replies: Stop stops the streaming cells (their text stands still, each says
"stopped"), Run again replaces one cell with a fresh reply (the others stay stopped), the arrow
keys move between cells named for a screen reader, and Enter opens a live chat view on the
cell's branch, where a message sent is answered; and the grid (a chosen cell, its diff open)
reads at WCAG AA in each front end's light and dark theme."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.test_front_ends_browser import nb7_theme, open_in_notebook7, write_ipynb
from tests.support.front_ends import screenshot
from tests.support.page_measure import contrast_failures

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]

# replies of 120 words at 0.03 s a word: each cell streams ~3.6 s, long enough for a page that
# draws late on a busy machine to see cells running (40 words, ~1.2 s, once ended first)
SETUP = """
import asyncio
import lion_nb
from lion_nb import Grid, iModel

def model(tag):
    def answer(request):
        return {"text": f"{tag} on {request.messages[-1]['content']}: "
                 + " ".join(f"word{k}" for k in range(120)), "delay": 0.03}
    return iModel(provider="scripted", default_reply=answer)

grid = Grid(["Prompt one", "Prompt two"],
            {"alpha": model("A"), "beta": model("B"), "gamma": model("C")}, name="Fronts")
view = lion_nb.view(grid)
"""
START = "_run = asyncio.ensure_future(grid.run())"


def _streams_and_settles(page: Any, view: Any, name: str, *, live: bool = True) -> None:
    """``live``: the page is drawn before the run ends (Voilà draws the widgets once the
    notebook ran, so the run may be over by then)."""
    view.locator("td.lion-grid-cell").first.wait_for(timeout=90_000)
    if live:
        view.locator("td.lion-grid-running").first.wait_for(timeout=60_000)
        # Stop comes alive in the kernel's next message after the first cell runs
        expect(view.locator(".lion-grid-stop")).to_be_enabled(timeout=30_000)
    screenshot(page, f"grid_{name}_streaming")
    view.locator("td.lion-grid-done").nth(5).wait_for(timeout=90_000)
    cell = view.get_by_role("gridcell", name=re.compile(r"^Row 2, gamma: done, \d"))
    assert cell.count() == 1 and "C on Prompt two" in cell.inner_text()
    page.wait_for_function(
        "(el) => el.querySelector('.lion-grid-stop').disabled",
        arg=view.element_handle(),
        timeout=30_000,
    )


def _opens(page: Any, view: Any, name: str) -> None:
    view.locator("td[data-key='c1-1']").click()
    page.keyboard.press("Enter")
    chat = view.locator(".lion-grid-chat .lion-view.lion-chat")
    chat.locator(".lion-assistant", has_text="B on Prompt two").wait_for(timeout=30_000)
    screenshot(page, f"grid_{name}_opened")


def test_the_grid_streams_and_opens_in_notebook7(front_page, notebook7):
    write_ipynb(notebook7.root / "grid.ipynb", [SETUP + "view", START])
    view = open_in_notebook7(front_page, notebook7, "grid.ipynb")
    view = front_page.locator(".lion-view.lion-grid").first
    _streams_and_settles(front_page, view, "notebook7")
    _opens(front_page, view, "notebook7")
    # (Notebook 7 itself logs "Cannot read properties of undefined (reading 'schema')")
    ours = [e for e in front_page.watched.console_errors if "lion_nb" in e]
    assert ours == [], ours


def test_the_grid_streams_and_opens_in_voila(front_page, voila_root, voila):
    write_ipynb(voila_root / "grid.ipynb", [SETUP + "view", START])
    front_page.goto(voila.url("voila/render/grid.ipynb"))
    view = front_page.locator(".lion-view.lion-grid").first
    _streams_and_settles(front_page, view, "voila", live=False)
    _opens(front_page, view, "voila")
    # (Voilà logs its own: the fonts it asks off the machine, refused here)
    ours = [e for e in front_page.watched.console_errors if "lion_nb" in e]
    assert ours == [], ours


# replies of 300 words at 10 a second (stopped long before they end); a cell run again answers
# at once, and so does a message sent in an opened cell's chat view
STOPPABLE = """
import asyncio, collections
import lion_nb
from lion_nb import Grid, iModel

calls = collections.Counter()

def model(tag):
    def answer(request):
        said = request.messages[-1]["content"]
        calls[tag, said] += 1
        if said == "And then?":
            return {"text": f"{tag} continued."}
        if calls[tag, said] > 1:
            return {"text": f"{tag} again on {said}."}
        return {"text": f"{tag} on {said}: " + " ".join(f"word{k}" for k in range(300)),
                "delay": 0.1}
    return iModel(provider="scripted", default_reply=answer)

grid = Grid(["Prompt one", "Prompt two"],
            {"alpha": model("A"), "beta": model("B"), "gamma": model("C")}, name="Fronts")
view = lion_nb.view(grid)
"""
STOPPED = "td.lion-grid-stopped"


def _stop_rerun_and_open(page: Any, view: Any, name: str) -> None:
    """Stop while the cells stream, run one again, move by keys, open one and continue it."""
    view.locator("td.lion-grid-running").nth(5).wait_for(timeout=90_000)
    view.locator("td.lion-grid-running .lion-grid-text", has_text="word3").first.wait_for(
        timeout=60_000
    )
    stop = view.locator(".lion-grid-stop")
    assert stop.is_enabled()
    stop.click()
    view.locator(STOPPED).nth(5).wait_for(timeout=60_000)
    page.wait_for_function(
        "(el) => el.querySelector('.lion-grid-stop').disabled",
        arg=view.element_handle(),
        timeout=30_000,
    )
    stopped = view.get_by_role("gridcell", name="Row 2, gamma: stopped")
    before = stopped.locator(".lion-grid-text").inner_text()
    assert "word" in before and "word299" not in before, before
    page.wait_for_timeout(1000)
    assert stopped.locator(".lion-grid-text").inner_text() == before  # it stands still
    assert view.locator(STOPPED).count() == 6
    screenshot(page, f"grid_{name}_stopped")

    # Run again: the cell is replaced, the others stay stopped
    stopped.click()
    view.locator(".lion-grid-rerun").click()
    fresh = view.get_by_role("gridcell", name=re.compile(r"^Row 2, gamma: done"))
    fresh.wait_for(timeout=60_000)
    assert "C again on Prompt two." in fresh.locator(".lion-grid-text").inner_text()
    assert "run 2" in fresh.locator(".lion-grid-figs").inner_text()
    assert view.locator(STOPPED).count() == 5

    # the keys: from Row 2, alpha one step right is Row 2, beta, named as a reader reads it
    view.locator("td[data-key='c1-0']").click()
    page.keyboard.press("ArrowRight")
    focused = view.locator("td.lion-grid-cell:focus")
    assert focused.get_attribute("data-key") == "c1-1"
    assert focused.get_attribute("aria-label").startswith("Row 2, beta: stopped")
    assert view.locator(".lion-grid-chosen").inner_text() == "Row 2, beta:"

    # Enter opens the cell's conversation in a live chat view: a message sent is answered
    page.keyboard.press("Enter")
    chat = view.locator(".lion-grid-chat .lion-view.lion-chat")
    chat.locator(".lion-assistant", has_text="B on Prompt two").wait_for(timeout=30_000)
    prompt = chat.locator("textarea.lion-prompt")
    prompt.fill("And then?")
    prompt.press("Enter")
    chat.locator(".lion-assistant", has_text="B continued.").wait_for(timeout=30_000)
    screenshot(page, f"grid_{name}_continued")


def test_stop_run_again_and_open_in_notebook7(front_page, notebook7):
    write_ipynb(notebook7.root / "grid_stop.ipynb", [STOPPABLE + "view", START])
    open_in_notebook7(front_page, notebook7, "grid_stop.ipynb")
    view = front_page.locator(".lion-view.lion-grid").first
    _stop_rerun_and_open(front_page, view, "notebook7_stop")
    ours = [e for e in front_page.watched.console_errors if "lion_nb" in e]
    assert ours == [], ours


def test_stop_run_again_and_open_in_voila(front_page, voila_root, voila):
    write_ipynb(voila_root / "grid_stop.ipynb", [STOPPABLE + "view", START])
    front_page.goto(voila.url("voila/render/grid_stop.ipynb"))
    view = front_page.locator(".lion-view.lion-grid").first
    _stop_rerun_and_open(front_page, view, "voila_stop")
    ours = [e for e in front_page.watched.console_errors if "lion_nb" in e]
    assert ours == [], ours


MARIMO_NB = """import marimo

app = marimo.App()


@app.cell
def _():
    import marimo as mo
{setup}
    w = mo.ui.anywidget(view)
    _run = asyncio.ensure_future(grid.run())
    w
    return


if __name__ == "__main__":
    app.run()
"""


def test_the_grid_streams_in_marimo(front_page, marimo_root, marimo):
    setup = "\n".join(f"    {line}" if line else "" for line in SETUP.strip().splitlines())
    (marimo_root / "grid.py").write_text(MARIMO_NB.format(setup=setup))
    front_page.goto(marimo.url("?file=grid.py"))
    view = front_page.locator(".lion-view.lion-grid").first
    _streams_and_settles(front_page, view, "marimo", live=False)


def test_stop_run_again_and_open_in_marimo(front_page, marimo_root, marimo):
    setup = "\n".join(f"    {line}" if line else "" for line in STOPPABLE.strip().splitlines())
    (marimo_root / "grid_stop.py").write_text(MARIMO_NB.format(setup=setup))
    front_page.goto(marimo.url("?file=grid_stop.py"))
    view = front_page.locator(".lion-view.lion-grid").first
    _stop_rerun_and_open(front_page, view, "marimo_stop")
    ours = [e for e in front_page.watched.console_errors if "lion_nb" in e]
    assert ours == [], ours


# ----- contrast: each front end's light and dark theme ------------------------------------------
WANT = {"lion-grid-figs", "lion-grid-sum", "lion-grid-ins", "lion-grid-del", "lion-grid-col"}


def _reads_at_aa(page: Any, view: Any, name: str) -> None:
    """The settled grid, a cell chosen and its diff open: every text at WCAG AA."""
    view.locator("td.lion-grid-done").nth(5).wait_for(timeout=90_000)
    view.locator("td[data-key='c1-1']").click()
    view.get_by_role("button", name="Diff of row 2, beta against the baseline").click()
    view.locator(".lion-grid-detail[data-what='diff']").wait_for(timeout=30_000)
    page.wait_for_timeout(300)
    count, low = contrast_failures(page, view)
    kinds = set(
        view.locator("[class*='lion-grid-']").evaluate_all(
            "(els) => els.flatMap((e) => [...e.classList])"
        )
    )
    screenshot(page, f"grid_{name}")
    assert WANT <= kinds, kinds
    assert count > 20, count
    assert not low, "\n".join(low)


@pytest.mark.parametrize("theme", ["JupyterLab Light", "JupyterLab Dark"])
def test_the_grid_reads_at_aa_in_notebook7(front_page, notebook7, theme):
    short = theme.split()[-1].lower()
    write_ipynb(notebook7.root / f"grid_{short}.ipynb", [SETUP + "view", START])
    nb7_theme(notebook7, theme)
    try:
        open_in_notebook7(front_page, notebook7, f"grid_{short}.ipynb")
        light = front_page.evaluate("document.body.dataset.jpThemeLight")
        assert light == str(short == "light").lower()
        _reads_at_aa(front_page, front_page.locator(".lion-view.lion-grid").first, f"nb7_{short}")
    finally:
        nb7_theme(notebook7, "JupyterLab Light")


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_grid_reads_at_aa_in_voila(front_page, voila_root, voila, theme):
    write_ipynb(voila_root / f"grid_{theme}.ipynb", [SETUP + "view", START])
    front_page.goto(voila.url(f"voila/render/grid_{theme}.ipynb?theme={theme}"))
    view = front_page.locator(".lion-view.lion-grid").first
    view.wait_for(timeout=120_000)
    assert (
        front_page.evaluate("document.body.dataset.jpThemeLight") == str(theme == "light").lower()
    )
    _reads_at_aa(front_page, view, f"voila_{theme}")


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_grid_reads_at_aa_in_marimo(front_page, marimo_root, marimo, theme):
    found = marimo_root.parent.glob("marimo-home*/xdg-config/marimo/marimo.toml")
    (config,) = {p.resolve() for p in found}  # marimo-homeN and its marimo-homecurrent link
    saved = config.read_text()
    config.write_text(saved + f'\n[display]\ntheme = "{theme}"\n')  # read at each page load
    try:
        setup = "\n".join(f"    {line}" if line else "" for line in SETUP.strip().splitlines())
        (marimo_root / f"grid_{theme}.py").write_text(MARIMO_NB.format(setup=setup))
        front_page.goto(marimo.url(f"?file=grid_{theme}.py"))
        view = front_page.locator(".lion-view.lion-grid").first
        view.wait_for(timeout=120_000)
        dark = front_page.evaluate(
            "document.documentElement.classList.contains('dark')"
            " || document.body.classList.contains('dark')"
        )
        assert dark == (theme == "dark")
        _reads_at_aa(front_page, view, f"marimo_{theme}")
    finally:
        config.write_text(saved)
