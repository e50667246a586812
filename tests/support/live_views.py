"""The rounds, parse and flow views and the progression inspector live, the same way in every
front end (JupyterLab 4, Notebook 7, Voilà, marimo): the notebook that shows the view with a
button that starts its run (so the page samples it from the run's start, however long the front
end takes to draw it), the kernel noting when the run's first content reached it, and the run
driven and measured (``tests/support/page_measure.py``: what the view shows every frame, the bytes
the page receives).

The rounds, parse and flow views are fed at ~50 chunks a second for a few seconds (the flow
view with the streaming node's transcript open: it follows only the open node's stream); the
inspector gets 20 scripted ``communicate`` turns (two messages each, ~6 turns a second): its
visible updates are rows arriving and its heading changing, throttled by its
``refresh_interval`` (0.25 s), and its first content is the run's first message added."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any, NamedTuple

from tests.support.page_measure import (
    FIRST_MESSAGE,
    FIRST_TEXT,
    Bytes,
    start_view_sampler,
    view_figures,
)

ROUNDS = """
from lion_nb import Branch, iModel
from lion_nb.widgets.rounds_view import ReActRoundsView
def add(a: int, b: int) -> int:
    \"\"\"Add two numbers.\"\"\"
    return a + b
thought = " ".join(f"step{i}" for i in range(200))
branch = Branch(system="Use tools.", tools=[add], chat_model=iModel(provider="scripted", replies=[
    {"json": {"analysis": thought, "extension_needed": True,
              "action_requests": [{"function": "add", "arguments": {"a": 2, "b": 3}}]},
     "delay": 0.02},
    {"json": {"analysis": thought, "extension_needed": False}, "delay": 0.02},
    {"json": {"answer": "ROUNDS-DONE"}, "delay": 0.02}]))
view = ReActRoundsView(branch)
"""

PARSE = """
import json
from pydantic import BaseModel
from lion_nb import Branch, iModel
from lion_nb.widgets.parse_view import ParseView
class Item(BaseModel):
    name: str
    price: float
class Order(BaseModel):
    customer: str
    items: list[Item]
text = json.dumps({"customer": "Ada", "items": [
    {"name": f"item-{i}", "price": 1.5 + i} for i in range(30)]})
chunks = [text[i:i + 6] for i in range(0, len(text), 6)]
branch = Branch(chat_model=iModel(provider="scripted", replies=[{"chunks": chunks, "delay": 0.02}]))
view = ParseView(Order, branch=branch)
"""

FLOW = """
from lion_nb import FlowView, Session, iModel
from lion_nb.flow import Flow
def reply(request):
    if request.messages[-1]["content"].startswith("Outline"):
        return {"text": "1. Tides and the Moon", "delay": 0.05}
    return {"chunks": [f"flow{i} " for i in range(150)] + ["FLOW-DONE"], "delay": 0.02}
session = Session(name="flows")
model = iModel(provider="scripted", default_reply=reply)
flow = Flow(session, name="talk on tides")
outline = flow.add("communicate", instruction="Outline a talk on tides",
                   branch=session.new_branch(system="You write talks.", chat_model=model))
branch = session.new_branch(system="You write talks.", chat_model=model, name="section 1")
section = flow.add("communicate", instruction="Write section 1", depends_on=[outline],
                   branch=branch)
flow.add("communicate", instruction="Write the notes", depends_on=[outline], node_name="notes")
view = FlowView(flow)
view.model.select(section)  # the row's open control: its transcript, streaming
"""

INSPECTOR = """
from lion_nb import Branch, iModel
from lion_nb.widgets.inspector import ProgressionInspector
branch = Branch(system="You answer.", chat_model=iModel(provider="scripted", replies=[
    {"text": f"answer {i}", "delay": 0.15} for i in range(19)] + [
    {"text": "INSPECTOR-DONE", "delay": 0.15}]))
async def turns():
    for i in range(20):
        await branch.communicate(f"question {i}")
