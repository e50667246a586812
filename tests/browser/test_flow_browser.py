"""FlowView in JupyterLab + chromium: a small flow on the local engine with a slow
scripted model, drawn live; Stop clicked mid-run; then what the rows, the button and the time
strip say, against what the flow holds (screenshots in test-artifacts/)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.support.front_ends import screenshot
from tests.support.lab_notebooks import (
    kernel_execute,
    run_notebook_in_lab,
    shutdown_kernels,
    write_notebook,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]

SETUP = """
import asyncio
from lion_nb import FlowView, Session, iModel
from lion_nb.flow import Flow

def reply(request):
    prompt = request.messages[-1]["content"]
    if prompt.startswith("Outline"):
        return {"text": "1. Tides and the Moon\\n2. Spring and neap tides\\n3. Tide tables",
                "delay": 0.05}
    return {"chunks": [f"word{i} " for i in range(3000)], "delay": 0.02}

session = Session(name="flows")
model = iModel(provider="scripted", default_reply=reply)
template = session.new_branch(system="You write short talks.", chat_model=model, name="template")
talk = Flow(session, name="talk on tides")
outline = talk.add("communicate", instruction="Outline a talk on tides", branch=template.fork())
sections = [
    talk.add("communicate", instruction=f"Write section {n} of the talk, in plain words",
             depends_on=[outline], node_name=f"section {n}")
    for n in (1, 2, 3)
]
ending = talk.add("communicate", instruction="Conclude the talk", depends_on=sections)
view = FlowView(talk)
view
"""
# in the background, so the kernel stays free for the Stop click (a cell awaiting the run
# would hold the shell channel until the run ends)
RUN = "run = asyncio.ensure_future(talk.run(max_concurrent=2))"


@pytest.fixture(autouse=True)
def _no_kernels_left(jupyter_lab):
    yield
    shutdown_kernels(jupyter_lab)


def _row_texts(view: Any) -> list[str]:
    return view.locator(".lion-flow-cells").evaluate_all(
        "cells => cells.map(c => c.innerText.replace(/\\s+/g, ' ').trim())"
    )


def _fields_wrapped(page: Any) -> list[str]:
    """The fields of the rows that the browser broke over two lines (none should be): a
    field's line boxes (one per inline child) must all overlap vertically."""
    return page.evaluate(
        "() => [...document.querySelectorAll('.lion-flow-view .lion-flow-f')].filter(f => {"
        " const r = [...f.getClientRects()];"
        " const top = Math.max(...r.map(x => x.top)), bottom = Math.min(...r.map(x => x.bottom));"
        " return top >= bottom || getComputedStyle(f).whiteSpace !== 'nowrap';"
        "}).map(f => f.innerText)"
    )


def _bars(view: Any) -> list[dict[str, Any]]:
    return view.locator(".lion-flow-strip .lion-flow-bar").evaluate_all(
        "bars => bars.map(b => ({cls: b.className, width: b.getBoundingClientRect().width,"
        " left: b.getBoundingClientRect().left}))"
    )


