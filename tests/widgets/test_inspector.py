"""ProgressionInspector and its view model (render.timeline, render.turns, provenance)."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from helpers.inspector_branches import big_branch, conversation, scripted

from lion_nb import Branch, Session
from lion_nb.messages import Instruction
from lion_nb.provenance import Provenance, provenance_of
from lion_nb.widgets.inspector import ProgressionInspector

# ----- view model ------------------------------------------------------------------------------


async def test_provenance_records_runs_failures_and_parse_attempts() -> None:
    from pydantic import BaseModel

    class Pick(BaseModel):
        n: int

    branch = Branch(chat_model=scripted("no json", '{"n": 3}', {"error": "boom"}))
    table = provenance_of(branch)
    assert provenance_of(branch) is table
    await branch.communicate("pick", response_format=Pick)
    with pytest.raises(Exception, match="boom"):
        await branch.communicate("again")
    ok, failed = table.runs
    assert ok.status == "ok" and ok.duration_ms > 0 and len(ok.message_ids) == 2
    assert failed.status == "failed" and "boom" in failed.error
    assert [(a["attempt"], a["ok"]) for a in table.parse_attempts] == [(0, False), (1, True)]
    assert table.parse_attempts[0]["run_id"] == ok.run_id
    restored = Provenance()
    restored.load(json.loads(json.dumps(table.to_dict())))
    assert restored.to_dict() == table.to_dict()
    assert restored.run_for(branch.messages[0].id).run_id == ok.run_id
    assert table.cell_for(branch.messages[0].id) is None  # not inside IPython


# ----- the widget ------------------------------------------------------------------------------
def test_a_10000_message_branch_opens_in_under_a_second_with_one_page_of_rows() -> None:
    branch = big_branch(10_001)
    start = time.perf_counter()
    view = ProgressionInspector(branch)
    bundle = view._repr_mimebundle_()
    elapsed = time.perf_counter() - start
    assert elapsed < 1.0, f"opening took {elapsed:.2f} s"
    assert len(view._rows) == 50  # widgets exist for the visible page only
    assert view.visible_indices() == range(9_951, 10_001)  # opens on the newest messages
    assert view.at_end and "9,952–10,001 of 10,001 · latest" in view.pager.label.value
    assert "10,001 messages" in view._header.value
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "answer 4999" in bundle["text/html"] and "lion-msg" in bundle["text/html"]
    assert "VBox(" not in bundle["text/plain"] and "answer 4999" in bundle["text/plain"]
    view.close()


def test_paging_reuses_the_row_widgets() -> None:
    branch = big_branch(301)
    view = ProgressionInspector(branch, page_size=50)
    widgets_before = [r.summary for r in view._rows]
    view.show_page(0)
    assert view.visible_indices() == range(0, 50)
    assert [r.summary for r in view._rows] == widgets_before
    assert 'data-index="0"' in view.rows_html()[0] and 'data-index="49"' in view.rows_html()[-1]
    view.pager.next.click()
    assert view.page == 1 and 'data-index="50"' in view.rows_html()[0]
    view.pager.last.click()
    assert view.visible_indices() == range(251, 301) and view.pager.next.disabled
    assert "252–301 of 301 · latest" in view.pager.label.value
    view.pager.prev.click()
    assert view.visible_indices() == range(201, 251)
    assert "202–251 of 301 · page 5/7" in view.pager.label.value
    view.pager.first.click()
    assert view.visible_indices() == range(0, 50) and view.pager.prev.disabled
    view.close()


def test_expand_collapse_go_to_and_filter() -> None:
    branch = big_branch(301)
    view = ProgressionInspector(branch, page_size=50)
    view.show_page(0)
    view._rows[3].toggle.click()
    assert view.expanded == {3}
    assert view._rows[3].toggle.description == "▾"
    assert view._rows[3].detail in view._rows[3].cell.children
    assert "What the model saw" in view._rows[3].detail.value
    view._rows[3].toggle.click()
    assert view.expanded == set() and len(view._rows_box.children) == 50
    view.pager.goto.value = 123
    view.pager.go.click()
    assert view.page == 2 and 123 in view.expanded
    view.pager.filter.value = "assistant"
    assert view.total == 150
    assert all(branch.messages[i].role == "assistant" for i in view.visible_indices())
    view.go_to(123)  # a message the filter hides: the filter is lifted
    assert view.pager.filter.value == "all" and 123 in view.visible_indices()
    with pytest.raises(IndexError):
        view.go_to(301)
    with pytest.raises(ValueError, match="unknown filter"):
        view.set_filter("robots")
    view.close()


async def test_fork_here_creates_a_linked_fork_in_the_session_and_shows_it() -> None:
    branch = await conversation()
    view = ProgressionInspector(branch)
    row = next(r for r in view._rows if r.index == 2)
    row.fork.click()
    fork = view.forks[-1]
    assert fork.session is branch.session and fork.id in branch.session.branches
    assert fork.metadata["forked_from"] == {
        "branch_id": str(branch.id),
        "at": str(branch.messages[2].id),
        "index": 2,
    }
    assert list(fork.messages) == list(branch.messages[:3])
    assert provenance_of(fork, create=False) is not None  # the fork's runs are recorded
    assert "Forked at #2" in view.status.value
    panel = view._forks_box.children[-1]
    from lion_nb.widgets.chat_view import BranchView

    assert any(isinstance(c, BranchView) and c.branch is fork for c in panel.children)
    compare_button = panel.children[-1]
    compare_button.click()
    from lion_nb.widgets.compare_view import CompareView

    assert isinstance(panel.children[-1], CompareView)
    view.close()


async def test_a_custom_on_fork_replaces_the_panel() -> None:
    branch = await conversation()
    seen = []
    view = ProgressionInspector(branch, on_fork=seen.append)
    forked = view.fork(4, name="alt")
    assert seen == [forked] and forked.name == "alt" and view._forks_box.children == ()
    view.close()


async def test_the_view_follows_new_messages_and_runs() -> None:
    branch = Branch(chat_model=scripted("one", "two", "three"))
    view = ProgressionInspector(branch, page_size=2, refresh_interval=0)
    assert "no messages" in view.pager.label.value
    await branch.communicate("a")
    assert view.total == 2 and view.visible_indices() == range(0, 2)
    await branch.communicate("b")
    assert view.total == 4 and view.visible_indices() == range(2, 4)  # it follows the end
    assert "Runs (2)" in view._runs_box.get_title(0)
    await asyncio.sleep(0)  # the next-turn estimate runs just after, on the loop
    assert "communicate" in view._runs.value and "Next turn sends 4 messages" in view._next.value
    view.show_page(0)
    await branch.communicate("c")
    assert view.visible_indices() == range(0, 2)  # the reader went back: the rows stay
    assert "6 messages" in view._header.value
    view.close()
    await_closed = len(branch.messages)
    branch.add_message(Instruction(instruction="after close"))
    assert len(branch.messages) == await_closed + 1  # a closed view ignores the branch


def test_static_text_and_html_name_the_shown_range() -> None:
    branch = big_branch(121)
    view = ProgressionInspector(branch, page_size=50)
    text = view.static_text()
    assert text.startswith(f"{view.title}: 121 messages (#71–#120 shown)")
    html = view.static_html()
    assert "messages 72–121 of 121" in html and html.count('class="lion-msg ') == 50
    view.show_page(1)
    assert "messages 51–100 of 121" in view.static_html()
    view.close()


def test_expanding_a_row_leaves_every_other_row_in_place() -> None:
    """The page's list of rows does not change when one expands, so the browser re-renders
    no other row (an open "What the model saw" elsewhere stays open)."""
    view = ProgressionInspector(big_branch(301), page_size=50)
    view._rows[40].toggle.click()
    before = view._rows_box.children
    line = view._rows[40].cell.children
    view._rows[10].toggle.click()
    assert view._rows_box.children is before and len(before) == 50
    assert view._rows[40].cell.children == line  # still expanded, the same detail widget
    assert view._rows[10].cell.children == (view._rows[10].box, view._rows[10].detail)
    view._rows[10].toggle.click()
    assert view._rows_box.children is before
    assert view._rows[10].cell.children == (view._rows[10].box,)
    view.close()


def test_controls_and_pager_carry_their_layout_classes() -> None:
    view = ProgressionInspector(big_branch(11))
    row = view._rows[0]
    assert row.box.children == (row.toggle, row.summary, row.fork)
    assert "lion-tl-fork" in row.fork._dom_classes and "lion-tl-line" in row.box._dom_classes
    assert "lion-tl-pager" in view.pager.box._dom_classes
    assert view.pager.box.layout.flex_flow == "row nowrap"
    view.close()


async def test_runs_from_before_the_inspector_are_said_not_runs_0() -> None:
    branch = Session().new_branch(system="Be brief.", chat_model=scripted("one", "two"))
    await branch.communicate("before the inspector existed")
    view = ProgressionInspector(branch)
    assert view._runs_box.get_title(0) == (
        "Runs: none observed — 2 messages came before run tracking"
    )
    assert "came before run tracking started" in view._runs.value
    assert "came before run tracking" in view.static_html()
    await branch.communicate("now observed")
    view._refresh.flush()
    assert view._runs_box.get_title(0) == "Runs (1) · 2 messages came before run tracking"
    view.close()


async def test_a_reply_replayed_from_a_cassette_says_where_it_came_from(tmp_path) -> None:
    import lion_nb

    path = tmp_path / "lesson.cassette.jsonl"
    with lion_nb.cassette(path, mode="record"):
        await Branch(chat_model=scripted("recorded reply")).communicate("hi")
    branch = Branch(chat_model=scripted("never called"))
    with lion_nb.cassette(path, mode="replay"):
        await branch.communicate("hi")
    note = branch.messages[-1].metadata["replayed"]
    view = ProgressionInspector(branch)
    assert "lion-replayed" in view.rows_html()[-1] and "lion-replayed" not in view.rows_html()[0]
    said = (
        f"replayed from {note['cassette']}, call {note['call']} (line {note['line']}), "
        f"recorded {note['recorded_at']}"
    )
    assert note["call"] == 1 and f"<th>replayed</th><td>{said}</td>" in view.detail_html(1)
    view.close()


async def test_a_retracted_message_leaves_the_inspector_and_its_run() -> None:
    branch = Branch(chat_model=scripted("one", "two"))
    view = ProgressionInspector(branch, page_size=10, refresh_interval=0)
    await branch.communicate("a")
    await branch.communicate("b")
    assert view.total == 4
    gone = branch.messages[2]  # the second instruction
    branch.retract_message(gone.id, reason="its attempt died")
    assert view.total == 3 and view.visible_indices() == range(0, 3)
    assert "3 messages" in view._header.value
    assert not any("b" == m.text for m in branch.messages)
    record = view.provenance.runs[1]
    assert str(gone.id) not in record.message_ids and view.provenance.run_for(gone.id) is None
    assert len(record.message_ids) == 1  # the reply stays in its run
    view.close()
