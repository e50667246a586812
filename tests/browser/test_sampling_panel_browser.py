"""The sampling panel in JupyterLab + chromium: from a token's pop-up ("How sampling chose
this", reached by keyboard too) a panel with sliders for temperature, top-k, top-p and min-p,
starting at the model's own settings (llama.cpp's defaults for the rest), whose bars redraw in
the page at every move — the survivors' probabilities, the cut ones at 0 and marked with the
step that cut them — in llama.cpp's order and temperature first, side by side; its names and
roles in the accessibility tree; AA contrast in JupyterLab Light and Dark; the surprise strip's
axes, labels and entropy line. Screenshots go to ``test-artifacts/``.

``test_the_sampling_panel_figures`` measures what ``benchmarks/bench_sampling_panel.py`` (B17)
reports — the redraw after a slider moves, over 60 moves on a token with 20 alternatives — and
writes it to ``test-artifacts/sampling_panel_browser.json``; it asserts only bounds that hold
on a busy machine.
"""

from __future__ import annotations

import json
import statistics
from typing import Any

import pytest

from tests.browser.test_theme_contrast_browser import AA, MEASURE, set_theme
from tests.support.front_ends import ARTIFACTS, screenshot
from tests.support.lab_notebooks import run_notebook_in_lab, shutdown_kernels, write_notebook

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]

READY = "SAMPLING-" + "READY"

# "The cat sat on the mat." — " mat" (token 6) has three alternatives; "." (token 7) twenty.
# The model is asked at temperature 1.0 and says nothing of the rest.
SETUP = """
import math
import lion_nb
from lion_nb import Session, iModel

def tok(text, p, *alts):
    top = sorted([(text, math.log(p)), *[(t, math.log(q)) for t, q in alts]], key=lambda a: -a[1])
    return {"text": text, "logprob": math.log(p), "top": [list(a) for a in top]}

WIDE = [(f" w{k}", 0.15 * 0.8 ** k) for k in range(19)]
STORY = [tok("The", 0.95, ("A", 0.03)), tok(" cat", 0.7, (" dog", 0.2), (" bird", 0.05)),
         tok(" sat", 0.45, (" ran", 0.35), (" slept", 0.1)),
         tok(" on", 0.2, (" under", 0.5), (" near", 0.2)), tok(" the", 0.97),
         tok(" mat", 0.05, (" sofa", 0.6), (" roof", 0.2)), tok(".", 0.02, *WIDE)]
model = iModel(provider="scripted", logprobs=20, temperature=1.0, replies=[{"tokens": STORY}])
branch = Session().new_branch(system="You tell tiny stories.", chat_model=model, name="story")
view = lion_nb.view(branch, height=640)
view
"""

RUN = f"""
await view.asend("Tell me a story")
print("{READY}")
"""


@pytest.fixture(autouse=True)
def _no_kernels_left(jupyter_lab):
    yield
    shutdown_kernels(jupyter_lab)
    set_theme(jupyter_lab, "JupyterLab Light")  # the other tests expect the default


def _open_tokens(page: Any, lab: Any, name: str, setup: str = SETUP) -> Any:
    run_notebook_in_lab(page, lab, write_notebook(lab, name, [setup, RUN]))
    page.get_by_text(READY).first.wait_for(timeout=120_000)
    root = page.locator(".lion-front").first
    root.locator(".lion-assistant").last.locator(".lion-tokens-btn").click()
    root.locator(".lion-tokens .lion-tok[data-token-index]").nth(6).wait_for(timeout=30_000)
    return root


ASKING = "asking the model for its own"


def _open_panel_by_keyboard(page: Any, root: Any, token: int, settled: bool = True) -> Any:
    """Focus token ``token``, Down into its pop-up, down to "How sampling chose this", Enter;
    ``settled``: then wait until the kernel's answer (the model's own settings) is in the panel
    — the page asks for it when the pop-up opens, and a busy kernel answers after the click."""
    root.locator(".lion-tokens-text .lion-tok").nth(0).focus()
    for _ in range(token):
        page.keyboard.press("ArrowRight")
    root.locator(".lion-tok-pop .lion-sampling-open").wait_for(timeout=15_000)
    for _ in range(30):
        page.keyboard.press("ArrowDown")
        if page.evaluate("document.activeElement.classList.contains('lion-sampling-open')"):
            break
    else:
        raise AssertionError("the opener is not reachable with the arrow keys")
    page.keyboard.press("Enter")
    panel = root.locator(".lion-sampling")
    panel.wait_for(timeout=10_000)
    if settled:
        _wait_for_the_answer(page, panel)
    return panel