def test_stop_in_jupyterlab_reads_stopped_and_cancelled_and_the_strip_shows_the_run(
    page, jupyter_lab
):
    lab = jupyter_lab
    run_notebook_in_lab(page, lab, write_notebook(lab, "flow_stop.ipynb", [SETUP, RUN]))
    view = page.locator(".lion-flow-view").first
    view.locator(".lion-flow-cells").nth(4).wait_for(timeout=60_000)
    news = page.get_by_role("button", name="No", exact=True)  # Lab's news prompt hides the view
    if news.is_visible():
        news.click()
    stop = view.locator("button.lion-flow-stop")

    # live: two sections run at once (max_concurrent=2), their bars grow while they run
    page.wait_for_function(
        "() => document.querySelectorAll('.lion-flow-view .lion-flow-bar.lion-flow-running')"
        ".length === 2",
        timeout=60_000,
    )
    assert stop.is_enabled()
    # Lab skips drawing what is off screen (content-visibility): measure the strip in view
    view.locator(".lion-flow-strip-box").scroll_into_view_if_needed()
    first = _bars(view)
    for _ in range(100):  # laid out once in view (a busy machine draws it late)
        if all(b["width"] > 0 for b in first):
            break
        page.wait_for_timeout(100)
        first = _bars(view)
    page.wait_for_timeout(1500)
    later = _bars(view)
    running = [i for i, b in enumerate(later) if "lion-flow-running" in b["cls"]]
    assert len(running) == 2

    def rescaled(bars: list[dict[str, Any]]) -> bool:
        # the strip rescales as time passes: the outline's bar shrinks, the running ones widen
        grew = all(bars[i]["width"] > first[i]["width"] for i in running)
        return grew and bars[0]["width"] < first[0]["width"]

    for _ in range(50):
        if rescaled(later):
            break
        page.wait_for_timeout(200)
        later = _bars(view)
    assert rescaled(later), (first, later)
    texts = _row_texts(view)
    assert "running" in texts[1] and "running" in texts[2] and "pending" in texts[3]
    screenshot(page, "flow_running")

    stop.click()
    view.locator(".lion-flow-head", has_text="2 stopped").wait_for(timeout=30_000)
    # the unstarted nodes settle a moment later (an update of their own may follow)
    view.locator(".lion-flow-head", has_text="2 cancelled").wait_for(timeout=30_000)
    page.wait_for_function(
        "() => document.querySelector('.lion-flow-view button.lion-flow-stop').disabled",
        timeout=30_000,
    )
    texts = _row_texts(view)
    assert texts[0].startswith("1. completed · communicate Outline a talk on tides"), texts
    assert [t.split(" · ")[0] for t in texts] == [
        "1. completed",
        "2. stopped",
        "3. stopped",
        "4. cancelled",
        "5. cancelled",
    ], texts
    assert "section 1" in texts[1] and "template" not in texts[1]  # the fork's own name
    body = view.inner_text()
    assert "CancelledError" not in body and "failed" not in body and "pending" not in body
    head = view.locator(".lion-flow-head").inner_text()
    assert "1 completed" in head and "2 stopped" in head and "2 cancelled" in head
    # "Stopping…" while the run winds down, then "Stop" again, disabled: a message after the rows
    expect(stop).to_have_text("Stop", timeout=30_000)
    assert stop.is_disabled()

    # the picture: one lane per node, a bar for each that ran (the outline and two sections)
    lanes = view.locator(".lion-flow-strip .lion-flow-lane")
    assert lanes.count() == 5
    bars = _bars(view)
    assert [b["cls"].split()[-1] for b in bars] == [
        "lion-flow-completed",
        "lion-flow-stopped",
        "lion-flow-stopped",
    ]
    assert all(b["width"] >= 2 for b in bars)
    assert bars[1]["left"] >= bars[0]["left"] + bars[0]["width"] - 2  # after the outline
    infos = lanes.locator(".lion-flow-lane-info").all_inner_texts()
    assert all(i.endswith("kernel") for i in infos[:3]) and infos[3:] == ["", ""]
    assert lanes.nth(3).locator(".lion-flow-nobar").inner_text() == "cancelled"
    assert _fields_wrapped(page) == []
    view.locator(".lion-flow-strip-box").scroll_into_view_if_needed()
    screenshot(page, "flow_stopped")

    # narrow: rows wrap between fields, never inside one ("552 ms" stays whole)
    page.set_viewport_size({"width": 560, "height": 900})
    page.wait_for_timeout(300)
    view.locator(".lion-flow-strip-box").scroll_into_view_if_needed()
    assert _fields_wrapped(page) == []
    heights = view.locator(".lion-flow-cells").evaluate_all(
        "cells => cells.map(c => c.getBoundingClientRect().height)"
    )
    assert max(heights) > min(heights)  # some row did wrap, between its fields
    screenshot(page, "flow_stopped_narrow")

    # what the flow holds: the stopped sections kept what they streamed, as stopped turns
    out = kernel_execute(
        lab,
        "import json\nprint(json.dumps([[n.status.value, n.branch.name if n.branch else None,"
        " [bool(m.metadata.get('stopped')) for m in n.branch.messages] if n.branch else []]"
        " for n in talk]))",
    )
    held = json.loads(out.strip().splitlines()[-1])
    assert [h[0] for h in held] == ["completed", "stopped", "stopped", "cancelled", "cancelled"]
    assert [h[1] for h in held[1:3]] == ["section 1", "section 2"]
    for _, _, stopped in held[1:3]:  # system, outline exchange, own instruction, partial reply
        assert stopped == [False, False, False, False, True]
