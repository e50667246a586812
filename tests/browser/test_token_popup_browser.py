"""The token view's popup and Sample ×5 in JupyterLab + chromium, as a reader meets them: the
popup of a token's alternatives closes when the pointer leaves the token and the popup (not on
the way from one to the other), when focus leaves both, on Escape wherever the focus is, and on a
click anywhere else (the prompt box too); its alternatives are buttons in a named list in the
accessibility tree; on a 1280×720 window at 150 % zoom it never covers its token; a token
sampled from outside the stored top K says so. Sample ×5 shows the temperature and top-p it
samples at (0.8 for a model at temperature 0), set from the keyboard, and its panel's title says
what it compares. What this adds reads at WCAG AA in JupyterLab Light and Dark.
Screenshots go to ``test-artifacts/``."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.test_theme_contrast_browser import AA, MEASURE, set_theme
from tests.support.front_ends import screenshot, watched_page
from tests.support.lab_notebooks import run_notebook_in_lab, shutdown_kernels, write_notebook

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]

READY = "POPUP-" + "READY"

# "They found a relic under the sand." — " relic" (p = 1.1 %) sampled from outside the 8 most
# likely alternatives stored; the model samples at temperature 0; LINES lines of it
SETUP = """
import math
import lion_nb
from lion_nb import Session, iModel

def tok(text, p, *alts):
    top = sorted([(text, math.log(p)), *[(t, math.log(q)) for t, q in alts]], key=lambda a: -a[1])
    return {{"text": text, "logprob": math.log(p), "top": [list(a) for a in top]}}

RUINS = [(" ruin", 0.3), (" tomb", 0.2), (" temple", 0.12), (" wall", 0.08), (" statue", 0.06),
         (" road", 0.05), (" coin", 0.04), (" map", 0.03)]
RELIC = {{"text": " relic", "logprob": math.log(0.011),
          "top": [[t, math.log(q)] for t, q in RUINS]}}
LINE = [tok("They", 0.9, ("We", 0.05)), tok(" found", 0.6, (" saw", 0.3)),
        tok(" a", 0.8, (" the", 0.15)), RELIC, tok(" under", 0.5, (" in", 0.3)),
        tok(" the", 0.9), tok(" sand", 0.4, (" dunes", 0.3)), tok(".\\n", 0.95)]
SAMPLES = ["They dug.", "They found gold.", "They left.", "They found it.", "They slept."]
model = iModel(provider="scripted", logprobs=8, temperature=0,
               replies=[{{"tokens": LINE * {lines}}}, *SAMPLES])
