"""The chat view's Compare in marimo, in a real chromium (JupyterLab's is in
``test_conversation_browser.py``): a reply regenerated from the page, the switcher back to the
first alternative, then Compare shows the two alternatives side by side under the chat view, and
Close takes the comparison away. In marimo the comparison is made by a click, while no cell runs
(``widgets.marimo_cell``)."""

from __future__ import annotations

import pytest

from tests.support.front_ends import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]

MARIMO_NB = """import marimo

app = marimo.App()


@app.cell
def _():
    import marimo as mo
    import lion_nb
    from lion_nb import Session, iModel
    model = iModel(provider="scripted", replies=["FIRST-ANSWER", "SECOND-ANSWER"],
                   default_reply="DEFAULT-REPLY")
    branch = Session().new_branch(system="You are terse.", chat_model=model, name="try again")
    view = mo.ui.anywidget(lion_nb.view(branch, height=420))
    view
    return


if __name__ == "__main__":
    app.run()
"""


def test_compare_two_alternatives_in_marimo(front_page, marimo_root, marimo):
    page = front_page
    (marimo_root / "compare.py").write_text(MARIMO_NB)
    page.goto(marimo.url("?file=compare.py"))
    root = page.locator(".lion-view.lion-chat").first
    prompt = root.locator(".lion-prompt")
    prompt.wait_for(timeout=120_000)
    prompt.fill("hello")
    prompt.press("Enter")
    root.locator(".lion-assistant:has-text('FIRST-ANSWER')").wait_for(timeout=30_000)
    # regenerate: a second alternative, shown; the switcher goes back to the first
    root.locator(".lion-assistant .lion-act:has-text('Regenerate')").click()
    root.locator(".lion-assistant:has-text('SECOND-ANSWER')").wait_for(timeout=30_000)
    root.locator(".lion-switch-pos:has-text('2/2')").wait_for(timeout=10_000)
    root.locator(".lion-switch .lion-act:has-text('‹')").click()
    root.locator(".lion-switch-pos:has-text('1/2')").wait_for(timeout=10_000)
    # compare: both alternatives side by side, under the chat view
    root.locator(".lion-switch .lion-act:has-text('Compare')").click()
    panel = root.locator(".lion-compare-panel")
    panel.wait_for(timeout=15_000)
    compare = panel.locator(".lion-compare")
    compare.wait_for(timeout=10_000)
    assert "Alternative 1" in compare.inner_text() and "Alternative 2" in compare.inner_text()
    assert "FIRST-ANSWER" in compare.inner_text() and "SECOND-ANSWER" in compare.inner_text()
    panel.scroll_into_view_if_needed()
    screenshot(page, "marimo_compare")
    panel.locator(".lion-act:has-text('Close')").click()
    panel.wait_for(state="hidden", timeout=10_000)
    ours = [e for e in page.watched.console_errors if "lion_nb" in e]
    assert ours == [], ours
