""" "What the model read" in JupyterLab + chromium, on the embedded model: a reply's control
opens the prompt it was generated from, every token a chip tinted by its message, special
tokens outlined with their text, the count against the window; the same from an inspector
row's "what the model saw"; a model that cannot tokenize says so in words; roles and names in
the accessibility tree; the chips read at WCAG AA in JupyterLab Light and Dark. Screenshots go
to ``test-artifacts/``.

``test_the_prompt_view_figures`` measures what ``benchmarks/bench_prompt_view.py`` (B18)
reports — a 2,000-token prompt's view opening, from the click to every chip drawn — and writes
it to ``test-artifacts/prompt_view_browser.json``; it asserts only a bound that holds on a busy
machine.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from lion_nb.models.imodel import local_model_available
from tests.browser.test_theme_contrast_browser import AA, MEASURE, set_theme
from tests.support.front_ends import ARTIFACTS, screenshot
from tests.support.lab_notebooks import (
    kernel_execute,
    run_notebook_in_lab,
    shutdown_kernels,
    write_notebook,
)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.local_model,
    pytest.mark.timeout(300),
    pytest.mark.skipif(not local_model_available(), reason="the embedded model is not installed"),
]

READY = "PROMPT-" + "READY"

SETUP = """
import json
import lion_nb
from lion_nb import Session, iModel
model = iModel(provider="local", temperature=0, seed=0, max_tokens=6)
branch = Session().new_branch(system="You are terse.", chat_model=model, name="colours")
view = lion_nb.view(branch, height=420)
view
"""

RUN = f"""
await view.asend("Name a colour.")
sent = [{{"role": "system", "content": "You are terse."}}, {{"role": "user", "content": "Name a colour."}}]
expected = await model.tokenize(sent)
facts = {{"n": len(expected), "window": model.context_window,
          "special": [t.text for t in expected if t.special],
          "system": sum(1 for t in expected if t.message == 0)}}