view = ProgressionInspector(branch)
"""

# the view, under a button (a stock widget: every Jupyter front end draws it) that starts the run
GO = """
import asyncio as _asyncio
import ipywidgets as _ipw
_go = _ipw.Button(description="Start the run")
_go.add_class("lion-test-go")
_runs = []
_go.on_click(lambda _b: _runs.append(_asyncio.ensure_future({run})))
display(_go)
view
"""


class LiveView(NamedTuple):
    setup: str  # builds ``branch`` (whose first content is timed) and ``view``
    run: str  # the coroutine the button starts
    cls: str  # the CSS class of the view's element
    done: str  # the text that shows the run ended
    first: str = FIRST_TEXT  # what the kernel times: the first streamed text, or message
    rate: str = "~50 chunks/s"
    marimo: str = "view"  # what marimo shows (``mo.ui.anywidget`` of it)
    grow: str | None = None  # what streams in (a regular expression): never fewer matches
    grown: int = 0  # how many distinct matches it shows at the end
    whole: str = ""  # the text (spaces left out) it shows whole at the end


VIEWS = {
    "rounds view": LiveView(ROUNDS, 'branch.ReAct("Add 2 and 3", max_extensions=2)',
                            "lion-rounds", "ROUNDS-DONE"),
    "parse view": LiveView(PARSE, 'branch.communicate("Order", response_format=Order)',
                           "lion-parse", "30.5", grow=r"item-\d+", grown=30),
    "flow view": LiveView(FLOW, "flow.run(max_concurrent=2)", "lion-flow-view", "FLOW-DONE",
                          grow=r"flow\d+", grown=150,
                          whole="".join(f"flow{i}" for i in range(150)) + "FLOW-DONE"),
    # a VBox (the timeline and its fork panels): marimo shows its timeline, ``view.front``
    "inspector": LiveView(INSPECTOR, "turns()", "lion-inspector", "INSPECTOR-DONE",
                          first=FIRST_MESSAGE, rate="20 turns", marimo="view.front",
                          grow=r"question \d+", grown=20),
}  # fmt: skip


def view_cell(name: str, first: Path) -> str:
    """The notebook cell of view ``name``, the kernel writing the run's first text to
    ``first``."""
    live = VIEWS[name]
    return live.setup + live.first.format(path=str(first)) + GO.format(run=live.run)


# marimo draws no ipywidgets: the button is a small anywidget of its own (``mo.ui.anywidget``);
# its names are public: with the Jupyter cell's ``_private`` names (marimo makes those local to
# the cell) the click's callback did run, but the run never started
MARIMO_GO = """
import asyncio
import anywidget
import marimo as mo
class GoButton(anywidget.AnyWidget):
    _esm = \"\"\"export default { render({ model, el }) {
      const b = document.createElement("button");
      b.className = "lion-test-go";
      b.textContent = "Start the run";
      b.onclick = () => model.send({ go: 1 });
      el.appendChild(b);
    } };\"\"\"
go_button = GoButton()
runs = []
go_button.on_msg(lambda _w, _c, _b: runs.append(asyncio.ensure_future(RUN)))
mo.vstack([mo.ui.anywidget(go_button), mo.ui.anywidget(SHOWN)])
"""
MARIMO_APP = """import marimo

app = marimo.App()


@app.cell
def _():
BODY
    return


if __name__ == "__main__":
    app.run()
"""


def marimo_view_notebook(name: str, first: Path) -> str:
    """The marimo notebook of view ``name`` (one cell), the kernel writing the run's first
    content to ``first``."""
    live = VIEWS[name]
    go = MARIMO_GO.replace("RUN", live.run).replace("SHOWN", live.marimo)
    code = live.setup + live.first.format(path=str(first)) + go
    body = "\n".join(f"    {line}" if line.strip() else "" for line in code.splitlines())
    return MARIMO_APP.replace("BODY", body)


def stream_view(page: Any, name: str, first: Path, received: Bytes) -> dict[str, Any]:
    """Start the run of view ``name`` (drawn in ``page``) and measure it until it ended."""
    cls, done = VIEWS[name].cls, VIEWS[name].done
    view = page.locator(f".lion-front.{cls}").first
    view.wait_for(timeout=120_000)
    go = page.locator("button.lion-test-go").first
    go.wait_for(timeout=60_000)
    start_view_sampler(page, view, VIEWS[name].grow)
    received.mark()
    go.click()
    page.wait_for_function(
        "([v, done]) => v.textContent.includes(done)",
        arg=[view.element_handle(), done],
        timeout=120_000,
    )
    page.wait_for_timeout(500)  # the last update's reveal, if any
    return view_figures(page, first, received)


def check_streamed(name: str, stats: dict[str, Any]) -> None:
    """What the run of view ``name`` showed (``stream_view``'s figures): more than a few
    visible updates, what streams in never fewer, and at the end all of it, exact (the
    end text and the counts are taken out of ``stats``)."""
    live = VIEWS[name]
    counts, end = stats.pop("counts"), stats.pop("end_text")
    assert stats["updates"] >= 5, stats
    if live.grow is not None:
        assert all(a <= b for a, b in itertools.pairwise(counts)), counts
        assert len(set(re.findall(live.grow, end))) == live.grown, end[-500:]
    assert live.whole in "".join(end.split()), end[-500:]
