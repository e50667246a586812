"""``FlowView``: the widget maps the view model to stock ipywidgets; rows, open, Stop."""

from __future__ import annotations

import asyncio
import contextlib

from flow.waiting import until
from helpers_core import scripted

from lion_nb import Branch
from lion_nb.flow import Flow, FlowView
from lion_nb.flow.node import Status
from lion_nb.render.flow import flow_html
from lion_nb.session.session import Session
from lion_nb.signals import StreamDelta


async def test_rows_follow_the_flow_and_open_shows_the_transcript():
    b = Branch(name="main", chat_model=scripted("outline reply", "intro reply"))
    flow = Flow(name="talk")
    first = flow.add("communicate", instruction="Outline", branch=b)
    flow.add("communicate", instruction="Intro", depends_on=[first])
    view = FlowView(flow, refresh_interval=0)
    assert len(view._list.children) == 2
    assert "pending" in view._rows[first.id].cells.value
    await flow.run()
    view._refresh.flush()
    assert "completed" in view._rows[first.id].cells.value
    assert "2 completed" in view._header.value
    view._rows[first.id].button.click()
    view._refresh.flush()
    assert "outline reply" in view._detail.value and "Outline" in view._detail.value
    assert view._rows[first.id].button.description == "close"
    view._rows[first.id].button.click()
    view._refresh.flush()
    assert view._detail.value == ""
    assert view.static_html() == flow_html(view.model.snapshot())
    assert view.static_text().startswith("talk\n1. [completed] communicate: Outline")
    view.close()
    assert view.closed


async def test_nodes_added_later_get_rows():
    flow = Flow()
    view = FlowView(flow, refresh_interval=0)
    node = flow.add("communicate", instruction="x", branch=Branch(chat_model=scripted("y")))
    await flow.run()
    view._refresh.flush()
    assert node.id in view._rows and "completed" in view._rows[node.id].cells.value
    view.close()


async def test_stop_cancels_the_flows_run():
    b = Branch(chat_model=scripted({"chunks": ["a"] * 50, "delay": 0.1}))
    flow = Flow()
    node = flow.add("communicate", instruction="x", branch=b)
    view = FlowView(flow, refresh_interval=0)
    assert view.stop() is False  # nothing running
    deltas: list = []
    b.observe(StreamDelta, handler=deltas.append)
    task = asyncio.create_task(flow.run())
    await until(lambda: len(deltas) >= 2, what="two chunks streamed")
    view._stop.click()
    try:
        await task
    except asyncio.CancelledError:
        pass
    assert task.cancelled() and node.status is Status.STOPPED
    # the flow gave communicate on_stop="record": the stopped turn stays on the branch
    assert [(m.role, bool(m.metadata.get("stopped"))) for m in b.messages] == [
        ("user", False),
        ("assistant", True),
    ]
    view.close()


async def test_stop_is_enabled_only_while_the_flow_runs():
    slow = {"chunks": ["a"] * 30, "delay": 0.01}
    b = Branch(chat_model=scripted(slow, slow))
    flow = Flow()
    node = flow.add("communicate", instruction="x", branch=b)
    view = FlowView(flow, refresh_interval=0)
    assert view._stop.disabled is True  # nothing to stop yet
    task = asyncio.create_task(flow.run())
    await until(lambda: node.status is Status.RUNNING)
    view._refresh.flush()
    assert view._stop.disabled is False and view._stop.description == "Stop"
    await task
    view._refresh.flush()
    assert view._stop.disabled is True  # the run ended: the button says so
    # a second run: enabled again while it runs, disabled once it is stopped
    later = flow.add("communicate", instruction="y", branch=b)
    task = asyncio.create_task(flow.run())
    await until(lambda: later.status is Status.RUNNING)
    view._refresh.flush()
    assert view._stop.disabled is False
    view._stop.click()
    assert view._stop.disabled is True and view._stop.description == "Stopping…"
    with contextlib.suppress(asyncio.CancelledError):
        await task
    view._refresh.flush()
    assert view._stop.disabled is True and view._stop.description == "Stop"
    view.close()


async def test_a_stopped_flow_shows_stopped_and_cancelled_rows_and_the_time_strip_live():
    session = Session()
    model = scripted(default_reply={"chunks": ["tok "] * 300, "delay": 0.01})
    template = session.new_branch(name="template", chat_model=model)
    flow = Flow(session, name="talk")
    outline = flow.add("communicate", instruction="Outline", branch=template.fork())
    sections = [
        flow.add("communicate", instruction=f"Write section {n}", depends_on=[outline])
        for n in (1, 2)
    ]
    view = FlowView(flow, refresh_interval=0)
    assert view._strip.value.count('class="lion-flow-lane ') == 3
    assert 'class="lion-flow-bar ' not in view._strip.value  # nothing ran yet
    task = asyncio.create_task(flow.run())
    await until(lambda: outline.status is Status.RUNNING)
    await asyncio.sleep(0.05)
    view._refresh.flush()
    assert 'class="lion-flow-bar lion-flow-running"' in view._strip.value  # live
    view._stop.click()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    view._refresh.flush()
    cells = [view._rows[n.id].cells.value for n in (outline, *sections)]
    assert "lion-flow-stopped" in cells[0] and ">stopped<" in cells[0]
    assert all(">cancelled<" in c for c in cells[1:])
    assert not any("failed" in c or "CancelledError" in c for c in cells)
    assert "1 stopped · 2 cancelled" in view._header.value
    assert view._strip.value.count('class="lion-flow-bar lion-flow-stopped"') == 1
    assert view._strip.value.count('<span class="lion-flow-nobar">cancelled</span>') == 2
    assert view._strip.value in view.static_html()  # the saved notebook shows the picture
    # what the outline streamed stayed on its branch, as a stopped turn
    assert outline.branch.messages[-1].metadata.get("stopped") is True
    view.close()


async def test_the_time_strip_shows_one_bar_per_node_that_ran():
    b = Branch(name="main", chat_model=scripted(default_reply={"text": "ok", "delay": 0.02}))
    flow = Flow()
    first = flow.add("communicate", instruction="Outline", branch=b)
    for n in (1, 2, 3):
        flow.add("communicate", instruction=f"Write section {n}", depends_on=[first])
    view = FlowView(flow, refresh_interval=0)
    await flow.run()
    view._refresh.flush()
    assert view._strip.value.count('class="lion-flow-bar lion-flow-completed"') == 4
    assert view._strip.value.count("· kernel</span>") == 4
    assert "2. Write section 1" in view._strip.value
    view.close()