print("{READY}")
"""

INSPECT = """
inspector = lion_nb.inspect(branch)
inspector
"""

ALONE = """
alone = await lion_nb.prompt_view(model, "Name a colour.")
alone
"""

SCRIPTED = """
other = Session().new_branch(chat_model=iModel(provider="scripted", replies=["Hi!"]), name="scripted")
sview = lion_nb.view(other, height=200)
sview
"""

SCRIPTED_RUN = """
await sview.asend("Hello")
print("SCRIPTED-" + "READY")
"""


@pytest.fixture(autouse=True)
def _no_kernels_left(jupyter_lab):
    yield
    shutdown_kernels(jupyter_lab)
    set_theme(jupyter_lab, "JupyterLab Light")  # the other tests expect the default


def _facts(lab: Any) -> dict[str, Any]:
    return json.loads(kernel_execute(lab, "print(json.dumps(facts))").strip().splitlines()[-1])


def _open_reply(page: Any, lab: Any, name: str, cells: list[str]) -> Any:
    run_notebook_in_lab(page, lab, write_notebook(lab, name, cells))
    page.get_by_text(READY).first.wait_for(timeout=120_000)
    root = page.locator(".lion-front").first
    root.get_by_role("button", name="What the model read for reply 1").click(timeout=30_000)
    root.locator(".lion-read .lion-pt[data-i]").first.wait_for(timeout=30_000)
    return root


def test_a_reply_opens_what_the_model_read(page, jupyter_lab):
    root = _open_reply(page, jupyter_lab, "prompt_reply.ipynb", [SETUP, RUN])
    facts = _facts(jupyter_lab)
    region = root.get_by_role("region", name="What the model read")
    chips = region.locator(".lion-pt[data-i]")
    page.wait_for_function(
        f"() => document.querySelectorAll('.lion-read .lion-pt[data-i]').length === {facts['n']}",
        timeout=15_000,
    )
    assert chips.count() == facts["n"]
    # the count against the model's window
    assert region.locator(".lion-read-count").inner_text() == (
        f"{facts['n']} of {facts['window']:,} tokens"
    )
    # tinted by message: the system message's chips, in a group named for it
    system = region.get_by_role("group", name="Message 1 · system")
    assert system.locator(".lion-pt").count() == facts["system"]
    assert all(
        "lion-pt-system" in (c or "")
        for c in system.locator(".lion-pt").evaluate_all("(els) => els.map((e) => e.className)")
    )
    user = region.get_by_role("group", name="Message 2 · user")
    assert "".join(user.locator(".lion-pt").all_text_contents()) == "Name a colour."
    assert region.get_by_role("group", name="Template scaffolding").first.count() == 1
    # special tokens marked, their text shown
    special = region.locator(".lion-pt-special[data-i]")
    assert special.all_text_contents() == facts["special"]
    outline = special.first.evaluate("(e) => getComputedStyle(e).outlineStyle")
    assert outline == "solid"
    # the legend, a list the accessibility tree names
    legend = region.get_by_role("list", name="Legend")
    assert legend.get_by_role("listitem").all_text_contents() == [
        "system",
        "user",
        "template",
        "special token",
    ]
    button = root.get_by_role("button", name="What the model read for reply 1")
    assert button.get_attribute("aria-pressed") == "true"
    screenshot(page, "prompt_reply")
    root.get_by_role("button", name="Close what the model read").click()
    region.wait_for(state="detached", timeout=10_000)
    assert button.get_attribute("aria-pressed") == "false"
    assert page.watched.console_errors == [], page.watched.console_errors


def test_the_inspector_the_view_alone_and_a_model_that_cannot_tokenize(page, jupyter_lab):
    cells = [SETUP, RUN, INSPECT, ALONE, SCRIPTED, SCRIPTED_RUN]
    run_notebook_in_lab(page, jupyter_lab, write_notebook(jupyter_lab, "prompt_more.ipynb", cells))
    page.get_by_text("SCRIPTED-READY").first.wait_for(timeout=120_000)
    facts = _facts(jupyter_lab)
    # the inspector: expand the reply's row, then read what its request sent, token by token
    inspector = page.locator(".lion-front").nth(1)
    inspector.get_by_role("button", name="Expand message 2").click(timeout=30_000)
    inspector.get_by_role("button", name="What the model read for message 2, token by token").click(
        timeout=30_000
    )
    region = inspector.get_by_role("region", name="What the model read")
    region.locator(".lion-pt[data-i]").nth(facts["n"] - 1).wait_for(timeout=30_000)
    assert region.locator(".lion-pt[data-i]").count() == facts["n"]
    assert region.locator(".lion-pt-special[data-i]").all_text_contents() == facts["special"]
    screenshot(page, "prompt_inspector")
    # a model that cannot tokenize: said in plain words, naming those that can
    # on its own: lion_nb.prompt_view(model, text), a text being one user turn
    alone = page.locator(".lion-front").nth(2).get_by_role("region", name="What the model read")
    alone.get_by_role("group", name="Message 1 · user").wait_for(timeout=30_000)
    assert "".join(alone.locator(".lion-pt[data-i]").all_text_contents()) == (
        "<|im_start|>system↵You are a helpful AI assistant named SmolLM, trained by Hugging "
        "Face<|im_end|>↵<|im_start|>user↵Name a colour.<|im_end|>↵<|im_start|>assistant↵"
    )
    assert alone.get_by_role("button", name="Close what the model read").count() == 0
    scripted = page.locator(".lion-front").nth(3)
    scripted.get_by_role("button", name="What the model read for reply 1").click(timeout=30_000)
    note = scripted.locator(".lion-read-note", has_text="cannot show what it read")
    note.wait_for(timeout=30_000)
    assert "llama-server" in note.inner_text() and "provider='local'" in note.inner_text()
    assert page.watched.console_errors == [], page.watched.console_errors


@pytest.mark.parametrize("theme", ["JupyterLab Light", "JupyterLab Dark"])
def test_the_chips_read_at_aa_contrast(page, jupyter_lab, theme):
    set_theme(jupyter_lab, theme)
    name = "prompt_" + theme.split()[-1].lower()
    _open_reply(page, jupyter_lab, f"{name}.ipynb", [SETUP, RUN])
    assert (
        page.evaluate("document.body.dataset.jpThemeLight") == str(theme.endswith("Light")).lower()
    )
    page.wait_for_timeout(300)
    measured = [
        m for m in page.evaluate(MEASURE) if "lion-pt" in m["cls"] or "lion-read" in m["cls"]
    ]
    shown = {c for m in measured for c in m["cls"].split() if c.startswith("lion-pt-")}
    assert {"lion-pt-system", "lion-pt-user", "lion-pt-none", "lion-pt-special"} <= shown, shown
    screenshot(page, f"{name}_contrast")
    failures = [
        f"{m['ratio']}:1 {m['fg']} on {m['bg']} <{m['tag']} class={m['cls']!r}> {m['text']!r}"
        for m in measured
        if m["ratio"] < AA
    ]
    print(theme, "worst:", min(measured, key=lambda m: m["ratio"]))
    assert not failures, "\n".join(failures)


# ----- the figures B18 reports (benchmarks/bench_prompt_view.py) -------------------------------
FIGURES_SETUP = """
import json
import lion_nb
from lion_nb import Branch, BranchView, iModel
from lion_nb.messages import AssistantResponse, Instruction
model = iModel(provider="local")
words = "the model reads every token of the prompt before it writes a single word of its reply".split()
def conversation(k):
    text = " ".join(words[i % len(words)] for i in range(k))
    return [{"role": "system", "content": "You are terse."}, {"role": "user", "content": text}]
