"""Views that tell the truth, in a real chromium (issue: off the happy path): a view whose
kernel restarted says so and disables its controls (JupyterLab, Notebook 7, Voilà, marimo);
the cassette badge follows ``%lion_cassette --off`` at once; a paste too long for the model
comes back to the prompt box."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import (
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


# ----- the token view that show_tokens() opens, in Voilà (and the first click in Lab) ----------
def token_cells() -> list[str]:
    from tests.browser.test_tokens_browser import SETUP

    setup = SETUP.replace("view = lion_nb.view(branch, height=460)\nview\n", "")
    return [
        setup + "view = lion_nb.view(branch, height=460)\nview",
        'await view.asend("Tell me a story")\nview.show_tokens()',
    ]


def check_open_then_click(page: Any, root: Any, name: str) -> None:
    """The token view show_tokens() opened is shown; each click on Tokens does what it says."""
    reply = root.locator(".lion-assistant").last
    root.locator(".lion-tokens .lion-tok[data-token-index]").nth(6).wait_for(timeout=60_000)
    control = reply.locator(".lion-tokens-btn")
    assert control.get_attribute("aria-pressed") == "true"
    screenshot(page, f"view_truth_tokens_{name}")
    control.click()  # open: the click closes it
    page.wait_for_function(
        "(r) => !r.querySelector('.lion-tokens')", arg=reply.element_handle(), timeout=10_000
    )
    assert control.get_attribute("aria-pressed") == "false"
    control.click()  # closed: the click opens it, at once
    reply.locator(".lion-tokens .lion-tok[data-token-index]").nth(6).wait_for(timeout=10_000)
    assert control.get_attribute("aria-pressed") == "true"


def test_show_tokens_then_the_first_click_in_lab(page, jupyter_lab, _no_kernels_left):
    run_notebook_in_lab(page, jupyter_lab, write_notebook(jupyter_lab, "tok.ipynb", token_cells()))
    root = page.locator(".lion-front").first
    check_open_then_click(page, root, "lab")
