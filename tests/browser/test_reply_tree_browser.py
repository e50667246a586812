"""The tree of what could have been in JupyterLab + chromium: Sample ×5 on a reply opens the
tree of its turn, which grows as the five samples stream (a scripted model with a delay per
chunk, so the streaming is observable); Enter or a click on a node shows that alternative in
the chat view (the switcher says which); the tree, its items and their names read right in the
accessibility tree ("3 of 4 replies continue “ comes in”"); its text reads at WCAG AA in
JupyterLab Light and Dark. Screenshots go to ``test-artifacts/``; the figures (updates of the
tree per second while the samples stream) to ``test-artifacts/reply_tree_browser.json``.
"""

from __future__ import annotations

import json
import re
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

READY = "TREE-" + "READY"

SETUP = """
import lion_nb
from lion_nb import Session, iModel
ANSWERS = [
    "The tide comes in slowly over the sand and the gulls wait on the rocks.",
    "The tide comes in slowly over the sand and the crabs hide.",
    "The tide comes in fast tonight.",
    "The tide goes out at dawn and the boats rest on the mud.",
    "The sea is calm and grey under the low clouds.",
]
replies = ["A quiet sea tonight.", *[{"text": a, "delay": 0.08} for a in ANSWERS]]
model = iModel(provider="scripted", logprobs=3, replies=replies)
branch = Session().new_branch(chat_model=model, name="sea")
view = lion_nb.view(branch, height=300)
view
"""

RUN = f"""
await view.asend("Tell me about the sea")
print("{READY}")
"""

# per animation frame: the tree's text and how many nodes it has, kept when they change
SAMPLER = """
() => {
  const s = {changes: [], last: "", done: false};
  window.__treeSampler = s;
  function tick() {
    const list = document.querySelector('.lion-front .lion-rtree-live [role=tree]');
    const now = list ? list.querySelectorAll('[role=treeitem]').length + '|' + list.textContent : '';
    if (now !== s.last) { s.changes.push([performance.now(), now.length]); s.last = now; }
    if (!s.done) requestAnimationFrame(tick);
  }
  requestAnimationFrame(tick);
}
"""

MIN_UPDATES_PER_S = 3.0  # on a busy machine (the view's channel sends at most 15 a second)


@pytest.fixture(autouse=True)
def _no_kernels_left(jupyter_lab):
    yield
    shutdown_kernels(jupyter_lab)
    set_theme(jupyter_lab, "JupyterLab Light")  # the other tests expect the default


def _sample(page: Any, lab: Any, name: str, *, sampler: bool = False) -> Any:
    run_notebook_in_lab(page, lab, write_notebook(lab, name, [SETUP, RUN]))
    page.get_by_text(READY).first.wait_for(timeout=120_000)
    root = page.locator(".lion-front").first
    sample = root.locator(".lion-assistant").last.locator(".lion-sample-btn")
    sample.wait_for(timeout=30_000)
    if sampler:
        page.evaluate(SAMPLER)
    sample.click()
    tree = root.locator(".lion-rtree-live")
    tree.wait_for(timeout=30_000)
    # all six in, none streaming: the leaves name the five samples and the first reply
    page.wait_for_function(
        "() => { const t = document.querySelector('.lion-front .lion-rtree-live');"
        " return t && t.querySelectorAll('.lion-rtree-end').length === 6"
        " && !/streaming|waiting/.test(t.querySelector('.lion-rtree-meta').textContent); }",
        timeout=60_000,
    )
    return root


