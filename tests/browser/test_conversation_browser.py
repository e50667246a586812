"""The conversation controls in JupyterLab + chromium: Stop from the page records what the view showed, and the
conversation controls (regenerate, edit, the switcher, clear, continue, compare, copy of an
alternative) — each checked against what the branches hold afterwards, with a screenshot of
each state (test-artifacts/)."""

from __future__ import annotations

import json
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

# the last cell of each notebook: what the view's branches hold, printed as one JSON line (run
# again from the page after each step, numbered so a step waits for its own report)
REPORT = """
import json as _json
_n = globals().get("_n", 0) + 1
_conv = view.conversation
def _msgs(b):
    return [[m.role, m.text[:80], bool(m.metadata.get("stopped"))] for m in b.messages]
_req = model.provider.requests[-1].messages if model.provider.requests else []
print(f"REPORT-{_n}", _json.dumps({
    "shown": _msgs(view.branch),
    "original": _msgs(branch),
    "same": view.branch is branch,
    "branches": len(_conv.branches),
    "request": [[m["role"], str(m["content"])[:80]] for m in _req],
}))
"""


@pytest.fixture(autouse=True)
def _no_kernels_left(jupyter_lab):
    yield
    shutdown_kernels(jupyter_lab)


def _open(page: Any, lab: Any, name: str, setup: str) -> Any:
    nb = write_notebook(lab, name, [setup])
    run_notebook_in_lab(page, lab, nb)
    root = page.locator(".lion-front").first
    root.locator(".lion-prompt").wait_for(timeout=60_000)
    return root


def report(lab: Any) -> dict[str, Any]:
    """What the branches hold, asked of the notebook's kernel by a second client."""
    text = kernel_execute(lab, REPORT, timeout=30)
    return json.loads(text[text.index("{") :])


def _setup(replies: str, **view_kw: str) -> str:
    kw = "".join(f", {k}={v}" for k, v in view_kw.items())
    return f"""
import lion_nb
from lion_nb import Session, iModel
model = iModel(provider="scripted", replies={replies}, default_reply="DEFAULT-REPLY")
branch = Session().new_branch(system="You are terse.", chat_model=model, name="try again")
view = lion_nb.view(branch, height=420{kw})
view
"""


def test_stop_from_the_page_records_the_partial_reply_and_the_next_send_sends_it(page, jupyter_lab):
    words = '[f"token{i} " for i in range(3000)]'
    root = _open(
        page,
        jupyter_lab,
        "stop_records.ipynb",
        _setup(f'[{{"chunks": {words}, "delay": 0.02}}, "AFTER-STOP-REPLY"]'),
    )
    prompt = root.locator(".lion-prompt")
    prompt.fill("A very long answer please")
    prompt.press("Enter")
    page.wait_for_function(
        "() => [...document.querySelectorAll('.lion-front .lion-assistant')]"
        ".some(e => e.innerText.includes('token30 '))",
        timeout=30_000,
    )
    prompt.press("Escape")
    root.locator(".lion-stopped-msg").wait_for(timeout=15_000)
    page.wait_for_timeout(500)
    shown = root.locator(".lion-assistant").last.inner_text()
    screenshot(page, "conversation_stopped_recorded")
    state = report(jupyter_lab)
    roles = [m[0] for m in state["shown"]]
    assert roles == ["system", "user", "assistant"], state
    assert state["shown"][1][1] == "A very long answer please"
    reply = state["shown"][2]
    assert reply[2] is True and reply[1].startswith("token0 token1")  # marked stopped
    assert "token2999" not in shown and reply[1].split()[-1] in shown  # what the page showed
    # the next Send sends the instruction and the partial reply
    prompt.fill("and then?")
    prompt.press("Enter")
    root.locator(".lion-assistant:has-text('AFTER-STOP-REPLY')").wait_for(timeout=30_000)
    state = report(jupyter_lab)
    assert [r[0] for r in state["request"]] == ["system", "user", "assistant", "user"], state
    assert state["request"][1][1] == "A very long answer please"
    assert state["request"][2][1].startswith("token0 token1")
    assert state["request"][3][1] == "and then?"
    assert page.watched.console_errors == [], page.watched.console_errors


def _clipboard(page: Any, want: str, timeout: float = 10.0) -> str:
    text = ""
    for _ in range(int(timeout * 10)):
        text = page.evaluate("navigator.clipboard.readText()")
        if text == want:
            break
        page.wait_for_timeout(100)
    return text


def _texts(messages: list[list[Any]]) -> list[str]:
    return [m[1] for m in messages]


