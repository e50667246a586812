"""The token view in JupyterLab + chromium: a reply's "Tokens" control shows its
tokens tinted by probability (one element per token, ``data-token-index``), hovering or focusing
a token (arrow keys move) shows its alternatives with bars, choosing one forks the conversation
there and the switcher shows the fork (``‹ 2/2 ›``, Compare); the tint scale reads at WCAG AA in
JupyterLab Light and Dark. Screenshots go to ``test-artifacts/``.

``test_the_token_view_figures`` measures what ``benchmarks/bench_tokens_view.py`` (B11) reports
(opening a 4,000-token reply's token view, visible updates while a 1,000-token reply streams
with its token view open, its bytes against the plain chat view's) and writes them to
``test-artifacts/tokens_view_browser.json``; it asserts only bounds that hold on a busy machine.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.browser.test_theme_contrast_browser import AA, MEASURE, set_theme
from tests.support.front_ends import ARTIFACTS, screenshot
from tests.support.lab_notebooks import (
    kernel_execute,
    run_notebook_in_lab,
    shutdown_kernels,
    write_notebook,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]

READY = "TOKENS-" + "READY"

# "The cat sat on the mat." with alternatives: every tint bin is used (p 0.97 ... 0.05)
SETUP = """
import math
import lion_nb
from lion_nb import Session, iModel

def tok(text, p, *alts):
    top = sorted([(text, math.log(p)), *[(t, math.log(q)) for t, q in alts]], key=lambda a: -a[1])
    return {"text": text, "logprob": math.log(p), "top": [list(a) for a in top]}

STORY = [tok("The", 0.95, ("A", 0.03)), tok(" cat", 0.7, (" dog", 0.2), (" bird", 0.05)),
         tok(" sat", 0.45, (" ran", 0.35), (" slept", 0.1)),
         tok(" on", 0.2, (" under", 0.5), (" near", 0.2)), tok(" the", 0.97),
         tok(" mat", 0.05, (" sofa", 0.6), (" roof", 0.2)), tok(".", 0.92, ("!", 0.05))]
