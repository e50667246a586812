"""The inspector, ReAct rounds, parse and compare views in JupyterLab in a real chromium. The
inspector runs on the front-end module: the page draws its pager and row controls, by keyboard
too, and follows a run that adds messages without redrawing the rows that stay."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import expect

from tests.support.front_ends import screenshot
from tests.support.lab_notebooks import (
    held_until,
    run_notebook_in_lab,
    shutdown_kernels,
    write_notebook,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(240)]

HISTORY = """
from lion_nb import Session, iModel
from lion_nb.messages import AssistantResponse, Instruction
from lion_nb.widgets.inspector import ProgressionInspector
session = Session()
branch = session.new_branch(system="You are terse.", name="long", chat_model=iModel(
    provider="scripted", replies=["MARK-REPLY-1", "FORK-ONLY-REPLY"]))
for i in range(150):
    branch.add_message(Instruction(instruction=f"question number {i}"))
    branch.add_message(AssistantResponse(response=f"answer **{i}**",
        metadata={"usage": {"input_tokens": 10 + i, "output_tokens": 3}}))
inspector = ProgressionInspector(branch)  # from here on, runs and cells are recorded
await branch.communicate("MARK-QUESTION-1")
inspector
"""


@pytest.fixture(autouse=True)
def _no_kernels_left(jupyter_lab):
    yield
    shutdown_kernels(jupyter_lab)


def open_inspector(page, jupyter_lab, name: str, source: str):
    """Run a one-cell notebook that shows an inspector; its locator once rows are drawn."""
    run_notebook_in_lab(page, jupyter_lab, write_notebook(jupyter_lab, name, [source]))
    view = page.locator(".lion-inspector")
    view.locator(".lion-tl-row").first.wait_for(timeout=60_000)
    return view


def row_indices(page) -> list[int]:
    return page.evaluate(
        "() => [...document.querySelectorAll('.lion-inspector .lion-tl-row')]"
        ".map(e => +e.dataset.index)"
    )


def wait_rows(page, first: int, count: int = 50) -> None:
    """Until the rows shown are ``first .. first + count - 1`` (each row's HTML arrives in
    its own comm message)."""
    page.wait_for_function(
        "([first, count]) => { const r = [...document.querySelectorAll("
        "'.lion-inspector .lion-tl-row')].map(e => +e.dataset.index);"
        " return r.length === count && r.every((v, i) => v === first + i); }",
        arg=[first, count],
    )


def test_inspector_opens_pages_expands_and_shows_the_payload(page, jupyter_lab):
    view = open_inspector(page, jupyter_lab, "inspector.ipynb", HISTORY)
    wait_rows(page, 253)  # the newest page, 50 rows
    assert row_indices(page) == list(range(253, 303))
    assert "303 messages" in view.locator(".lion-tl-header").inner_text()
    assert "Next turn sends 303 messages" in view.locator(".lion-next-turn").inner_text()
    assert "latest" in view.locator(".lion-tl-page").inner_text()
    view.locator("button[title='First page']").click()
    wait_rows(page, 0)
    assert row_indices(page) == list(range(0, 50))
    view.locator("button[title='Next page']").click()
    wait_rows(page, 50)
    # expand message #52 (the reply to question 25) and open "what the model saw"
    row = view.locator(".lion-tl-line", has=page.locator(".lion-tl-row[data-index='52']"))
    row.locator("button.lion-tl-toggle").click()
    detail = view.locator(".lion-tl-detail")
    detail.wait_for()
    assert "answer 25" in detail.inner_text()
    summary = detail.locator("details.lion-payload > summary")
    assert "(52 messages)" in summary.inner_text()
    summary.click()
    payload = detail.locator("details.lion-payload pre.lion-json")
    payload.wait_for()
    text = payload.inner_text()
    assert '"role": "system"' in text and '"content": "question number 25"' in text
    assert "answer **24**" in text
    assert "answer **25**" not in text  # the request that produced #52 ends before it
    detail.scroll_into_view_if_needed()
    screenshot(page, "inspector_payload")
    # the run log knows the communicate run
    view.locator(".lion-tl-header").scroll_into_view_if_needed()
    page.get_by_text("Runs (1)").click()
    page.locator(".lion-runs").get_by_text("communicate").wait_for()
    assert page.watched.dialogs == [] and page.watched.external_requests == []


def test_fork_here_then_continue_and_compare(page, jupyter_lab):
    view = open_inspector(page, jupyter_lab, "fork.ipynb", HISTORY)
    row = view.locator(".lion-tl-line", has=page.locator(".lion-tl-row[data-index='300']"))
    row.locator("button.lion-tl-fork").click()
    panel = page.locator(".lion-tl-fork-panel")  # under the timeline, in the inspector's box
    panel.wait_for()
    assert "Forked at #300" in view.locator(".lion-view-status").first.inner_text()
    # continue the fork in its chat view: the scripted model's next reply answers
    prompt = panel.locator(".lion-view textarea")
    prompt.fill("What if we ask differently?")
    panel.locator("button:has-text('Send')").click()
    panel.get_by_text("FORK-ONLY-REPLY").wait_for(timeout=30_000)
    panel.locator("button.lion-tl-compare").click()
    compare = panel.locator(".lion-compare")
    compare.wait_for()
    assert (
        "301 shared messages (forked here)"
        in panel.locator(".lion-compare-prefix > summary").inner_text()
    )
    changed = compare.locator("[data-kind='changed']")
    assert changed.count() == 4  # the instruction and the reply differ on both sides
    assert "MARK-REPLY-1" in compare.inner_text() and "FORK-ONLY-REPLY" in compare.inner_text()
    compare.scroll_into_view_if_needed()
    screenshot(page, "fork_compare")
    assert page.watched.dialogs == [] and page.watched.external_requests == []


REACT = '''
import asyncio
from lion_nb import Branch, iModel
from lion_nb.widgets.rounds_view import ReActRoundsView

def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b

def mul(a: int, b: int) -> int:
    """Multiply two numbers."""
    return a * b

slow = 0.05
branch = Branch(system="Use tools.", name="calc", tools=[add, mul], chat_model=iModel(
    provider="scripted", replies=[
        {"json": {"analysis": "I need the sum and the product of the numbers first",
                  "extension_needed": True,
                  "action_requests": [{"function": "add", "arguments": {"a": 2, "b": 3}},
                                      {"function": "mul", "arguments": {"a": 4, "b": 5}}]},
         "delay": slow, "usage": {"input_tokens": 120, "output_tokens": 30}},
        {"json": {"analysis": "The sum is 5 and the product is 20, so I can answer now",
                  "extension_needed": False}, "delay": slow},
        {"json": {"answer": "FINAL-ANSWER-5-20"}, "delay": slow},
    ]))
rounds = ReActRoundsView(branch)
rounds
'''


def test_rounds_view_fills_in_during_a_live_react_run(page, jupyter_lab):
    release = jupyter_lab.root / "release-react"
    release.unlink(missing_ok=True)
    run = 'await branch.ReAct("Sum and product of 2,3 and 4,5", max_extensions=2)'
    nb = write_notebook(jupyter_lab, "react.ipynb", [REACT, held_until(release) + run])
    run_notebook_in_lab(page, jupyter_lab, nb)
    view = page.locator(".lion-rounds")
    view.wait_for(timeout=60_000)
    release.write_text("go")  # round 1 streams for ~1.5 s: a page drawn later never sees it
    states: list[tuple[str, ...]] = []
    streaming_seen = False
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        state = tuple(
            page.evaluate(
                "() => [...document.querySelectorAll('.lion-rounds .lion-round')]"
                ".map(e => e.dataset.round + ':' + e.dataset.status)"
            )
        )
        if not states or states[-1] != state:
            states.append(state)
        streaming_seen = streaming_seen or view.locator(".lion-streaming").count() > 0
        if state == ("1:done", "2:done", "3:done"):
            break
        time.sleep(0.05)
    assert states[-1] == ("1:done", "2:done", "3:done"), states
    # seen while it ran: round 1 streaming alone, then round 2 running after round 1 ended
    assert ("1:running",) in states
    assert ("1:done", "2:running") in states
    assert streaming_seen, "the analysis never streamed in"
    first = view.locator(".lion-round[data-round='1']")
    actions = first.locator(".lion-parallel > .lion-action")
    expect(actions).to_have_count(2, timeout=30_000)  # drawn anew at the cell's end, maybe now
    boxes = [actions.nth(i).bounding_box() for i in range(2)]
    for _ in range(50):  # a redraw still settling on a busy machine: measure the final layout
        if all(boxes):
            break
        time.sleep(0.1)
        boxes = [actions.nth(i).bounding_box() for i in range(2)]
    assert all(boxes), boxes
    assert abs(boxes[0]["y"] - boxes[1]["y"]) < 2 and boxes[0]["x"] < boxes[1]["x"]  # side by side
    assert "120 in · 30 out" in first.locator(".lion-round-head").inner_text()
    assert "FINAL-ANSWER-5-20" in view.locator(".lion-round-final").inner_text()
    first.scroll_into_view_if_needed()
    screenshot(page, "react_rounds")
    assert page.watched.dialogs == [] and page.watched.external_requests == []


PARSE = """
import json
from pydantic import BaseModel, Field
from lion_nb import Branch, iModel
from lion_nb.widgets.parse_view import ParseView

