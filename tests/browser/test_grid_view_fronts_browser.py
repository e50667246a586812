"""The grid view in Notebook 7, Voilà and marimo, in a real chromium (the JupyterLab tests are
in ``test_grid_view_browser.py``; playwright's sync API runs one browser per module): the cells
of a 2 × 3 grid on the scripted model stream and settle, named for a screen reader; Stop is
enabled only while the grid runs; Enter on a cell opens its conversation in a chat view under
the grid (Notebook 7, Voilà: the chat view is another model of the same module, drawn by it)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.test_front_ends_browser import open_in_notebook7, write_ipynb
from tests.support.front_ends import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]

SETUP = """
import asyncio
import lion_nb
from lion_nb import Grid, iModel

def model(tag):
    def answer(request):
        return {"text": f"{tag} on {request.messages[-1]['content']}: "
                 + " ".join(f"word{k}" for k in range(40)), "delay": 0.03}
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
        assert view.locator(".lion-grid-stop").is_enabled()
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