def _wait_for_the_answer(page: Any, panel: Any, timeout: float = 30_000) -> None:
    """Until the panel's note no longer says it is asking the kernel for the model's own."""
    page.wait_for_function(
        "([el, asking]) => !el.textContent.includes(asking)",
        arg=[panel.locator(".lion-sampling-note").element_handle(), ASKING],
        timeout=timeout,
    )


def _column(panel: Any, k: int) -> list[tuple[str, str, bool]]:
    rows = panel.locator(".lion-sampling-order").nth(k).locator(".lion-sampling-row")
    return [
        (
            rows.nth(i).locator(".lion-sampling-text").inner_text(),
            rows.nth(i).locator(".lion-sampling-p").inner_text(),
            "lion-sampling-cut" in (rows.nth(i).get_attribute("class") or ""),
        )
        for i in range(rows.count())
    ]


def _slider(page: Any, panel: Any, name: str, *keys: str) -> None:
    panel.locator(f"input[data-setting={name}]").focus()
    for key in keys:
        page.keyboard.press(key)


def test_the_sliders_redraw_the_bars_in_both_orders(page, jupyter_lab):
    root = _open_tokens(page, jupyter_lab, "sampling_panel.ipynb")
    panel = _open_panel_by_keyboard(page, root, 5)  # " mat"
    # the model's own temperature (1.0), llama.cpp's defaults for the rest; focus on a slider
    assert page.evaluate("document.activeElement.dataset.setting") == "temperature"
    values = {
        n: panel.locator(f"input[data-setting={n}]").input_value()
        for n in ("temperature", "top_k", "top_p", "min_p")
    }
    assert values == {"temperature": "1", "top_k": "40", "top_p": "0.95", "min_p": "0.05"}
    note = panel.locator(".lion-sampling-note").inner_text()
    assert "model's own temperature 1" in note and "llama.cpp's defaults for the rest" in note
    assert "3 stored alternatives" in note
    start = _column(panel, 0)
    assert [t for t, _, _ in start] == ["␣sofa", "␣roof", "␣mat"]
    assert [p for _, p, _ in start] == ["70.6%", "23.5%", "5.9%"]  # 0.6, 0.2, 0.05 of 0.85
    assert _column(panel, 1) == start  # at temperature 1 the order does not matter
    screenshot(page, "sampling_panel_start")

    # top-k 1 (Home: off, then one step): two cut, at 0, and named by the step that cut them
    _slider(page, panel, "top_k", "Home", "ArrowRight")
    assert panel.locator("input[data-setting=top_k]").get_attribute("aria-valuetext") == "1"
    for k in (0, 1):
        col = _column(panel, k)
        assert col == [
            ("␣sofa", "100%", False),
            ("␣roof", "cut · top-k", True),
            ("␣mat", "cut · top-k", True),
        ]
    fills = panel.locator(".lion-sampling-cut .lion-tok-bar-fill")
    assert fills.count() == 4 and all(fills.nth(i).bounding_box()["width"] == 0 for i in range(4))

    # top-k off, top-p 0.90, temperature 2: llama.cpp cuts " mat", temperature first keeps it
    _slider(page, panel, "top_k", "Home")
    _slider(page, panel, "top_p", *["ArrowLeft"] * 5)
    _slider(page, panel, "temperature", "End")
    assert panel.locator("input[data-setting=top_p]").input_value() == "0.9"
    llama, hf = _column(panel, 0), _column(panel, 1)
    assert llama[2] == ("␣mat", "cut · top-p", True) and not llama[0][2] and not llama[1][2]
    assert not any(cut for _, _, cut in hf)
    assert panel.get_by_role("status").inner_text() == (
        "The order changes what survives: 2 in llama.cpp's order, 3 with temperature first."
    )
    screenshot(page, "sampling_panel_orders")

    # names and roles: a labelled region, four labelled sliders, two labelled lists of items
    region = root.get_by_role("region", name="How sampling chose ␣mat, token 6")
    for name in ("Temperature", "Top-k", "Top-p", "Min-p"):
        assert region.get_by_role("slider", name=name).count() == 1, name
    lists = region.get_by_role("list")
    assert lists.count() == 2
    assert region.get_by_role("list", name="llama.cpp's order", exact=False).count() == 1
    assert region.get_by_role("list", name="Temperature first", exact=False).count() == 1
    items = region.get_by_role("listitem")
    assert items.count() == 6
    assert (
        items.nth(2).get_attribute("aria-label") == "␣mat (the token the model chose): cut by top-p"
    )
    snapshot = region.aria_snapshot()
    assert "slider" in snapshot and "listitem" in snapshot, snapshot

    # Escape closes it and gives the focus back to the token
    page.keyboard.press("Escape")
    panel.wait_for(state="detached", timeout=5_000)
    assert page.evaluate("document.activeElement.getAttribute('data-token-index')") == "5"
    assert page.watched.console_errors == [], page.watched.console_errors


