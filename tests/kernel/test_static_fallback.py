"""The static fallback: a notebook executed headless (nbclient, widget state stored), then
converted with nbconvert, shows the transcripts of the views as HTML — with widget state (the
widget renders from the state) and without it (GitHub, nbviewer, a notebook saved from Lab
without widget state: the text/html beside the widget view is what shows). Also checks that
the inspector records the notebook cell that produced each message."""

from __future__ import annotations

import copy
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(180)]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

CELLS = [
    # 0: setup on the scripted model (offline)
    '''
from pydantic import BaseModel
from lion_nb import Session, iModel
from lion_nb.widgets.inspector import ProgressionInspector
from lion_nb.widgets.rounds_view import ReActRoundsView
from lion_nb.widgets.parse_view import ParseView
from lion_nb.widgets.compare_view import CompareView

class Order(BaseModel):
    item: str
    qty: int

def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b

session = Session()
branch = session.new_branch(system="Be brief.", name="demo", tools=[add], chat_model=iModel(
    provider="scripted", replies=[
        {"json": {"analysis": "ANALYSIS-MARK-31: add them", "extension_needed": True,
                  "action_requests": [{"function": "add", "arguments": {"a": 2, "b": 3}}]}},
        {"json": {"analysis": "the sum is 5", "extension_needed": False}},
        {"json": {"answer": "ANSWER-MARK-5"}},
        "ZEBRA-REPLY-77 <script>alert(1)</script>",
        {"json": {"item": "TEA-MARK-9", "qty": 2}},
    ]))
''',
    # 1, 2: views displayed before anything ran
    "inspector = ProgressionInspector(branch)\ninspector",
    "rounds = ReActRoundsView(branch)\nrounds",
    # 3: a ReAct run
    'await branch.ReAct("Add 2 and 3", max_extensions=2)',
    # 4: a plain exchange; remember this cell's number
    'cell_no = get_ipython().execution_count\nawait branch.communicate("Say the marker")',
    # 5: the cell of every message is recorded
    """
assert inspector.provenance.cell_for(branch.messages[-1].id) == cell_no, cell_no
assert inspector.provenance.cell_for(branch.messages[-2].id) == cell_no
react_cells = {inspector.provenance.cell_for(m.id) for m in branch.messages[1:-2]}
assert react_cells == {cell_no - 1}, react_cells
print("cells ok", cell_no)
""",
    # 6, 7: a parse view filled while the structured reply streams
    "order_view = ParseView(Order, branch=branch)\norder_view",
    'await branch.communicate("order", response_format=Order)',
    # 8: fork and compare
    """
fork = branch.fork(2, name="alt")
fork.chat_model = iModel(provider="scripted", replies=["FORK-REPLY-13"])
await fork.communicate("And in the fork?")
CompareView(branch, fork)
""",
    # 9, 10: a chat view displayed before its runs (one awaited in a cell, one sent from it).
    # Markers are built at run time so that a converted page shows them only from outputs.
    """
from lion_nb import Branch, BranchView
mark = "MARK-".join
chat = Branch(system="Be brief.", name="chat", chat_model=iModel(provider="scripted", replies=[
    mark(["CHAT-", "41"]), mark(["CHAT-", "42 <script>alert("]) + "2)</script>"]))
chat_view = BranchView(chat)
chat_view
""",
    'await chat.communicate("first")\n_ = await chat_view.asend(mark(["CHAT-PROMPT-", "2"]))',
    # 11, 12: the %%lion magic; its view is displayed before the reply exists
    """
%load_ext lion_nb
n = 3
notes = Branch(chat_model=iModel(provider="scripted", replies=[mark(["MAGIC-", "57"])]))
""",
    "%%lion --branch notes --wait\nSay MAGIC-PROMPT-{n}",
]

MARKERS = ["ZEBRA-REPLY-77", "ANSWER-MARK-5", "TEA-MARK-9", "FORK-REPLY-13"]
# in the saved text/html only: the chat views are rebuilt from their branch, not widget state
CHAT_MARKERS = [
    "CHAT-MARK-41",
    "CHAT-MARK-42",
    "CHAT-PROMPT-MARK-2",
    "MAGIC-PROMPT-3",
    "MAGIC-MARK-57",
]