REST = [tok(" the", 0.9), tok(" table", 0.6, (" tree", 0.3)), tok(".", 0.95)]
model = iModel(provider="scripted", logprobs=5, replies=[{"tokens": STORY}, {"tokens": REST}])
branch = Session().new_branch(system="You tell tiny stories.", chat_model=model, name="story")
view = lion_nb.view(branch, height=460)
view
"""

RUN = f"""
await view.asend("Tell me a story")
print("{READY}")
"""

BINS = [0, 1, 2, 3, 0, 4, 0]  # the tint bin of each token of STORY


@pytest.fixture(autouse=True)
def _no_kernels_left(jupyter_lab):
    yield
    shutdown_kernels(jupyter_lab)
    set_theme(jupyter_lab, "JupyterLab Light")  # the other tests expect the default


def _open_story(page: Any, lab: Any, name: str) -> Any:
    run_notebook_in_lab(page, lab, write_notebook(lab, name, [SETUP, RUN]))
    page.get_by_text(READY).first.wait_for(timeout=120_000)
    root = page.locator(".lion-front").first
    reply = root.locator(".lion-assistant").last
    reply.locator(".lion-tokens-btn").click()
    root.locator(".lion-tokens .lion-tok[data-token-index]").nth(6).wait_for(timeout=30_000)
    return root


def _active(page: Any) -> str | None:
    return page.evaluate("document.activeElement.getAttribute('data-token-index')")


def test_hover_and_keys_show_the_alternatives_and_choosing_one_forks(page, jupyter_lab):
    root = _open_story(page, jupyter_lab, "tokens_fork.ipynb")
    tokens = root.locator(".lion-tokens .lion-tokens-text .lion-tok")
    assert tokens.count() == 7
    assert "".join(tokens.all_text_contents()) == "The cat sat on the mat."
    for i, b in enumerate(BINS):  # tinted by probability
        assert f"lion-tok-b{b}" in (tokens.nth(i).get_attribute("class") or ""), i
    strip = root.locator(".lion-tokens-strip")
    assert strip.bounding_box()["height"] > 10  # the surprise strip above the text

    # hover: the alternatives of " mat", with their probabilities as bars
    tokens.nth(5).hover()
    pop = root.locator(".lion-tok-pop")
    pop.locator(".lion-tok-alt").nth(2).wait_for(timeout=15_000)
    rows = pop.locator(".lion-tok-alt")
    assert [rows.nth(k).locator(".lion-tok-alt-text").inner_text() for k in range(3)] == [
        "␣sofa",
        "␣roof",
        "␣mat",
    ]
    assert rows.nth(0).locator(".lion-tok-alt-p").inner_text() == "60.0%"
    widths = [rows.nth(k).locator(".lion-tok-bar-fill").bounding_box()["width"] for k in range(3)]
    assert widths[0] > widths[1] > widths[2] > 0  # bars as long as the probabilities
    assert "lion-tok-alt-chosen" in (rows.nth(2).get_attribute("class") or "")
    screenshot(page, "tokens_hover")

    # keyboard: focus the first token, arrow keys move, the popup follows the focus
    tokens.nth(0).focus()
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    assert _active(page) == "3"
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowRight")
    assert _active(page) == "3"
    pop.locator(".lion-tok-pop-token", has_text="␣on").wait_for(timeout=15_000)
    pop.locator(".lion-tok-alt-text", has_text="␣under").wait_for(timeout=15_000)
    screenshot(page, "tokens_focus")

    # choosing " under" (Down into the alternatives, Enter) forks the conversation there
    page.keyboard.press("ArrowDown")
    assert page.evaluate("document.activeElement.textContent").startswith("␣under")
    page.keyboard.press("Enter")
    switch = root.locator(".lion-assistant .lion-switch-pos")
    switch.first.wait_for(timeout=30_000)
    page.wait_for_function(
        "() => [...document.querySelectorAll('.lion-front .lion-switch-pos')]"
        ".some(e => e.textContent === '2/2')",
        timeout=30_000,
    )
    root.locator(".lion-assistant", has_text="The cat sat under the table.").wait_for()
    state = json.loads(
        kernel_execute(
            jupyter_lab,
            "import json\nprint(json.dumps({'shown': view.branch.messages[-1].text, "
            "'original': branch.messages[-1].text, 'same': view.branch is branch, "
            "'forked': view.branch.messages[-1].metadata.get('forked_from') is not None, "
            "'n': len(view.conversation.branches)}))",
        )
    )
    assert state == {
        "shown": "The cat sat under the table.",
        "original": "The cat sat on the mat.",
        "same": False,
        "forked": True,
        "n": 2,
    }
    # the title keeps the view's name and counts as the switcher does
    root.locator(".lion-title:text-is('story · Alternative 2 of 2')").wait_for(timeout=10_000)
    # the fork's reply streamed with its token view open; Compare works on the token fork
    fork_tokens = root.locator(".lion-assistant").last.locator(".lion-tokens-text .lion-tok")
    fork_tokens.nth(5).wait_for(timeout=15_000)
    assert "".join(fork_tokens.all_text_contents()) == "The cat sat under the table."
    root.locator(".lion-assistant").last.locator(".lion-compare-alt").click()
    panel = root.locator(".lion-compare-panel")
    panel.locator("text=under").first.wait_for(timeout=15_000)
    screenshot(page, "tokens_forked")
    assert page.watched.console_errors == [], page.watched.console_errors


@pytest.mark.parametrize("theme", ["JupyterLab Light", "JupyterLab Dark"])
def test_the_tint_scale_reads_at_aa_contrast(page, jupyter_lab, theme):
    set_theme(jupyter_lab, theme)
    name = "tokens_" + theme.split()[-1].lower()
    root = _open_story(page, jupyter_lab, f"{name}.ipynb")
    assert (
        page.evaluate("document.body.dataset.jpThemeLight") == str(theme.endswith("Light")).lower()
    )
    root.locator(".lion-tokens .lion-tokens-text .lion-tok").nth(3).hover()
    root.locator(".lion-tok-pop .lion-tok-alt").nth(2).wait_for(timeout=15_000)
    page.wait_for_timeout(300)
    measured = [m for m in page.evaluate(MEASURE) if "lion-tok" in m["cls"]]
    shown = {c for m in measured for c in m["cls"].split() if c.startswith("lion-tok-b")}
    assert shown == {f"lion-tok-b{b}" for b in range(5)}, shown  # every bin, in text and legend
    assert any("lion-tok-alt" in m["cls"] for m in measured)  # the popup's rows too
    screenshot(page, f"{name}_contrast")
    failures = [
        f"{m['ratio']}:1 {m['fg']} on {m['bg']} <{m['tag']} class={m['cls']!r}> {m['text']!r}"
        for m in measured
        if m["ratio"] < AA
    ]
    print(theme, "worst:", min(measured, key=lambda m: m["ratio"]))
    assert not failures, "\n".join(failures)


SAMPLE_SETUP = """
import lion_nb
from lion_nb import Session, iModel
answers = ["The sky is blue.", "The sky is grey.", "The sea is calm.", "The sky!", "The end."]
model = iModel(provider="scripted", logprobs=3, replies=["First answer.", *answers])
branch = Session().new_branch(chat_model=model, name="sky")
view = lion_nb.view(branch, height=360)
view
"""


def test_sample_five_shows_five_forks_and_where_they_agree(page, jupyter_lab):
    nb = write_notebook(jupyter_lab, "tokens_sample.ipynb", [SAMPLE_SETUP, RUN])
    run_notebook_in_lab(page, jupyter_lab, nb)
    page.get_by_text(READY).first.wait_for(timeout=120_000)
    root = page.locator(".lion-front").first
    sample = root.locator(".lion-assistant").last.locator(".lion-sample-btn")
    assert sample.get_attribute("aria-label") == "Sample reply 1 5 times"
    sample.click()
    panel = root.locator(".lion-compare-panel")
    panel.locator(".lion-samples").wait_for(timeout=30_000)
    assert panel.locator(".lion-samples li").count() == 5
    assert "5 samples" in panel.locator(".lion-tokens-title").inner_text()
    assert panel.locator(".lion-sample-shared").first.inner_text().startswith("The")
    page.wait_for_function(
        "() => [...document.querySelectorAll('.lion-front .lion-switch-pos')]"
        ".some(e => e.textContent.endsWith('/6'))",
        timeout=30_000,
    )
    screenshot(page, "tokens_sampled")
    panel.get_by_role("button", name="Close the comparison").click()
    panel.locator(".lion-samples").wait_for(state="detached", timeout=15_000)
    assert page.watched.console_errors == [], page.watched.console_errors


LIVE_SETUP = """
import lion_nb
from lion_nb import Session, iModel
words = [{"text": f" w{i}", "logprob": -((i * 37) % 300) / 100, "top": []} for i in range(400)]
model = iModel(provider="scripted", logprobs=2, replies=[{"tokens": words, "delay": 0.02}])
branch = Session().new_branch(chat_model=model, name="live")
view = lion_nb.view(branch, height=360)
view
"""


def test_tokens_opened_on_a_streaming_reply_keep_up_with_it(page, jupyter_lab):
    nb = write_notebook(jupyter_lab, "tokens_live.ipynb", [LIVE_SETUP])
    run_notebook_in_lab(page, jupyter_lab, nb)
    root = page.locator(".lion-front").first
    prompt = root.locator(".lion-prompt")
    prompt.wait_for(timeout=60_000)
    prompt.fill("Stream please")
    prompt.press("Enter")
    live = root.locator(".lion-streaming-msg")
    live.locator(".lion-tokens-btn").click(timeout=30_000)  # on the reply while it streams
    tokens = root.locator(".lion-tokens-text .lion-tok")
    tokens.first.wait_for(timeout=15_000)
    seen = {tokens.count()}
    while root.locator(".lion-streaming-msg").count() and len(seen) < 4:
        page.wait_for_timeout(150)
        seen.add(tokens.count())
    assert len(seen) >= 3, seen  # tinted as they arrive
    page.wait_for_function(
        "() => document.querySelectorAll('.lion-front .lion-tokens-text .lion-tok').length === 400",
        timeout=60_000,
    )
    reply = root.locator(".lion-assistant").last
    assert reply.get_attribute("data-id")  # the recorded card kept its token view
    assert "".join(tokens.all_text_contents()) == "".join(f" w{i}" for i in range(400))
    tokens.nth(7).hover()
    root.locator(".lion-tok-pop-note", has_text="no alternatives").wait_for(timeout=15_000)
    assert page.watched.console_errors == [], page.watched.console_errors


# ----- the figures B11 reports (benchmarks/bench_tokens_view.py) -------------------------------
FIGURES_SETUP = """
import json, math
import lion_nb
from lion_nb import Branch, BranchView, iModel
from lion_nb.messages import AssistantResponse, Instruction, TokenChoice
from lion_nb.widgets.protocol import ENVELOPE_BYTES