def test_a_slow_answer_keeps_the_readers_moves(page, jupyter_lab):
    # the kernel answers the page's "sampler" question only once the test says so: the panel
    # opens at llama.cpp's defaults and says it is asking; a reader who moves a slider meanwhile
    # keeps their setting, and the note then names the model's own instead of asking forever
    release = jupyter_lab.root / "release-sampler"
    release.unlink(missing_ok=True)
    slow = (
        f"""
import pathlib, time
from lion_nb.widgets.sampling_panel import SamplingPanel
answer = SamplingPanel._action_sampler
def held_back(self, content):
    deadline = time.monotonic() + 60
    while not pathlib.Path({str(release)!r}).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    answer(self, content)
SamplingPanel._action_sampler = held_back  # before the view: it looks its actions up once
"""
        + SETUP  # the view last: the cell shows it
    )
    root = _open_tokens(page, jupyter_lab, "sampling_slow.ipynb", setup=slow)
    panel = _open_panel_by_keyboard(page, root, 5, settled=False)
    note = panel.locator(".lion-sampling-note")
    assert "Starting at llama.cpp's defaults (asking the model for its own…)." in note.inner_text()
    temperature = panel.locator("input[data-setting=temperature]")
    assert temperature.input_value() == "0.8"
    page.keyboard.press("ArrowRight")  # the focus is on the temperature slider
    assert temperature.input_value() == "0.85"
    release.write_text("go")
    _wait_for_the_answer(page, panel, timeout=60_000)
    assert temperature.input_value() == "0.85"  # the reader's move stands
    assert (
        "Starting at llama.cpp's defaults; the model's own are temperature 1 "
        "(not applied: you had moved a slider)." in note.inner_text()
    )
    assert page.watched.console_errors == [], page.watched.console_errors


def test_the_strip_has_axes_labels_and_the_entropy_line(page, jupyter_lab):
    root = _open_tokens(page, jupyter_lab, "sampling_strip.ipynb")
    chart = root.locator(".lion-tokens-chart")
    key = chart.locator(".lion-tokens-chart-key").inner_text()
    assert "surprise −ln p of the token chosen" in key
    assert "entropy over its stored alternatives" in key and "in nats" in key
    assert chart.locator(".lion-tokens-y-zero").inner_text() == "0"
    assert float(chart.locator(".lion-tokens-y-top").inner_text()) >= 3.0
    assert chart.locator(".lion-tokens-x-start").inner_text() == "token 1"
    assert chart.locator(".lion-tokens-x-end").inner_text() == "token 7"
    # the entropy line is drawn in its own colour over the bars
    drawn = page.evaluate(
        """() => {
        const strip = document.querySelector('.lion-front .lion-tokens-strip');
        const probe = document.createElement('span');
        probe.style.color = getComputedStyle(strip).getPropertyValue('--lion-tok-entropy').trim();
        document.body.append(probe);
        const [r, g, b] = getComputedStyle(probe).color.match(/\\d+/g).map(Number);
        probe.remove();
        const data = strip.getContext('2d').getImageData(0, 0, strip.width, strip.height).data;
        let n = 0;
        for (let i = 0; i < data.length; i += 4) {
          const near = Math.abs(data[i] - r) + Math.abs(data[i + 1] - g) + Math.abs(data[i + 2] - b);
          if (data[i + 3] > 200 && near < 60) n++;
        }
        return n;
    }"""
    )
    assert drawn > 20, drawn
    screenshot(page, "sampling_strip")