branch = Session().new_branch(chat_model=model, name="dig")
view = lion_nb.view(branch, height={height})
view
"""

RUN = f"""
await view.asend("Tell me what they found")
print("{READY}")
"""

TOKENS = ".lion-tokens .lion-tokens-text .lion-tok[data-token-index]"


@pytest.fixture(autouse=True)
def _no_kernels_left(jupyter_lab):
    yield
    shutdown_kernels(jupyter_lab)
    set_theme(jupyter_lab, "JupyterLab Light")  # the other tests expect the default


def _open(page: Any, lab: Any, name: str, *, lines: int = 1, height: int = 420) -> Any:
    setup = SETUP.format(lines=lines, height=height)
    run_notebook_in_lab(page, lab, write_notebook(lab, name, [setup, RUN]))
    page.get_by_text(READY).first.wait_for(timeout=120_000)
    root = page.locator(".lion-front").first
    root.locator(".lion-assistant[data-id]").last.locator(".lion-tokens-btn").click()
    root.locator(TOKENS).nth(8 * lines - 1).wait_for(timeout=30_000)
    return root


def _focused(page: Any) -> dict[str, Any]:
    return page.evaluate(
        """() => { const a = document.activeElement;
          return {token: a.getAttribute('data-token-index'),
                  inPopup: !!a.closest('.lion-tok-pop'), cls: String(a.className)}; }"""
    )


def test_the_popup_closes_on_leave_blur_escape_and_a_click_outside(page, jupyter_lab):
    root = _open(page, jupyter_lab, "popup_dismiss.ipynb")
    tokens, pop = root.locator(TOKENS), root.locator(".lion-tok-pop")

    # leave: the way from the token into its popup keeps it; leaving both closes it
    tokens.nth(1).hover()
    pop.locator(".lion-tok-alt").first.wait_for(timeout=15_000)
    token, box = tokens.nth(1).bounding_box(), pop.bounding_box()
    x = token["x"] + min(token["width"], box["width"]) / 2
    page.mouse.move(x, box["y"] + box["height"] - 6, steps=5)
    page.wait_for_timeout(900)  # three times the grace
    assert pop.is_visible()
    assert pop.locator(".lion-tok-pop-token").inner_text() == "␣found"
    page.mouse.move(5, 5, steps=3)  # Lab's menu bar: out of both
    pop.wait_for(state="hidden", timeout=10_000)

    # Escape with the focus in the popup: closed, the focus back on its token
    tokens.nth(0).focus()  # the token view's one tab stop; arrow keys move it
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    pop.locator(".lion-tok-pop-token", has_text="␣a").wait_for(timeout=15_000)
    page.keyboard.press("ArrowDown")
    assert _focused(page)["inPopup"]
    page.keyboard.press("Escape")
    pop.wait_for(state="hidden", timeout=5_000)
    assert _focused(page)["token"] == "2"

    # blur: the focus leaves the token (Shift+Tab: the panel's Close) and the popup closes
    page.keyboard.press("ArrowRight")
    pop.locator(".lion-tok-pop-token", has_text="␣relic").wait_for(timeout=15_000)
    page.keyboard.press("Shift+Tab")
    pop.wait_for(state="hidden", timeout=5_000)
    assert _focused(page)["token"] is None and not _focused(page)["inPopup"]

    # Escape with the focus elsewhere (the prompt box) closes a popup the pointer opened
    tokens.nth(4).hover()
    pop.locator(".lion-tok-pop-token", has_text="␣under").wait_for(timeout=15_000)
    prompt = root.locator(".lion-prompt")
    prompt.focus()
    assert pop.is_visible()
    page.keyboard.press("Escape")
    pop.wait_for(state="hidden", timeout=5_000)

    # a click outside — into the prompt box — closes it as the press goes down (before the
    # focus moves: the popup was opened from the keyboard, so neither leave nor blur did it)
    tokens.nth(0).focus()
    page.keyboard.press("ArrowRight")
    pop.locator(".lion-tok-pop-token", has_text="␣found").wait_for(timeout=15_000)
    prompt.evaluate(
        """(el) => el.addEventListener('pointerdown', () => {
             window.__popupAtPress = el.closest('.lion-front').querySelector('.lion-tok-pop').hidden;
           }, {once: true})"""
    )
    prompt.click()
    assert page.evaluate("window.__popupAtPress") is True
    assert not pop.is_visible()
    # and anywhere else on the page
    tokens.nth(6).hover()
    pop.locator(".lion-tok-pop-token", has_text="␣sand").wait_for(timeout=15_000)
    page.mouse.click(5, 5)
    pop.wait_for(state="hidden", timeout=5_000)
    screenshot(page, "token_popup_dismissed")
    assert page.watched.console_errors == [], page.watched.console_errors


def test_alternatives_are_a_named_list_of_buttons_and_a_token_outside_them_says_so(
    page, jupyter_lab
):
    root = _open(page, jupyter_lab, "popup_roles.ipynb")
    tokens, pop = root.locator(TOKENS), root.locator(".lion-tok-pop")
    tokens.nth(3).hover()
    alternatives = root.get_by_role("list", name="Alternatives to ␣relic")
    alternatives.wait_for(timeout=15_000)
    assert alternatives.get_by_role("listitem").count() == 8
    buttons = alternatives.get_by_role("listitem").get_by_role("button")
    assert buttons.count() == 8
    tree = alternatives.aria_snapshot()
    assert '- list "Alternatives to ␣relic":' in tree, tree
    assert '  - listitem:\n    - button "Fork here with ␣ruin (30.0%)"' in tree, tree
    note = pop.locator(".lion-tok-outside")
    assert note.inner_text() == "“␣relic” (1.1%) is not among the 8 most likely shown"
    screenshot(page, "token_popup_outside_top_k")
    tokens.nth(1).hover()  # a token among its alternatives: no note
    root.get_by_role("list", name="Alternatives to ␣found").wait_for(timeout=15_000)
    assert note.count() == 0
    alternatives = root.get_by_role("list", name="Alternatives to ␣found")
    chosen = alternatives.get_by_role("button", name="␣found, 60.0%, the token the model chose")
    assert chosen.get_attribute("aria-current") == "true"

    # Sample ×5: the temperature it samples at is shown (0.8: the model is at 0), set from
    # the keyboard, and the panel's title says what the five replies compare
    reply = root.locator(".lion-assistant[data-id]").last
    group = reply.get_by_role("group", name="Sample this turn 5 times")
    temperature = group.get_by_role("spinbutton", name="temperature")
    top_p = group.get_by_role("spinbutton", name="top-p")
    assert (temperature.input_value(), top_p.input_value()) == ("0.8", "0.95")
    temperature.focus()
    for _ in range(4):
        page.keyboard.press("ArrowUp")
    assert temperature.input_value() == "1.2"
    page.keyboard.press("Tab")
    assert _focused(page)["cls"] == "lion-sample-input"
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    panel = root.locator(".lion-compare-panel .lion-samples")
    panel.wait_for(timeout=30_000)
    title = panel.locator(".lion-tokens-title").inner_text()
    assert title.startswith("5 samples at temperature 1.2, top-p 0.9 · "), title
    assert title.endswith(" shared"), title
    # the reply shown now (the first sample; the view may be drawn anew) keeps what was set
    page.wait_for_function(
        """() => [...document.querySelectorAll('.lion-front .lion-assistant[data-id]')].pop()
             ?.querySelector('.lion-sample-input[name=top_p]')?.value === '0.9'""",
        timeout=15_000,
    )
    shown = root.locator(".lion-assistant[data-id]").last
    assert shown.get_by_role("spinbutton", name="temperature").input_value() == "1.2"
    screenshot(page, "token_sample_at")
    assert page.watched.console_errors == [], page.watched.console_errors


def _overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return (
        a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and a["y"] < b["y"] + b["height"]
        and b["y"] < a["y"] + a["height"]
    )


def test_at_150_percent_zoom_the_popup_never_covers_its_token(browser, jupyter_lab):
    with watched_page(browser, width=1280, height=720, zoom=1.5) as page:
        assert page.evaluate("[innerWidth, innerHeight]") == [853, 480]
        root = _open(page, jupyter_lab, "popup_zoom.ipynb", lines=6, height=300)
        tokens, pop = root.locator(TOKENS), root.locator(".lion-tok-pop")
        for i in (0, 3, 19, 27, 35, 44, 47):
            tokens.nth(i).hover()
            pop.locator(".lion-tok-alt").first.wait_for(timeout=15_000)
            page.wait_for_timeout(150)  # placed again after any scroll the hover caused
            token, box = tokens.nth(i).bounding_box(), pop.bounding_box()
            assert not _overlap(token, box), (i, token, box)
            assert box["y"] >= -1 and box["y"] + box["height"] <= 481, (i, box)
            if i == 44:
                screenshot(page, "token_popup_zoom_150")
        assert page.watched.console_errors == [], page.watched.console_errors


# MEASURE reads the elements with text of their own; an input's text is its value
MEASURE_INPUTS = MEASURE.replace(
    "if (!own.length ||",
    "if (el.tagName === 'INPUT') own.push({ textContent: el.value });\n      if (!own.length ||",
)
ADDED = ("lion-tok-outside", "lion-tok-alt", "lion-sample", "lion-tok-pop")


@pytest.mark.parametrize("theme", ["JupyterLab Light", "JupyterLab Dark"])
def test_what_the_popup_and_sample_controls_add_reads_at_aa(page, jupyter_lab, theme):
    set_theme(jupyter_lab, theme)
    name = "popup_" + theme.split()[-1].lower()
    root = _open(page, jupyter_lab, f"{name}.ipynb")
    root.locator(TOKENS).nth(3).hover()
    root.locator(".lion-tok-outside").wait_for(timeout=15_000)
    page.wait_for_timeout(300)
    measured = [m for m in page.evaluate(MEASURE_INPUTS) if any(c in m["cls"] for c in ADDED)]
    seen = {c for m in measured for c in ADDED if c in m["cls"]}
    assert {"lion-tok-outside", "lion-tok-alt", "lion-sample"} <= seen, measured
    assert any(m["tag"] == "input" for m in measured)
    screenshot(page, f"{name}_popup_contrast")
    failures = [
        f"{m['ratio']}:1 {m['fg']} on {m['bg']} <{m['tag']} class={m['cls']!r}> {m['text']!r}"
        for m in measured
        if m["ratio"] < AA
    ]
    assert not failures, "\n".join(failures)
