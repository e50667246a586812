"""What the chat view says to a person, in JupyterLab + chromium: which alternative it shows,
counted as the ``‹ n/of ›`` switcher counts, with the view's name kept and ids only in the
tooltip; why a regenerate at temperature 0 says the same, with a sampling temperature one
click away; Compare on identical alternatives; the edit box's Save and Cancel; Clear during a
reply stops it and clears; all of it at WCAG AA in Light and Dark."""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.test_theme_contrast_browser import set_theme
from tests.support.front_ends import screenshot
from tests.support.lab_notebooks import (
    kernel_execute,
    run_notebook_in_lab,
    shutdown_kernels,
    write_notebook,
)
from tests.support.page_measure import contrast_failures

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]

GREEDY = """
import lion_nb
from lion_nb import Session, iModel
model = iModel(provider="scripted", temperature=0, replies=[
    "SAME-REPLY", "SAME-REPLY", "WARM-REPLY", "EDITED-REPLY"])
branch = Session().new_branch(system="You are terse.", chat_model=model, name="demo")
view = lion_nb.view(branch, height=420)
view
"""
LONG = """
import lion_nb
from lion_nb import Session, iModel
words = [f"token{i} " for i in range(3000)]
model = iModel(provider="scripted", replies=[
    "FIRST-REPLY", {"chunks": words, "delay": 0.02}, "AFTER-CLEAR"])
branch = Session().new_branch(system="You are terse.", chat_model=model, name="demo")
view = lion_nb.view(branch, height=420)
view
"""
HELD = """
import json as _json
print("HELD", _json.dumps({
    "shown": [[m.role, m.text[:40]] for m in view.branch.messages],
    "original": [[m.role, m.text[:40], bool(m.metadata.get("stopped"))] for m in branch.messages],
    "fork": str(view.branch.id)[:8],
    "options": model.provider.requests[-1].options if model.provider.requests else {},
}))
"""


@pytest.fixture(autouse=True)
def _no_kernels_left(jupyter_lab):
    yield
    shutdown_kernels(jupyter_lab)


def _open(page: Any, lab: Any, name: str, setup: str) -> Any:
    run_notebook_in_lab(page, lab, write_notebook(lab, name, [setup]))
    root = page.locator(".lion-front").first
    root.locator(".lion-prompt").wait_for(timeout=60_000)
    return root


def held(lab: Any) -> dict[str, Any]:
    text = kernel_execute(lab, HELD, timeout=30)
    return json.loads(text[text.index("{") :])  # type: ignore[no-any-return]


def idle(page: Any, root: Any) -> None:
    send = root.locator("button.lion-send").element_handle()
    page.wait_for_function("(b) => !b.disabled", arg=send, timeout=60_000)


def send(page: Any, root: Any, text: str, reply: str) -> None:
    prompt = root.locator(".lion-prompt")
    prompt.fill(text)
    prompt.press("Enter")
    root.locator(f".lion-assistant:has-text('{reply}')").wait_for(timeout=30_000)
    idle(page, root)


def status(root: Any) -> tuple[str, str]:
    """The status line's words and its tooltip."""
    line = root.locator(".lion-view-statusline .lion-view-status").first
    return line.inner_text(), line.get_attribute("title") or ""


def test_regenerate_at_temperature_0_title_status_compare_and_the_edit_box(page, jupyter_lab):
    root = _open(page, jupyter_lab, "words.ipynb", GREEDY)
    send(page, root, "hello", "SAME-REPLY")
    reply = root.locator(".lion-assistant").last
    # at temperature 0 a reply's Regenerate says it gives the same reply; a sampling
    # temperature is one click away
    warm = reply.locator(".lion-regenerate-warm")
    warm.wait_for(timeout=10_000)
    assert warm.inner_text() == "Regenerate at temperature 0.8"
    named = root.get_by_role("button", name="Regenerate at temperature 0.8 (reply 1)")
    assert named.count() == 1  # its accessible name holds its visible words
    assert "same reply" in (reply.locator(".lion-regenerate").get_attribute("title") or "")
    reply.locator(".lion-regenerate").click()
    root.locator(".lion-switch-pos:has-text('2/2')").wait_for(timeout=30_000)
    idle(page, root)
    # the title keeps the view's name and counts as the switcher does
    root.locator(".lion-title:text-is('demo · Alternative 2 of 2')").wait_for(timeout=10_000)
    # the title comes at once, the status line in a message after it
    expect(root.locator(".lion-view-statusline")).to_contain_text(
        "the same reply as alternative 1", timeout=30_000
    )
    words, tip = status(root)
    assert "Alternative 2 of 2 · view.branch now points to it" in words, words
    assert "the same reply as alternative 1: at temperature 0" in words, words
    fork = held(jupyter_lab)["fork"]
    assert fork in tip and fork not in words, (words, tip)  # the id: in the tooltip only
    screenshot(page, "words_same_reply")
    # Compare says why the two are the same
    root.locator(".lion-switch .lion-act:has-text('Compare')").click()
    panel = root.locator(".lion-compare-panel")
    panel.wait_for(timeout=10_000)
    assert "Both say the same, word for word" in panel.inner_text()
    assert "0 differing turns" not in panel.inner_text()
    heads = panel.locator(".lion-compare-head").all_inner_texts()
    assert [h.split("\n")[0] for h in heads] == ["Alternative 1", "Alternative 2"], heads
    screenshot(page, "words_compare_same")
    panel.locator(".lion-act:has-text('Close')").click()
    # one click: another reply, sampled at 0.8
    root.locator(".lion-assistant .lion-regenerate-warm").last.click()
    root.locator(".lion-assistant:has-text('WARM-REPLY')").wait_for(timeout=30_000)
    idle(page, root)
    title = "demo · Alternative 3 of 3 · temperature 0.8"
    root.locator(f".lion-title:text-is('{title}')").wait_for(timeout=10_000)
    assert held(jupyter_lab)["options"]["temperature"] == 0.8
    # the edit box shows Save and Cancel with their keys; Cancel leaves the message as it was
    user = root.locator(".lion-user").last
    user.locator(".lion-edit-msg").click()
    bar = root.locator(".lion-edit-actions")
    bar.wait_for(timeout=10_000)
    assert bar.locator(".lion-edit-save").inner_text() == "Save (Enter)"
    assert bar.locator(".lion-edit-cancel").inner_text() == "Cancel (Esc)"
    assert bar.get_by_role("button", name="Save (Enter)", exact=True).count() == 1
    screenshot(page, "words_edit_box")
    bar.locator(".lion-edit-cancel").click()
    bar.wait_for(state="detached", timeout=10_000)
    assert user.locator(".lion-body").is_visible()
    user.locator(".lion-edit-msg").click()
    root.locator(".lion-edit").fill("hello again")
    root.locator(".lion-edit-actions .lion-edit-save").click()
    root.locator(".lion-assistant:has-text('EDITED-REPLY')").wait_for(timeout=30_000)
    idle(page, root)
    # four branches now; at the edited message there are two versions: title and switcher agree
    root.locator(".lion-user .lion-switch-pos:has-text('2/2')").wait_for(timeout=10_000)
    root.locator(".lion-title:text-is('demo · Alternative 2 of 2')").wait_for(timeout=10_000)
    assert [m[1] for m in held(jupyter_lab)["shown"]][1:] == ["hello again", "EDITED-REPLY"]
    assert page.watched.console_errors == [], page.watched.console_errors


