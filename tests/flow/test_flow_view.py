"""``FlowView``: the widget maps the view model to stock ipywidgets; rows, open, Stop."""

from __future__ import annotations

import asyncio

from flow.waiting import until
from helpers_core import scripted

from lion_nb import Branch
from lion_nb.flow import Flow, FlowView
from lion_nb.flow.node import Status
from lion_nb.render.flow import flow_html


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
    task = asyncio.create_task(flow.run())
    await until(lambda: node.status is Status.RUNNING)
    view._stop.click()
    try:
        await task
    except asyncio.CancelledError:
        pass
    assert task.cancelled() and node.status is Status.FAILED and len(b.messages) == 0
    view.close()
