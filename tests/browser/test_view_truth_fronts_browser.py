"""Views that tell the truth in Notebook 7, Voilà and marimo, in a real chromium (the helpers
and the JupyterLab tests are in ``test_view_truth_browser.py``; playwright's sync API runs one
browser per module): a view whose kernel restarted or stopped says so and disables its
controls; ``show_tokens()`` opens the token view in Voilà; a view shown cells after it was made
shows what happened meanwhile (Notebook 7)."""

from __future__ import annotations

import os
import signal
import time

import pytest

from tests.browser.test_front_ends_browser import open_in_notebook7, write_ipynb
from tests.browser.test_view_truth_browser import (
    MADE_EARLY,
    assert_gone,
    check_open_then_click,
    restart_from_the_menu,
    start_streaming,
    streaming_cell,
    token_cells,
)
from tests.support.front_ends import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]


# ----- Notebook 7 -------------------------------------------------------------------------------
def test_a_restart_in_notebook7_leaves_the_view_saying_its_kernel_is_gone(front_page, notebook7):
    write_ipynb(notebook7.root / "restart.ipynb", [streaming_cell()])
    view = open_in_notebook7(front_page, notebook7, "restart.ipynb")
    start_streaming(front_page, view)
    restart_from_the_menu(front_page)
    assert_gone(front_page, view, "notebook7")


def test_a_view_shown_cells_after_it_was_made_in_notebook7(front_page, notebook7):
    # as in JupyterLab: the updates that came before the view was drawn are asked for
    cells = [MADE_EARLY, "inspector.toggle(3)", "view", "inspector"]
    write_ipynb(notebook7.root / "made_early.ipynb", cells)
    chat = open_in_notebook7(front_page, notebook7, "made_early.ipynb")
    chat.locator(".lion-assistant", has_text="EARLY-REPLY").wait_for(timeout=30_000)
    assert "No messages yet" not in chat.inner_text()
    detail = front_page.locator(".lion-inspector .lion-tl-detail[data-index='3']")
    detail.wait_for(timeout=30_000)
    assert "answer 1" in detail.inner_text()


# ----- Voilà: no restart in its page; the kernel dies (killed) and the server restarts it ------
def test_a_kernel_that_dies_under_voila_leaves_the_view_saying_so(front_page, voila_root, voila):
    pid_file = voila_root / "restart.pid"
    write_ipynb(voila_root / "restart.ipynb", [streaming_cell(pid_file)])
    front_page.goto(voila.url("voila/render/restart.ipynb"))
    view = front_page.locator(".lion-view.lion-chat").first
    start_streaming(front_page, view)
    os.kill(int(pid_file.read_text()), signal.SIGKILL)
    assert_gone(front_page, view, "voila")


# ----- marimo: a restart draws the cell's output anew; a kernel that stops leaves the view -----
MARIMO_NB = """import marimo

app = marimo.App()


@app.cell
def _():
    import marimo as mo
{setup}
    w = mo.ui.anywidget(view)
    w
    return


if __name__ == "__main__":
    app.run()
"""


def test_a_kernel_that_stops_under_marimo_leaves_the_view_saying_so(
    front_page, marimo_root, marimo
):
    pid_file = marimo_root / "restart.pid"
    lines = streaming_cell(pid_file).strip().splitlines()[:-1]  # the view goes in mo.ui
    setup = "\n".join(f"    {line}" if line else "" for line in lines)
    (marimo_root / "restart.py").write_text(MARIMO_NB.format(setup=setup))
    front_page.goto(marimo.url("?file=restart.py"))
    view = front_page.locator(".lion-view.lion-chat").first
    start_streaming(front_page, view)
    pid = int(pid_file.read_text())
    assert pid != marimo.process.pid  # the kernel, not the server
    os.kill(pid, signal.SIGKILL)
    assert_gone(front_page, view, "marimo")


def test_a_restart_in_marimo_draws_the_view_anew_with_nothing_running(
    front_page, marimo_root, marimo
):
    lines = streaming_cell().strip().splitlines()[:-1]
    setup = "\n".join(f"    {line}" if line else "" for line in lines)
    (marimo_root / "restart_menu.py").write_text(MARIMO_NB.format(setup=setup))
    front_page.goto(marimo.url("?file=restart_menu.py"))
    view = front_page.locator(".lion-view.lion-chat").first
    start_streaming(front_page, view)
    front_page.get_by_test_id("notebook-menu-dropdown").click()
    front_page.get_by_role("menuitem", name="Restart kernel").click()
    front_page.locator("[role=alertdialog] button, [role=dialog] button").filter(
        has_text="Restart"
    ).first.click()
    # the cell runs again in the new kernel: one view, idle, nothing streaming or stoppable
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        views = front_page.locator(".lion-view.lion-chat")
        if views.count() == 1 and views.first.locator(".lion-user").count() == 0:
            break
        front_page.wait_for_timeout(500)
    fresh = front_page.locator(".lion-view.lion-chat").first
    fresh.locator(".lion-view-statusline:has-text('ready')").wait_for(timeout=30_000)
    screenshot(front_page, "view_truth_marimo_restarted")
    assert fresh.locator(".lion-streaming").count() == 0
    assert fresh.locator("button.lion-stop").is_disabled()
    assert fresh.locator("button.lion-send").is_enabled()


def test_show_tokens_opens_the_token_view_in_voila(front_page, voila_root, voila):
    write_ipynb(voila_root / "tokens.ipynb", token_cells())
    front_page.goto(voila.url("voila/render/tokens.ipynb"))
    root = front_page.locator(".lion-view.lion-chat").first
    root.wait_for(timeout=120_000)
    check_open_then_click(front_page, root, "voila")
