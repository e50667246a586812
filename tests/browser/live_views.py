"""The rounds and parse views streaming, the same way in every Jupyter front end (JupyterLab 4,
Notebook 7, Voilà): the notebook that shows the view with a button that starts its run (so the
page samples it from the run's start, however long the front end takes to draw it), the kernel
noting when the run's first text reached it, and the run driven and measured
(``tests/browser/measure.py``: what the view shows every frame, the bytes the page receives).

Each view is fed at ~50 chunks a second for a few seconds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.browser.measure import FIRST_TEXT, Bytes, start_view_sampler, view_figures

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

# name -> (setup, run, CSS class of the view, the text that shows the run ended)
VIEWS = {
    "rounds view": (ROUNDS, 'branch.ReAct("Add 2 and 3", max_extensions=2)', "lion-rounds",
                    "ROUNDS-DONE"),
    "parse view": (PARSE, 'branch.communicate("Order", response_format=Order)', "lion-parse",
                   "30.5"),
}  # fmt: skip
RATE = "~50 chunks/s"


def view_cell(name: str, first: Path) -> str:
    """The notebook cell of view ``name``, the kernel writing the run's first text to
    ``first``."""
    setup, run, _cls, _done = VIEWS[name]
    return setup + FIRST_TEXT.format(path=str(first)) + GO.format(run=run)


def stream_view(page: Any, name: str, first: Path, received: Bytes) -> dict[str, Any]:
    """Start the run of view ``name`` (drawn in ``page``) and measure it until it ended."""
    _setup, _run, cls, done = VIEWS[name]
    view = page.locator(f".lion-front.{cls}").first
    view.wait_for(timeout=120_000)
    go = page.locator("button.lion-test-go").first
    go.wait_for(timeout=60_000)
    start_view_sampler(page, view)
    received.mark()
    go.click()
    page.wait_for_function(
        "([v, done]) => v.textContent.includes(done)",
        arg=[view.element_handle(), done],
        timeout=120_000,
    )
    page.wait_for_timeout(500)  # the last update's reveal, if any
    return view_figures(page, first, received)