class Item(BaseModel):
    name: str
    price: float = Field(gt=0)

class Order(BaseModel):
    customer: str
    items: list[Item]
    note: str | None = None

text = json.dumps({"customer": "Ada Lovelace", "items": [
    {"name": f"item-{i}", "price": 1.5 + i} for i in range(6)],
    "note": "PARSE-NOTE-MARK delivered to the back door, please ring twice"})
chunks = [text[i:i + 6] for i in range(0, len(text), 6)]
branch = Branch(chat_model=iModel(provider="scripted",
                                  replies=[{"chunks": chunks, "delay": 0.03}]))
order_view = ParseView(Order, branch=branch)
order_view
"""


def test_parse_view_fills_in_while_the_reply_streams(page, jupyter_lab):
    release = jupyter_lab.root / "release-parse"
    release.unlink(missing_ok=True)
    run = 'await branch.communicate("Order please", response_format=Order)'
    nb = write_notebook(jupyter_lab, "parse.ipynb", [PARSE, held_until(release) + run])
    run_notebook_in_lab(page, jupyter_lab, nb)
    view = page.locator(".lion-parse")
    view.locator(".lion-parse-tree").wait_for(timeout=60_000)
    release.write_text("go")  # the reply streams for ~1.7 s: a page drawn later never sees it
    seen_pending = seen_partial = False
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        html = view.inner_html()
        seen_pending = seen_pending or ("not received yet" in html and "Ada Lovelace" in html)
        seen_partial = seen_partial or "lion-parse-partial" in html
        if "lion-parse-valid" in html:
            break
        time.sleep(0.05)
    assert "lion-parse-valid" in view.inner_html()
    assert seen_pending, "fields never showed as pending while earlier ones were complete"
    assert seen_partial, "a string never showed while it streamed"
    rows = view.locator("tr.lion-parse-row")
    # customer, items, 6 x (item, name, price), note; drawn anew at the cell's end, maybe now
    expect(rows).to_have_count(1 + 1 + 6 * 3 + 1, timeout=30_000)
    assert "PARSE-NOTE-MARK" in view.inner_text()
    assert "Attempt 0" in view.inner_text()
    screenshot(page, "parse_view")
    assert page.watched.dialogs == [] and page.watched.external_requests == []


LONG_PREVIEWS = """
from lion_nb import Branch, iModel
from lion_nb.messages import AssistantResponse, Instruction
from lion_nb.widgets.inspector import ProgressionInspector
branch = Branch(system="You are terse.", name="long previews",
                chat_model=iModel(provider="scripted"))