def token_dicts(n):
    out = []
    for i in range(n):
        text = f" w{i}" + ("\\n\\n" if i % 40 == 39 else "")
        lp = -((i * 7919) % 400) / 100
        top = sorted([(text, lp), *[(f" a{i}{k}", lp - 0.5 - k) for k in range(4)]], key=lambda a: -a[1])
        out.append({"text": text, "logprob": lp, "top": [list(a) for a in top]})
    return out

BIG = [TokenChoice(text=t["text"], logprob=t["logprob"], top=[tuple(a) for a in t["top"]])
       for t in token_dicts(4000)]
big = Branch(name="big")
big.add_message(Instruction(instruction="a long one"))
big.add_message(AssistantResponse(response="".join(t.text for t in BIG), tokens=BIG))
big_view = BranchView(big, height=300)
display(big_view)
"""

STREAM_SETUP = """
sb = Branch(chat_model=iModel(provider="scripted", logprobs=5,
                              replies=[{"tokens": token_dicts(1000), "delay": 0.01}]))
plain = BranchView(sb, height=150)
tview = BranchView(sb, height=300, tokens=True)
display(plain)
display(tview)
print("FIGURES-" + "READY")
"""

STREAM_RUN = """
await sb.communicate("go")
def traffic(v):
    return v.channel.sent_bytes + v.channel.messages * ENVELOPE_BYTES