def test_the_tree_grows_as_samples_stream_and_a_node_shows_its_branch(page, jupyter_lab):
    root = _sample(page, jupyter_lab, "tree_live.ipynb", sampler=True)
    changes = page.evaluate(
        "(() => { window.__treeSampler.done = true; return window.__treeSampler.changes; })()"
    )
    tree = root.locator(".lion-rtree-live")
    span_s = (changes[-1][0] - changes[0][0]) / 1000 if len(changes) > 1 else 0.0
    figures = {
        "tree_updates": len(changes),
        "stream_s": span_s,
        "updates_per_s": len(changes) / span_s if span_s > 0 else 0.0,
    }
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "reply_tree_browser.json").write_text(json.dumps(figures, indent=2))
    print(json.dumps(figures))
    assert len(changes) >= 5, changes  # grew in steps while the samples streamed
    assert figures["updates_per_s"] >= MIN_UPDATES_PER_S, figures
    assert "6 replies · merged by tokens" in tree.locator(".lion-rtree-meta").inner_text()

    # the outline: the shared start once, branches indented under it, counts as badges
    items = tree.get_by_role("treeitem")
    texts = [t.strip() for t in tree.locator(".lion-rtree-text").all_inner_texts()]
    assert texts[:2] == ["A quiet sea tonight.", "The"], texts
    assert tree.locator(".lion-rtree-n").nth(1).inner_text() == "5/6"
    assert items.count() == len(texts)

    # names a screen reader reads, levels of the tree
    assert (
        tree.get_by_role("tree", name="What could have been: the alternatives of reply 1").count()
        == 1
    )
    comes = tree.get_by_role("treeitem", name=re.compile(r"^3 of 4 replies continue\W+comes in"))
    assert comes.count() == 1 and comes.get_attribute("aria-level") == "3"
    crabs = tree.get_by_role(
        "treeitem", name=re.compile(r"1 of 2 replies continues\W+crabs hide\W+sample 2.5$")
    )
    assert crabs.count() == 1 and crabs.get_attribute("aria-level") == "5"
    snapshot = tree.aria_snapshot()
    assert re.search(
        r"^ *- '?tree \"What could have been: the alternatives of reply 1\"", snapshot, re.M
    )
    assert re.search(r"^ *- group:?$", snapshot, re.M), snapshot  # the children of a node
    assert '- treeitem "All' not in snapshot  # not all six start alike
    screenshot(page, "reply_tree_sampled")

    # keys: Home, Down to a node, Enter shows that branch in the chat view
    items.first.focus()
    page.keyboard.press("Home")
    for _ in range(20):
        name = page.evaluate(
            "document.getElementById(document.activeElement.getAttribute('aria-labelledby'))"
            ".textContent"
        )
        if "fast tonight" in name:
            break
        page.keyboard.press("ArrowDown")
    else:
        raise AssertionError("the keys never reached “ fast tonight.”")
    page.keyboard.press("ArrowLeft")  # to its parent, then back down to it
    assert "comes in" in page.evaluate("document.activeElement.textContent")
    page.keyboard.press("ArrowRight")  # its first child, then down past that one's two leaves
    assert "slowly over" in page.evaluate("document.activeElement.textContent")
    for _ in range(3):
        page.keyboard.press("ArrowDown")
    assert "fast tonight" in page.evaluate("document.activeElement.textContent")
    page.keyboard.press("Enter")
    root.locator(".lion-assistant", has_text="The tide comes in fast tonight.").wait_for(
        timeout=30_000
    )
    page.wait_for_function(
        "() => [...document.querySelectorAll('.lion-front .lion-switch-pos')]"
        ".some(e => e.textContent === '4/6')",
        timeout=30_000,
    )
    selected = tree.locator("[role=treeitem][aria-selected=true]")
    selected.wait_for(timeout=15_000)
    assert "fast tonight" in selected.locator(".lion-rtree-text").first.inner_text()
    assert "shown" in selected.locator(".lion-rtree-shown").inner_text()
    shown = kernel_execute(jupyter_lab, "print(view.branch.messages[-1].text)").strip()
    assert shown.endswith("The tide comes in fast tonight.")

    # a click on another node shows its branch
    tree.locator(".lion-rtree-text", has_text="goes out at dawn").click()
    root.locator(".lion-assistant", has_text="boats rest on the mud").wait_for(timeout=30_000)
    screenshot(page, "reply_tree_picked")
    assert page.watched.console_errors == [], page.watched.console_errors


@pytest.mark.parametrize("theme", ["JupyterLab Light", "JupyterLab Dark"])
def test_the_tree_reads_at_aa_contrast(page, jupyter_lab, theme):
    set_theme(jupyter_lab, theme)
    name = "reply_tree_" + theme.split()[-1].lower()
    root = _sample(page, jupyter_lab, f"{name}.ipynb")
    assert (
        page.evaluate("document.body.dataset.jpThemeLight") == str(theme.endswith("Light")).lower()
    )
    root.locator(".lion-rtree-live [role=treeitem]").nth(3).hover()  # a hovered row too
    page.wait_for_timeout(300)
    measured = [m for m in page.evaluate(MEASURE) if "lion-rtree" in m["cls"]]
    kinds = {c for m in measured for c in m["cls"].split() if c.startswith("lion-rtree-")}
    assert {"lion-rtree-text", "lion-rtree-n", "lion-rtree-end", "lion-rtree-title"} <= kinds, kinds
    screenshot(page, f"{name}_contrast")
    failures = [
        f"{m['ratio']}:1 {m['fg']} on {m['bg']} <{m['tag']} class={m['cls']!r}> {m['text']!r}"
        for m in measured
        if m["ratio"] < AA
    ]
    print(theme, "worst:", min(measured, key=lambda m: m["ratio"]))
    assert not failures, "\n".join(failures)