for i in range(25):
    branch.add_message(Instruction(
        instruction=f"Question {i}: https://example.org/a-very-long-unbroken-address-{i}-" + "x" * 300))
    branch.add_message(AssistantResponse(
        response=f"## Step {i}\\n\\n" + "**LONG-PREVIEW** words " * 60 + "\\n```python\\nprint(1)\\n```",
        metadata={"usage": {"input_tokens": 100000 + i, "output_tokens": 4000,
                            "total_cost_usd": 0.12345}}))
inspector = ProgressionInspector(branch)
inspector
"""


# the pager's controls: the children of the box holding the "First page" button
PAGER = ".lion-inspector :has(> button[title='First page']) > *"


def boxes(page, selector: str) -> list[dict]:
    return page.evaluate(
        "(sel) => [...document.querySelectorAll(sel)].map(e => {"
        " const r = e.getBoundingClientRect();"
        " return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; })",
        selector,
    )


def test_fork_buttons_stay_in_their_column_and_the_pager_is_one_line(page, jupyter_lab):
    view = open_inspector(page, jupyter_lab, "long_previews.ipynb", LONG_PREVIEWS)
    wait_rows(page, 1)  # 51 messages: the newest 50
    inner = boxes(page, ".lion-inspector")[0]
    forks = boxes(page, ".lion-inspector button.lion-tl-fork")
    assert len(forks) == 50
    outside = [i for i, b in enumerate(forks) if b["right"] > inner["right"] + 0.5]
    assert outside == [], f"{len(outside)} of 50 'Fork here' buttons past the inspector's edge"
    lefts = {round(b["left"]) for b in forks}
    assert len(lefts) == 1, f"the buttons are not in one column: {sorted(lefts)}"
    # previews are plain text: no Markdown markup
    text = view.locator(".lion-tl-row[data-index='2'] .lion-tl-preview").inner_text()
    assert text.startswith("Step 0 LONG-PREVIEW words") and "**" not in text and "##" not in text
    # the pager: every control on one line, inside the inspector while the notebook is wide
    # enough for it (narrower, it scrolls sideways rather than wrap)
    for width in (1280, 1000, 800):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_function(
            "(w) => document.querySelector('.lion-inspector').getBoundingClientRect().right < w",
            arg=width,
        )
        page.wait_for_timeout(300)  # the flex layout settles after the resize
        inner = boxes(page, ".lion-inspector")[0]
        pager = boxes(page, PAGER)
        assert len(pager) == 9
        tops, bottoms = [b["top"] for b in pager], [b["bottom"] for b in pager]
        assert max(tops) < min(bottoms), f"the pager wraps at {width}px: tops {tops}"
        if width >= 1000:
            assert max(b["right"] for b in pager) <= inner["right"] + 0.5, width
        forks = boxes(page, ".lion-inspector button.lion-tl-fork")
        assert all(b["right"] <= inner["right"] + 0.5 for b in forks), width
        if width == 800:
            screenshot(page, "inspector_long_previews_800px")
    page.set_viewport_size({"width": 1280, "height": 900})
    screenshot(page, "inspector_long_previews")
    assert page.watched.dialogs == [] and page.watched.external_requests == []


def test_opening_one_rows_payload_keeps_anothers_open(page, jupyter_lab):
    view = open_inspector(page, jupyter_lab, "two_payloads.ipynb", HISTORY)
    wait_rows(page, 253)

    def line(index: int):
        return view.locator(
            ".lion-tl-line", has=page.locator(f".lion-tl-row[data-index='{index}']")
        )

    def payload(index: int):
        return view.locator(f".lion-tl-detail[data-index='{index}'] details.lion-payload")

    line(290).locator("button.lion-tl-toggle").click()
    payload(290).locator("summary").click()
    payload(290).locator("pre.lion-json").wait_for()
    # expanding an earlier row and opening its payload keeps #290's open
    line(270).locator("button.lion-tl-toggle").click()
    payload(270).locator("summary").click()
    payload(270).locator("pre.lion-json").wait_for()
    assert payload(290).evaluate("e => e.open") and payload(270).evaluate("e => e.open")
    assert page.watched.dialogs == [] and page.watched.external_requests == []


LIVE = """
from lion_nb import Branch, iModel
from lion_nb.messages import AssistantResponse, Instruction
from lion_nb.widgets.inspector import ProgressionInspector
replies = [{"chunks": [f"LIVE-REPLY-{i} " + "w " * 3] * 4, "delay": 0.08} for i in range(8)]
branch = Branch(system="You are terse.", name="live",
                chat_model=iModel(provider="scripted", replies=replies))