def test_regenerate_switch_compare_and_copy_of_an_alternative(page, jupyter_lab):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=jupyter_lab.base)
    root = _open(page, jupyter_lab, "regenerate.ipynb", _setup('["FIRST-ANSWER", "SECOND-ANSWER"]'))
    prompt = root.locator(".lion-prompt")
    prompt.fill("hello")
    prompt.press("Enter")
    root.locator(".lion-assistant:has-text('FIRST-ANSWER')").wait_for(timeout=30_000)
    # regenerate: a new reply on a fork, shown; the original keeps its messages
    root.locator(".lion-assistant .lion-act:has-text('Regenerate')").click()
    root.locator(".lion-assistant:has-text('SECOND-ANSWER')").wait_for(timeout=30_000)
    root.locator(".lion-switch-pos:has-text('2/2')").wait_for(timeout=10_000)
    assert root.locator(".lion-assistant:has-text('FIRST-ANSWER')").count() == 0
    screenshot(page, "conversation_regenerated")
    state = report(jupyter_lab)
    assert _texts(state["shown"]) == ["You are terse.", "hello", "SECOND-ANSWER"], state
    assert _texts(state["original"]) == ["You are terse.", "hello", "FIRST-ANSWER"], state
    assert state["same"] is False and state["branches"] == 2
    # the switcher goes back to the first alternative
    root.locator(".lion-switch .lion-act:has-text('‹')").click()
    root.locator(".lion-assistant:has-text('FIRST-ANSWER')").wait_for(timeout=10_000)
    root.locator(".lion-switch-pos:has-text('1/2')").wait_for(timeout=10_000)
    screenshot(page, "conversation_switched")
    state = report(jupyter_lab)
    assert state["same"] is True and _texts(state["shown"])[-1] == "FIRST-ANSWER"
    # compare: CompareView on the two alternatives, under the chat view
    root.locator(".lion-switch .lion-act:has-text('Compare')").click()
    panel = root.locator(".lion-compare-panel")
    panel.wait_for(timeout=10_000)
    assert "FIRST-ANSWER" in panel.inner_text() and "SECOND-ANSWER" in panel.inner_text()
    panel.scroll_into_view_if_needed()
    screenshot(page, "conversation_compare")
    panel.locator(".lion-act:has-text('Close')").click()
    panel.wait_for(state="hidden", timeout=10_000)
    # copy of an alternative: the shown one's text
    root.locator(".lion-switch .lion-act:has-text('›')").click()
    root.locator(".lion-assistant:has-text('SECOND-ANSWER')").wait_for(timeout=10_000)
    root.locator(".lion-assistant .lion-copy-msg").click()
    assert _clipboard(page, "SECOND-ANSWER") == "SECOND-ANSWER"
    state = report(jupyter_lab)
    assert _texts(state["original"])[-1] == "FIRST-ANSWER" and state["branches"] == 2
    assert page.watched.console_errors == [], page.watched.console_errors


TRUNCATED = """
from lion_nb.messages import AssistantResponse, Instruction
branch.add_message(Instruction(instruction="Tell a story"))
branch.add_message(AssistantResponse(response="Once upon a", metadata={"finish_reason": "length"}))
view.refresh()
view
"""


def test_continue_edit_and_clear(page, jupyter_lab):
    setup = _setup('["THE-REST", "EDITED-ANSWER", "FRESH-ANSWER"]') + TRUNCATED
    root = _open(page, jupyter_lab, "edit.ipynb", setup)
    # continue a reply cut off by the token limit
    cut = root.locator(".lion-assistant:has-text('Once upon a')")
    cut.locator(".lion-badge:has-text('truncated')").wait_for(timeout=30_000)
    screenshot(page, "conversation_truncated")
    cut.locator(".lion-act:has-text('Continue')").click()
    root.locator(".lion-assistant:has-text('THE-REST')").wait_for(timeout=30_000)
    screenshot(page, "conversation_continued")
    state = report(jupyter_lab)
    shown = _texts(state["shown"])
    assert shown[:3] == ["You are terse.", "Tell a story", "Once upon a"], state
    assert shown[3].startswith("Continue exactly where") and shown[4] == "THE-REST"
    assert state["same"] is True and state["branches"] == 1
    # edit in place: Esc cancels (nothing sent, nothing forked)
    user = root.locator(".lion-user:has-text('Tell a story')")
    user.locator(".lion-act:has-text('Edit')").click()
    box = root.locator(".lion-edit")
    box.wait_for(timeout=10_000)
    assert box.input_value() == "Tell a story"
    box.fill("Tell a short poem")
    screenshot(page, "conversation_edit_open")
    box.press("Escape")
    box.wait_for(state="detached", timeout=10_000)
    assert user.locator(".lion-body").is_visible()
    assert report(jupyter_lab)["branches"] == 1
    # ... and Enter resends the edited message on a fork
    user.locator(".lion-act:has-text('Edit')").click()
    box.fill("Tell a short poem")
    box.press("Enter")
    root.locator(".lion-assistant:has-text('EDITED-ANSWER')").wait_for(timeout=30_000)
    root.locator(".lion-user .lion-switch-pos:has-text('2/2')").wait_for(timeout=10_000)
    screenshot(page, "conversation_edited")
    state = report(jupyter_lab)
    assert _texts(state["shown"]) == ["You are terse.", "Tell a short poem", "EDITED-ANSWER"]
    assert _texts(state["original"])[1:3] == ["Tell a story", "Once upon a"]
    assert len(state["original"]) == 5 and state["same"] is False and state["branches"] == 2
    # clear: a fresh branch with the system message; the others stay alternatives
    root.locator(".lion-clear").click()
    root.locator(".lion-assistant").wait_for(state="detached", timeout=10_000)
    screenshot(page, "conversation_cleared")
    state = report(jupyter_lab)
    assert _texts(state["shown"]) == ["You are terse."] and state["branches"] == 3
    prompt = root.locator(".lion-prompt")
    prompt.fill("fresh start")
    prompt.press("Enter")
    root.locator(".lion-assistant:has-text('FRESH-ANSWER')").wait_for(timeout=30_000)
    root.locator(".lion-user .lion-switch-pos:has-text('3/3')").wait_for(timeout=10_000)
    state = report(jupyter_lab)
    assert _texts(state["shown"]) == ["You are terse.", "fresh start", "FRESH-ANSWER"]
    assert len(state["original"]) == 5
    assert page.watched.console_errors == [], page.watched.console_errors