print(json.dumps({"plain": traffic(plain), "tokens": traffic(tview)}))
"""

# click "Tokens" on the 4,000-token reply, five times (closed between): the time until its
# first screenful of tokens is painted (the view is open: it draws the rest over the next frames)
# and until all 4,000 are drawn
OPEN = """
async (i) => {
  const root = document.querySelectorAll('.lion-front')[i];
  const count = () => root.querySelectorAll('.lion-tokens .lion-tok[data-token-index]').length;
  const frame = () => new Promise((r) => requestAnimationFrame(r));
  const out = [];
  for (let round = 0; round < 5; round++) {
    const button = root.querySelector('.lion-tokens-btn');
    if (root.querySelector('.lion-tokens')) {
      button.click();
      await new Promise((r) => setTimeout(r, 200));
    }
    const t0 = performance.now();
    button.click();
    while (count() === 0) await frame();
    await frame(); // painted
    const first = performance.now() - t0;
    while (count() < 4000) await frame();
    await frame();
    out.push([first, performance.now() - t0]);
  }
  return out;
}
"""

SAMPLER = """
(i) => {
  const root = document.querySelectorAll('.lion-front')[i];
  const s = {changes: [], last: 0, done: false};
  window.__tokSampler = s;
  function tick() {
    const n = root.querySelectorAll('.lion-assistant .lion-tokens-text .lion-tok').length;
    if (n !== s.last) { s.changes.push([performance.now(), n]); s.last = n; }
    if (!s.done) requestAnimationFrame(tick);
  }
  requestAnimationFrame(tick);
}
"""

MIN_UPDATES_PER_S = 3.0  # behaviour on a busy machine (the goal, 10, is B11's)
MAX_OPEN_MS = 3000.0  # (the goal, 300 ms, is B11's)


def test_the_token_view_figures(page, jupyter_lab):
    nb = write_notebook(jupyter_lab, "tokens_figures.ipynb", [FIGURES_SETUP, STREAM_SETUP])
    run_notebook_in_lab(page, jupyter_lab, nb)
    page.get_by_text("FIGURES-READY").first.wait_for(timeout=120_000)
    page.locator(".lion-front").first.locator(".lion-tokens-btn").wait_for(timeout=30_000)
    opened = page.evaluate(OPEN, 0)
    page.evaluate(SAMPLER, 2)
    traffic = json.loads(
        kernel_execute(jupyter_lab, STREAM_RUN, timeout=120).strip().splitlines()[-1]
    )
    page.wait_for_timeout(500)
    changes = page.evaluate(
        "(() => { window.__tokSampler.done = true; return window.__tokSampler.changes; })()"
    )
    assert changes and changes[-1][1] == 1000, changes[-3:]  # every token shown
    mid = [t for t, n in changes if 0 < n < 1000]
    span_s = (changes[-1][0] - changes[0][0]) / 1000
    median = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    figures = {
        "open_ms": median([first for first, _ in opened]),
        "complete_ms": median([whole for _, whole in opened]),
        "opened_ms": opened,
        "updates_per_s": len(changes) / span_s if span_s > 0 else 0.0,
        "updates_mid_stream": len(mid),
        "stream_s": span_s,
        "bytes_plain": traffic["plain"],
        "bytes_tokens": traffic["tokens"],
        "bytes_ratio": traffic["tokens"] / traffic["plain"],
    }
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "tokens_view_browser.json").write_text(json.dumps(figures, indent=2))
    print(json.dumps(figures))
    assert len(mid) >= 3, changes[:10]  # tinted as they arrive, not all at the end
    assert figures["updates_per_s"] >= MIN_UPDATES_PER_S, figures
    assert figures["open_ms"] <= MAX_OPEN_MS, figures
    assert figures["bytes_ratio"] <= 2.5, figures
    assert page.watched.console_errors == [], page.watched.console_errors