k = 1980
while len(await model.tokenize(conversation(k))) < 2000:
    k += 1
long = conversation(k)
big = Branch(system=long[0]["content"], chat_model=model, name="long")
big.add_message(Instruction(instruction=long[1]["content"]))
big.add_message(AssistantResponse(response="Yes."))
big_view = BranchView(big, height=300)
display(big_view)
n = len(await model.tokenize(long))
print("FIGURES-" + "READY", n)
"""

# click "What the model read" on the reply of a 2,000-token prompt, five times (closed between;
# the first open reads the prompt on the embedded model, the others are answered from what the
# kernel read): the time until the first chips are painted and until all of them are drawn
OPEN = """
async ([i, n]) => {
  const root = document.querySelectorAll('.lion-front')[i];
  const count = () => root.querySelectorAll('.lion-read .lion-pt[data-i]').length;
  const frame = () => new Promise((r) => requestAnimationFrame(r));
  const out = [];
  for (let round = 0; round < 5; round++) {
    const button = root.querySelector('.lion-read-btn');
    if (root.querySelector('.lion-read')) {
      button.click();
      await new Promise((r) => setTimeout(r, 200));
    }
    const t0 = performance.now();
    button.click();
    while (count() === 0) await frame();
    await frame(); // painted
    const first = performance.now() - t0;
    while (count() < n) await frame();
    await frame();
    out.push([first, performance.now() - t0]);
  }
  return out;
}
"""

MAX_OPEN_MS = 3000.0  # behaviour on a busy machine (the goal, 300 ms, is B18's)


def test_the_prompt_view_figures(page, jupyter_lab):
    nb = write_notebook(jupyter_lab, "prompt_figures.ipynb", [FIGURES_SETUP])
    run_notebook_in_lab(page, jupyter_lab, nb)
    page.get_by_text("FIGURES-READY").first.wait_for(timeout=120_000)
    n = int(kernel_execute(jupyter_lab, "print(n)").strip().splitlines()[-1])
    page.locator(".lion-front").first.locator(".lion-read-btn").wait_for(timeout=30_000)
    opened = page.evaluate(OPEN, [0, n])
    median = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    figures = {
        "tokens": n,
        "open_ms": median([whole for _, whole in opened]),
        "first_paint_ms": median([first for first, _ in opened]),
        "first_open_ms": opened[0][1],  # the prompt read on the embedded model first
        "opened_ms": opened,
    }
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "prompt_view_browser.json").write_text(json.dumps(figures, indent=2))
    print(json.dumps(figures))
    assert n >= 2000
    assert figures["open_ms"] <= MAX_OPEN_MS, figures
    assert page.watched.console_errors == [], page.watched.console_errors
