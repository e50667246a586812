"""The turn, in code and in the chat view, in JupyterLab + chromium: code and the chat view are one product. Each test retries
one of the problems found on 0.2 as a user meets it — a cell run beside the view, a kernel
interrupt, a parse with a repair turn, a long history, Regenerate with Compare open, Continue,
a saved notebook — and checks the page against what the branch holds (screenshots in
test-artifacts/)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.support.front_ends import screenshot
from tests.support.lab_notebooks import (
    interrupt_kernel,
    kernel_client,
    kernel_execute,
    kernel_reply,
    run_notebook_in_lab,
    shutdown_kernels,
    write_notebook,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]

SETUP = """
import lion_nb
from lion_nb import Session, iModel
from lion_nb.messages import AssistantResponse, Instruction
model = iModel(provider="scripted", replies={replies}, default_reply="DEFAULT-REPLY"{model_kw})
branch = Session().new_branch(system="S", chat_model=model, name="demo")
{history}
view = lion_nb.view(branch, height=420)
view
"""
LONG_HISTORY = """
for n in range(6):
    branch.add_message(Instruction(instruction=f"old question {n}"))
    branch.add_message(AssistantResponse(response=" ".join(["word"] * 200)))
"""
TRUNCATED = """
branch.add_message(Instruction(instruction="story"))
branch.add_message(AssistantResponse(response="Once upon a", metadata={"finish_reason": "length"}))
"""


@pytest.fixture(autouse=True)
def _no_kernels_left(jupyter_lab):
    yield
    shutdown_kernels(jupyter_lab)


def _open(page: Any, lab: Any, name: str, replies: str, history: str = "", model_kw: str = ""):
    setup = SETUP.format(replies=replies, history=history, model_kw=model_kw)
    run_notebook_in_lab(page, lab, write_notebook(lab, name, [setup]))
    root = page.locator(".lion-front").first
    root.locator(".lion-prompt").wait_for(timeout=60_000)
    return root


def _held(lab: Any) -> list[list[Any]]:
    out = kernel_execute(
        lab,
        "import json\nprint(json.dumps([[m.role, m.text[:60], bool(m.metadata.get('stopped'))]"
        " for m in view.branch.messages]))",
    )
    return json.loads(out.strip().splitlines()[-1])


def _card_texts(root: Any) -> list[str]:
    return root.locator(".lion-transcript > .lion-part").evaluate_all(
        "parts => parts.map(p => p.innerText.replace(/\\s+/g, ' ').trim())"
    )


def test_an_interrupted_cell_turn_leaves_no_kept_card(page, jupyter_lab):
    replies = '[{"chunks": [f"tok{i} " for i in range(3000)], "delay": 0.02}, "REAL-REPLY"]'
    root = _open(page, jupyter_lab, "interrupt.ipynb", replies)
    # a cell awaits communicate (run by a second client); Kernel -> Interrupt while tokens
    # stream, as a user does
    with kernel_client(jupyter_lab) as client:
        msg_id = client.execute("await branch.communicate('asked in a cell')")
        # while it streams, the instruction is shown, pending, before the reply
        root.locator(".lion-user.lion-pending:has-text('asked in a cell')").wait_for(timeout=20_000)
        page.wait_for_function(
            "() => [...document.querySelectorAll('.lion-front .lion-assistant')]"
            ".some(e => e.innerText.includes('tok5 '))",
            timeout=20_000,
        )
        texts = _card_texts(root)
        assert "asked in a cell" in texts[-2] and "tok1" in texts[-1], texts
        screenshot(page, "turn_code_started_streaming")
        interrupt_kernel(jupyter_lab)
        ended = kernel_reply(client, msg_id)
    assert ended["status"] == "error" and ended["ename"] in ("CancelledError", "KeyboardInterrupt")
    root.locator(".lion-unrecorded-msg").first.wait_for(timeout=10_000)
    assert root.locator(".lion-assistant.lion-unrecorded-msg").count() == 1
    assert "not recorded" in root.locator(".lion-view-statusline").inner_text() or (
        "nothing was recorded" in root.locator(".lion-view-statusline").inner_text()
    )
    screenshot(page, "turn_code_interrupted")
    assert _held(jupyter_lab) == [["system", "S", False]]  # the ADR's contract: nothing kept
    kernel_execute(jupyter_lab, "await branch.communicate('next from code')")
    root.locator(".lion-assistant:has-text('REAL-REPLY')").wait_for(timeout=10_000)
    page.wait_for_timeout(300)
    texts = _card_texts(root)
    assert len(texts) == 3 and "next from code" in texts[1] and "REAL-REPLY" in texts[2], texts
    assert root.locator(".lion-unrecorded-msg").count() == 0
    assert page.watched.console_errors == [], page.watched.console_errors


def test_a_parse_with_a_repair_turn_ends_parsed_with_no_card_left(page, jupyter_lab):
    replies = '[{"text": "{\\"item\\": \\"tea\\", \\"qty\\": 2}", "delay": 0.03}]'
    root = _open(page, jupyter_lab, "parse_repair.ipynb", replies)
    out = kernel_execute(
        jupyter_lab,
        "from pydantic import BaseModel\nclass Order(BaseModel):\n    item: str\n    qty: int\n"
        "print(await branch.parse('two teas please', Order))",
    )
    assert "item='tea' qty=2" in out
    status = root.locator(".lion-view-statusline")
    status.locator(":text('parsed into Order')").wait_for(timeout=10_000)
    page.wait_for_timeout(400)
    assert "retrying" not in status.inner_text()
    assert root.locator(".lion-assistant").count() == 0  # the repair reply is not kept
    assert root.locator(".lion-streaming-msg").count() == 0
    screenshot(page, "turn_parse_repaired")


def test_an_overflow_from_a_cell_says_fit_context_and_the_view_cuts(page, jupyter_lab):
    root = _open(
        page,
        jupyter_lab,
        "overflow.ipynb",
        '["FITTED-REPLY"]',
        history=LONG_HISTORY,
        model_kw=", context_window=900, max_tokens=100",
    )
    gauge = root.locator(".lion-gauge-text")
    gauge.wait_for(timeout=10_000)
    assert "left out (fit_context)" in gauge.inner_text()
    out = kernel_execute(
        jupyter_lab,
        "try:\n    await branch.communicate('from a cell')\n"
        "except lion_nb.errors.ContextWindowError as e:\n"
        "    print('REFUSED', e, '| cause:', e.__cause__, '| sent:', len(model.provider.requests))",
    )
    assert "REFUSED" in out and "fit_context=True" in out and "cause: None" in out, out
    assert "sent: 0" in out
    prompt = root.locator(".lion-prompt")
    prompt.fill("from the view")
    prompt.press("Enter")
    root.locator(".lion-assistant:has-text('FITTED-REPLY')").wait_for(timeout=30_000)
    notice = root.locator(".lion-ctx-cut")
    notice.wait_for(timeout=10_000)
    assert "left out" in notice.inner_text()
    screenshot(page, "turn_overflow_cut")
    assert len(_held(jupyter_lab)) == 15  # the branch keeps every message


def test_regenerate_names_the_branch_shown_and_compare_follows(page, jupyter_lab):
    root = _open(page, jupyter_lab, "regen_title.ipynb", '["FIRST", "SECOND", "THIRD"]')
    prompt = root.locator(".lion-prompt")
    prompt.fill("hello")
    prompt.press("Enter")
    root.locator(".lion-assistant:has-text('FIRST')").wait_for(timeout=30_000)
    root.locator(".lion-assistant .lion-act:has-text('Regenerate')").click()
    root.locator(".lion-assistant:has-text('SECOND')").wait_for(timeout=30_000)
    root.locator(".lion-title:has-text('demo · Alternative 2 of 2')").wait_for(timeout=10_000)
    # the title comes at once, the status line in a message after it
    line = root.locator(".lion-view-statusline")
    expect(line).to_contain_text("view.branch now points to it", timeout=30_000)
    status = line.inner_text()
    tip = root.locator(".lion-view-statusline .lion-view-status").get_attribute("title") or ""
    fork_id = kernel_execute(jupyter_lab, "print(str(view.branch.id)[:8])").strip()
    assert "view.branch now points to it" in status and fork_id not in status, status
    assert fork_id in tip, tip  # ids only in the tooltip
    root.locator(".lion-switch .lion-act:has-text('Compare')").click()
    panel = root.locator(".lion-compare-panel")
    panel.wait_for(timeout=10_000)
    assert "SECOND" in panel.inner_text()
    root.locator(".lion-transcript .lion-assistant .lion-act:has-text('Regenerate')").click()
    # the transcript's card (the panel, which follows the view, shows the same card)
    root.locator(".lion-transcript .lion-assistant:has-text('THIRD')").wait_for(timeout=30_000)
    panel.locator(":text('THIRD')").first.wait_for(timeout=10_000)  # it followed the view
    screenshot(page, "turn_regenerate_titled_compare")
    shown = kernel_execute(jupyter_lab, "print(view.compare_html)")
    assert "(requests)" in shown or "(runs)" in shown, shown  # from the runs, not the prompt


def test_a_continued_reply_cannot_be_continued_twice(page, jupyter_lab):
    root = _open(page, jupyter_lab, "continue_once.ipynb", '["THE-REST"]', history=TRUNCATED)
    cut = root.locator(".lion-assistant:has-text('Once upon a')")
    cut.locator(".lion-act:has-text('Continue')").click()
    root.locator(".lion-assistant:has-text('THE-REST')").wait_for(timeout=30_000)
    cut.locator(":text('continued below')").wait_for(timeout=10_000)
    assert cut.locator(".lion-act:has-text('Continue')").count() == 0
    screenshot(page, "turn_continued_once")
    held = _held(jupyter_lab)
    assert [m[0] for m in held] == ["system", "user", "assistant", "user", "assistant"]


def test_the_saved_notebook_shows_the_truncated_mark(page, jupyter_lab):
    import nbformat

    root = _open(page, jupyter_lab, "saved_marks.ipynb", '["x"]', history=TRUNCATED)
    root.locator(".lion-cut-badge").wait_for(timeout=30_000)
    html = kernel_execute(jupyter_lab, "print(view.rendered_html())")
    assert "lion-cut-badge" in html and ">truncated<" in html
    page.locator(".jp-Notebook").first.click()
    deadline = 20
    saved_html = ""
    for _ in range(deadline):
        page.keyboard.press("Control+s")
        page.wait_for_timeout(1000)
        saved = nbformat.read(jupyter_lab.root / "saved_marks.ipynb", as_version=4)
        saved_html = "".join(
            o.get("data", {}).get("text/html", "") for o in saved.cells[0].get("outputs", [])
        )
        if "lion-cut-badge" in saved_html:
            break
    assert "lion-cut-badge" in saved_html and "truncated" in saved_html