@pytest.mark.parametrize("theme", ["JupyterLab Light", "JupyterLab Dark"])
def test_the_panel_reads_at_aa_contrast(page, jupyter_lab, theme):
    set_theme(jupyter_lab, theme)
    name = "sampling_" + theme.split()[-1].lower()
    root = _open_tokens(page, jupyter_lab, f"{name}.ipynb")
    panel = _open_panel_by_keyboard(page, root, 5)
    _slider(page, panel, "top_k", "Home", "ArrowRight", "ArrowRight")  # one cut row per column
    page.wait_for_timeout(300)
    measured = [
        m
        for m in page.evaluate(MEASURE)
        if "lion-sampling" in m["cls"] or "lion-tokens-" in m["cls"]
    ]
    assert any("lion-sampling-p" in m["cls"] and m["text"].startswith("cut") for m in measured)
    assert any("lion-tokens-y" in m["cls"] for m in measured)  # the strip's labels
    screenshot(page, f"{name}_contrast")
    failures = [
        f"{m['ratio']}:1 {m['fg']} on {m['bg']} <{m['tag']} class={m['cls']!r}> {m['text']!r}"
        for m in measured
        if m["ratio"] < AA
    ]
    print(theme, "worst:", min(measured, key=lambda m: m["ratio"]))
    assert not failures, "\n".join(failures)


# ----- the figure B17 reports (benchmarks/bench_sampling_panel.py) ----------------------------
# 60 moves of a slider on the token with 20 alternatives, each: the input event, the redraw
# it runs (both orders, every bar and label) and the layout it forces, timed in the page; and
# from the move to the next frame painted, beside it
MOVES = """
async () => {
  const panel = document.querySelector('.lion-front .lion-sampling');
  const frame = () => new Promise((r) => requestAnimationFrame(r));
  const sliders = [...panel.querySelectorAll('input[type=range]')];
  const redraw = [];
  const painted = [];
  const send = WebSocket.prototype.send; // what the page sends the kernel meanwhile: nothing
  let sent = 0;
  WebSocket.prototype.send = function (...args) { sent++; return send.apply(this, args); };
  for (let k = 0; k < 60; k++) {
    const input = sliders[k % sliders.length];
    const span = Number(input.max) - Number(input.min);
    input.value = String(Number(input.min) + ((k * 7) % 11) / 10 * span);
    await frame();
    const t0 = performance.now();
    input.dispatchEvent(new Event('input', { bubbles: true }));
    panel.getBoundingClientRect(); // the layout the change forces
    redraw.push(performance.now() - t0);
    await frame();
    painted.push(performance.now() - t0);
  }
  WebSocket.prototype.send = send;
  return { redraw, painted, sent, rows: panel.querySelectorAll('.lion-sampling-row').length };
}
"""

MAX_REDRAW_MS = 100.0  # behaviour on a busy machine (the goal, 16 ms, is B17's)


def test_the_sampling_panel_figures(page, jupyter_lab):
    root = _open_tokens(page, jupyter_lab, "sampling_figures.ipynb")
    _open_panel_by_keyboard(page, root, 6)  # ".": 20 alternatives
    got = page.evaluate(MOVES)
    assert got["rows"] == 40  # 20 alternatives, both orders
    figures = {
        "redraw_ms": statistics.median(got["redraw"]),
        "redraw_max_ms": max(got["redraw"]),
        "painted_ms": statistics.median(got["painted"]),
        "moves": len(got["redraw"]),
        "alternatives": got["rows"] // 2,
        "redraws_ms": got["redraw"],
    }
    assert got["sent"] == 0  # no slider move reached the kernel
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "sampling_panel_browser.json").write_text(json.dumps(figures, indent=2))
    print(json.dumps({k: v for k, v in figures.items() if k != "redraws_ms"}))
    assert figures["redraw_ms"] <= MAX_REDRAW_MS, figures
    assert page.watched.console_errors == [], page.watched.console_errors
