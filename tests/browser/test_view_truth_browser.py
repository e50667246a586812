"""Views that tell the truth, in a real chromium (issue: off the happy path): a view whose
kernel restarted says so and disables its controls (JupyterLab, Notebook 7, Voilà, marimo);
the cassette badge follows ``%lion_cassette --off`` at once; a paste too long for the model
comes back to the prompt box."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import (
    kernel_execute,
    run_notebook_in_lab,
    screenshot,
    shutdown_kernels,
    write_notebook,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]

STREAMING = """
import os
import lion_nb
from lion_nb import Branch, iModel
words = [f"tok{i} " for i in range(5000)]
branch = Branch(system="You stream.", chat_model=iModel(
    provider="scripted", replies=[{"chunks": words, "delay": 0.02}]))
view = lion_nb.view(branch, title="restart test")
PID_FILE and open(PID_FILE, "w").write(str(os.getpid()))
"""
GONE = "kernel is gone"


def streaming_cell(pid_file: Path | None = None) -> str:
    return f"PID_FILE = {str(pid_file) if pid_file else ''!r}\n" + STREAMING + "view"


def start_streaming(page: Any, view: Any) -> None:
    """Enter sends; the reply streams; a draft is typed meanwhile."""
    prompt = view.locator("textarea.lion-prompt")
    prompt.wait_for(timeout=120_000)
    prompt.click()
    prompt.fill("stream please")
    prompt.press("Enter")
    page.wait_for_function(
        "(v) => [...v.querySelectorAll('.lion-assistant')].some(e => e.innerText.includes('tok20'))",
        arg=view.element_handle(),
        timeout=60_000,
    )
    prompt.fill("MY-DRAFT while it streams")
    assert view.locator(".lion-streaming").count() >= 1
    assert view.locator("button.lion-stop").is_enabled()


def assert_gone(page: Any, view: Any, name: str) -> None:
    """The view says its kernel is gone; nothing looks running; its controls are disabled;
    the prompt box keeps the draft, read-only."""
    view.locator(f".lion-view-statusline:has-text({GONE!r})").wait_for(timeout=60_000)
    screenshot(page, f"view_truth_gone_{name}")
    status = view.locator(".lion-view-statusline").inner_text()
    assert "run its cell again" in status and "communicate" not in status, status
    assert view.locator(".lion-streaming").count() == 0
    assert view.locator(".lion-streaming-msg").count() == 0
    assert view.locator("button.lion-stop").is_disabled()
    assert view.locator("button.lion-send").is_disabled()
    assert view.locator("button.lion-regenerate, button.lion-edit-msg").evaluate_all(
        "els => els.every(e => e.disabled)"
    )
    prompt = view.locator("textarea.lion-prompt")
    assert prompt.input_value() == "MY-DRAFT while it streams"
    assert prompt.evaluate("e => e.readOnly")
    prompt.press("Enter")  # no "A reply is running", nothing sent
    page.wait_for_timeout(300)
    assert "A reply is running" not in view.locator(".lion-view-statusline").inner_text()
    assert GONE in view.locator(".lion-view-statusline").inner_text()
    text = view.locator(".lion-assistant").last.inner_text()
    page.wait_for_timeout(1000)
    assert view.locator(".lion-assistant").last.inner_text() == text  # it grows no more


# ----- JupyterLab -------------------------------------------------------------------------------
@pytest.fixture
def _no_kernels_left(jupyter_lab):
    yield
    shutdown_kernels(jupyter_lab)


def restart_from_the_menu(page: Any) -> None:
    """Kernel -> Restart Kernel… and accept the dialog, as a user does."""
    page.get_by_role("menuitem", name="Kernel", exact=True).click()
    page.get_by_role("menuitem", name="Restart Kernel…").click()
    page.locator(".jp-Dialog .jp-mod-accept").click()


def test_a_restart_in_lab_leaves_the_view_saying_its_kernel_is_gone(
    page, jupyter_lab, _no_kernels_left
):
    nb = write_notebook(jupyter_lab, "restart.ipynb", [streaming_cell()])
    run_notebook_in_lab(page, jupyter_lab, nb)
    view = page.locator(".lion-view.lion-chat").first
    start_streaming(page, view)
    restart_from_the_menu(page)
    assert_gone(page, view, "lab")
    assert page.watched.console_errors == [] or all(
        "lion_nb" not in e for e in page.watched.console_errors
    ), page.watched.console_errors


# ----- Notebook 7 -------------------------------------------------------------------------------
def test_a_restart_in_notebook7_leaves_the_view_saying_its_kernel_is_gone(front_page, notebook7):
    from tests.browser.test_front_ends_browser import open_in_notebook7, write_ipynb

    write_ipynb(notebook7.root / "restart.ipynb", [streaming_cell()])
    view = open_in_notebook7(front_page, notebook7, "restart.ipynb")
    start_streaming(front_page, view)
    restart_from_the_menu(front_page)
    assert_gone(front_page, view, "notebook7")


# ----- Voilà: no restart in its page; the kernel dies (killed) and the server restarts it ------
def test_a_kernel_that_dies_under_voila_leaves_the_view_saying_so(front_page, voila_root, voila):
    from tests.browser.test_front_ends_browser import write_ipynb

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