for i in range(60):
    branch.add_message(Instruction(instruction=f"question number {i}"))
    branch.add_message(AssistantResponse(response=f"answer {i}"))
inspector = ProgressionInspector(branch, page_size=20, refresh_interval=0.1)
inspector
"""

RUN = """
for i in range(8):
    await branch.communicate(f"LIVE-QUESTION-{i}")
print("LIVE-RUN-" + "DONE")
"""


KEPT = """() => {
  const done = document.body.innerText.includes("LIVE-RUN-DONE");
  const view = document.querySelector(".lion-inspector");
  const rows = [...view.querySelectorAll(".lion-tl-row")].map((e) => +e.dataset.index);
  const row = view.querySelector('.lion-tl-item[data-index="120"]');
  return [done, rows, view.__mark === 1 && (!row || row.__mark === 1)];
}"""


def test_the_inspector_follows_a_run_and_works_by_keyboard(page, jupyter_lab):
    release = jupyter_lab.root / "release-inspector"
    release.unlink(missing_ok=True)
    nb = write_notebook(jupyter_lab, "inspector_live.ipynb", [LIVE, held_until(release) + RUN])
    run_notebook_in_lab(page, jupyter_lab, nb)
    view = page.locator(".lion-inspector")
    view.locator(".lion-tl-row").first.wait_for(timeout=60_000)
    wait_rows(page, 101, 20)  # 121 messages: the newest 20
    # mark the view and a row that stays on the page through the first updates
    page.evaluate(
        "() => { const v = document.querySelector('.lion-inspector'); v.__mark = 1;"
        " v.querySelector('.lion-tl-item[data-index=\"120\"]').__mark = 1; }"
    )
    release.write_text("go")  # the run starts once the marks are on
    seen: list[int] = []
    kept = True  # the view, and row #120 while it is shown, are the elements marked
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        # one look at the page: at the cell's end its saved output is refreshed, and Lab draws
        # the view anew (after the cell's last output, so "done" is seen by then)
        done, indices, same = page.evaluate(KEPT)
        if indices and (not seen or seen[-1] != indices[-1]):
            seen.append(indices[-1])
        kept = kept and (done or same)
        if done:
            break
        time.sleep(0.05)
    # the run's end refreshes the saved output at the cell's end, and Lab draws the view anew:
    # the keyboard below works in the new one (the old one's focus would go with it)
    page.wait_for_function(
        "() => { const v = document.querySelector('.lion-inspector');"
        " return v && v.__mark === undefined && v.querySelectorAll('.lion-tl-row').length === 20; }",
        timeout=30_000,
    )
    wait_rows(page, 117, 20)  # 16 messages added: it followed them to the end
    seen += [136] if seen[-1] != 136 else []
    assert len(seen) >= 4, f"the rows followed the run in too few steps: {seen}"
    assert seen == sorted(seen) and seen[-1] == 136, seen
    assert kept, "the view or a row that stayed on the page was drawn anew during the run"
    assert "LIVE-REPLY-7" in view.locator(".lion-tl-row[data-index='136']").inner_text()
    assert "137 messages" in view.locator(".lion-tl-header").inner_text()
    # the pager by keyboard: its controls are named, and keep the focus while they page
    prev = view.get_by_role("button", name="Previous page")
    prev.focus()
    page.keyboard.press("Enter")
    wait_rows(page, 97, 20)
    page.keyboard.press("Enter")
    wait_rows(page, 77, 20)
    assert page.evaluate("() => document.activeElement.getAttribute('aria-label')") == (
        "Previous page"
    )
    page.keyboard.press("Tab")  # the position text is not a stop: Next page is
    assert page.evaluate("() => document.activeElement.getAttribute('aria-label')") == "Next page"
    page.keyboard.press("Enter")
    wait_rows(page, 97, 20)
    assert "98–117 of 137" in view.locator(".lion-tl-page").inner_text()
    # a row expanded and collapsed by keyboard; its control says which message and its state
    toggle = view.get_by_role("button", name="Expand message 100")
    assert toggle.get_attribute("aria-expanded") == "false"
    toggle.focus()
    page.keyboard.press("Enter")
    detail = view.locator(".lion-tl-detail[data-index='100']")
    detail.wait_for()
    assert "What the model saw" in detail.inner_text()
    collapse = view.get_by_role("button", name="Collapse message 100")
    assert collapse.get_attribute("aria-expanded") == "true"
    assert page.evaluate("() => document.activeElement.getAttribute('aria-label')") == (
        "Collapse message 100"
    )  # the same control, still focused
    page.keyboard.press("Space")
    detail.wait_for(state="detached")
    assert view.get_by_role("button", name="Fork at message 100").count() == 1
    # every control is named, and no two alike (each says what it acts on)
    names = page.evaluate(
        "() => [...document.querySelectorAll('.lion-inspector button, .lion-inspector input,"
        " .lion-inspector select')].filter(e => !e.closest('[hidden]'))"
        ".map(e => e.getAttribute('aria-label') || '')"
    )
    assert "" not in names and len(names) == len(set(names)), " | ".join(names)
    # the first page reached by keyboard: its buttons are disabled, the focus goes to Next
    view.get_by_role("button", name="First page").focus()
    page.keyboard.press("Enter")
    wait_rows(page, 0, 20)
    page.wait_for_function(
        "() => document.activeElement.getAttribute('aria-label') === 'Next page'"
    )
    # the go-to box: typed digits stay in it (not JupyterLab's shortcuts), Enter goes
    goto = view.get_by_role("spinbutton", name="Message number to show")
    goto.focus()
    page.keyboard.press("Control+A")
    page.keyboard.type("12")
    page.keyboard.press("Enter")
    view.locator(".lion-tl-detail[data-index='12']").wait_for()
    wait_rows(page, 0, 20)
    # the role filter
    view.get_by_role("combobox", name="Show the messages of").select_option("user")
    page.wait_for_function(
        "() => [...document.querySelectorAll('.lion-inspector .lion-tl-row')]"
        ".every(e => e.classList.contains('lion-user'))"
    )
    assert "(user)" in view.locator(".lion-tl-page").inner_text()
    for name in ("First page", "Last page", "Collapse all messages"):
        assert view.get_by_role("button", name=name).count() == 1, name
    screenshot(page, "inspector_keyboard")
    assert page.watched.console_errors == [], page.watched.console_errors
    assert page.watched.dialogs == [] and page.watched.external_requests == []