CLEARED = {
    "send": "stopped the reply, then cleared",
    "regenerate": "stopped the reply, then cleared",
    # a reply a cell started: only its cell can stop it; the view clears and says so
    "cell": "the reply a cell is running goes on in the conversation kept",
}


@pytest.mark.parametrize("during", list(CLEARED))
def test_clear_during_a_reply_stops_it_and_clears(page, jupyter_lab, during):
    root = _open(page, jupyter_lab, f"clear_{during}.ipynb", LONG)
    send(page, root, "hello", "FIRST-REPLY")
    if during == "send":
        root.locator(".lion-prompt").fill("a long one")
        root.locator(".lion-prompt").press("Enter")
    elif during == "regenerate":
        root.locator(".lion-assistant .lion-regenerate").click()
    else:
        code = "import asyncio\n_run = asyncio.ensure_future(branch.communicate('from a cell'))"
        kernel_execute(jupyter_lab, code)
    root.locator(".lion-assistant:has-text('token20 ')").wait_for(timeout=30_000)
    root.locator("button.lion-clear").click()
    page.wait_for_function(
        "(said) => document.querySelector('.lion-front .lion-view-statusline').textContent"
        ".includes(said)",
        arg=CLEARED[during],
        timeout=30_000,
    )
    # cleared: no message of the conversation on screen, the branch shown holds only the system
    root.locator(".lion-user").first.wait_for(state="detached", timeout=10_000)
    assert root.locator(".lion-assistant").count() == 0
    state = held(jupyter_lab)
    assert state["shown"] == [["system", "You are terse."]], state
    screenshot(page, f"words_cleared_during_{during}")
    # the next message starts the fresh conversation
    send(page, root, "after clearing", "AFTER-CLEAR")
    state = held(jupyter_lab)
    assert [m[1] for m in state["shown"]] == ["You are terse.", "after clearing", "AFTER-CLEAR"]
    assert page.watched.console_errors == [], page.watched.console_errors


@pytest.mark.parametrize("theme", ["JupyterLab Light", "JupyterLab Dark"])
def test_the_new_words_and_controls_read_at_aa(page, jupyter_lab, theme):
    set_theme(jupyter_lab, theme)
    try:
        name = f"words_{theme.split()[-1].lower()}.ipynb"
        root = _open(page, jupyter_lab, name, GREEDY)
        send(page, root, "hello", "SAME-REPLY")
        root.locator(".lion-assistant .lion-regenerate").click()
        root.locator(".lion-title:has-text('Alternative 2 of 2')").wait_for(timeout=30_000)
        idle(page, root)
        root.locator(".lion-switch .lion-act:has-text('Compare')").click()
        root.locator(".lion-compare-same").wait_for(timeout=10_000)
        root.locator(".lion-user .lion-edit-msg").last.click()
        root.locator(".lion-edit-actions").wait_for(timeout=10_000)
        for shown in (".lion-regenerate-warm", ".lion-view-status code", ".lion-edit-hint"):
            assert root.locator(shown).count() >= 1, shown
        count, low = contrast_failures(page, root)
        screenshot(page, f"words_contrast_{theme.split()[-1].lower()}")
        assert count > 20 and not low, "\n".join(low)
    finally:
        set_theme(jupyter_lab, "JupyterLab Light")