class _Text(HTMLParser):
    """Text a reader sees: outside <script> and <style>."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.scripts: list[str] = []
        self._skip: str | None = None

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self._skip = tag

    def handle_endtag(self, tag):
        if tag == self._skip:
            self._skip = None

    def handle_data(self, data):
        (self.scripts if self._skip == "script" else self.parts).append(data)


def visible_text(html: str) -> tuple[str, str]:
    parser = _Text()
    parser.feed(html)
    return " ".join(parser.parts), " ".join(parser.scripts)


@pytest.fixture(scope="module")
def executed():
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src.strip()) for src in CELLS]
    NotebookClient(nb, timeout=120, kernel_name="python3", store_widget_state=True).execute()
    ARTIFACTS.mkdir(exist_ok=True)
    nbformat.write(nb, ARTIFACTS / "static_fallback.ipynb")
    return nb


def data_of(nb, index: int) -> dict:
    (output,) = [o for o in nb.cells[index].outputs if "data" in o]
    return output["data"]


def test_views_save_their_final_content_beside_the_widget(executed) -> None:
    assert "cells ok" in executed.cells[5].outputs[0]["text"]
    inspector = data_of(executed, 1)
    assert "application/vnd.jupyter.widget-view+json" in inspector
    # displayed before any run, the saved HTML is the final transcript (updated on RunEnd)
    for marker in ("ZEBRA-REPLY-77", "ANSWER-MARK-5", "TEA-MARK-9"):
        assert marker in inspector["text/html"], marker
    assert "&lt;script&gt;alert(1)" in inspector["text/html"]
    assert "<script>alert(1)" not in inspector["text/html"]
    assert "ZEBRA-REPLY-77" in inspector["text/plain"]
    rounds = data_of(executed, 2)
    assert "ANALYSIS-MARK-31" in rounds["text/html"] and "Answer" in rounds["text/html"]
    assert "Round 1 [done]" in rounds["text/plain"]
    parse = data_of(executed, 6)
    assert "TEA-MARK-9" in parse["text/html"] and parse["text/plain"].startswith("Order: valid")
    compare = data_of(executed, 8)
    assert "FORK-REPLY-13" in compare["text/html"] and "lion-diff" in compare["text/html"]
    for index in (1, 2, 6, 8):
        plain = data_of(executed, index)["text/plain"]
        assert not plain.startswith(("VBox(", "<lion_nb", "Output(")), plain[:80]
    assert executed.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]


def test_the_chat_view_and_the_magic_save_the_final_transcript(executed) -> None:
    """Displayed before the runs, a BranchView (and the %%lion magic's view) replace their
    saved text/html and text/plain when a run ends: the notebook holds the whole exchange."""
    chat = data_of(executed, 9)
    assert "application/vnd.jupyter.widget-view+json" in chat
    for marker in ("CHAT-MARK-41", "first", "CHAT-PROMPT-MARK-2", "CHAT-MARK-42"):
        assert marker in chat["text/html"], marker
        assert marker in chat["text/plain"], marker
    assert "<script>alert(2)" not in chat["text/html"]
    assert not chat["text/plain"].startswith(("VBox(", "<lion_nb"))
    magic = data_of(executed, 12)
    assert "application/vnd.jupyter.widget-view+json" in magic
    assert "MAGIC-PROMPT-3" in magic["text/html"] and "MAGIC-MARK-57" in magic["text/html"]
    assert "MAGIC-MARK-57" in magic["text/plain"]


def _convert(nb) -> str:
    from nbconvert import HTMLExporter

    html, _ = HTMLExporter().from_notebook_node(nb)
    return html


def test_nbconvert_without_widget_state_shows_the_transcripts(executed) -> None:
    """GitHub and nbviewer (or Lab's default save, which keeps no widget state): nbconvert
    skips the widget view and renders the text/html the views saved."""
    nb = copy.deepcopy(executed)
    nb.metadata.pop("widgets")
    html = _convert(nb)
    (ARTIFACTS / "static_fallback_no_state.html").write_text(html)
    text, scripts = visible_text(html)
    for marker in [*MARKERS, *CHAT_MARKERS, "ANALYSIS-MARK-31"]:
        assert marker in text, marker
    assert "alert(1)" in text and "alert(1)" not in scripts  # shown as text, never run
    assert "alert(2)" in text and "alert(2)" not in scripts
    assert html.count('class="lion-msg ') >= 10
    assert "Output()" not in html and "VBox(" not in html
    assert not re.search(r"&lt;lion_nb\.|<lion_nb\.|ProgressionInspector object", html)


def test_nbconvert_with_widget_state_carries_the_transcript(executed) -> None:
    html = _convert(executed)
    (ARTIFACTS / "static_fallback_with_state.html").write_text(html)
    text, scripts = visible_text(html)
    assert "application/vnd.jupyter.widget-state+json" in html
    # the widgets render from their saved state: the transcript is in it
    for marker in MARKERS:
        assert marker in scripts, marker
    assert "Output()" not in html and "VBox(" not in text
