"""ProgressionInspector and its view model (render.timeline, render.turns, provenance): the
timeline on the front end, read the way the page gets it (its parts, its ``pager`` chrome, a
page model following its ops), driven through the page's actions."""

from __future__ import annotations

import asyncio
import json
import re
import time

import pytest

from lion_nb import Branch, Session
from lion_nb.messages import Instruction
from lion_nb.provenance import Provenance, provenance_of
from lion_nb.widgets import protocol
from lion_nb.widgets.inspector import ProgressionInspector
from tests.support.inspector_branches import big_branch, conversation, scripted
from tests.support.page_model import Page

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


# ----- reading the view as the page gets it -------------------------------------------------
def act(view: ProgressionInspector, action: str, **content: object) -> None:
    """What the page sends when one of its controls is used."""
    view.front._on_page(view.front, {"action": action, **content}, [])


def parts(view: ProgressionInspector) -> dict[str, str]:
    view.front.channel.flush()
    return {key: html for key, html, *_ in view.front.state_parts()}


def rows(view: ProgressionInspector) -> list[int]:
    """The positions of the rows the page shows, in order."""
    view.front.channel.flush()
    return [int(key[1:]) for key, _, *parent in view.front.state_parts() if parent == ["rows"]]


def pager(view: ProgressionInspector) -> dict:
    view.front.channel.flush()
    return view.front.pager


def following(view: ProgressionInspector) -> tuple[Page, list[dict]]:
    """A page that follows the view's ops from its state now, and the messages it got."""
    view.front.channel.flush()
    page = Page(view.front.state_parts(), view.front.channel.seq)
    got: list[dict] = []
    send = view.front.channel._send

    def receive(msg: dict) -> None:
        got.append(msg)
        page.receive(msg)
        send(msg)

    view.front.channel._send = receive
    return page, got


def keys_of(messages: list[dict]) -> list[tuple[str, str]]:
    return [(op["op"], op.get("key", "")) for msg in messages for op in msg["ops"]]


# ----- the widget ------------------------------------------------------------------------------
def test_a_10000_message_branch_opens_in_under_a_second_with_one_page_of_rows() -> None:
    branch = big_branch(10_001)
    start = time.perf_counter()
    view = ProgressionInspector(branch)
    bundle = view._repr_mimebundle_()
    elapsed = time.perf_counter() - start
    assert elapsed < 1.0, f"opening took {elapsed:.2f} s"
    assert rows(view) == list(range(9_951, 10_001))  # the visible page only, the newest
    assert view.visible_indices() == range(9_951, 10_001)
    assert view.at_end and pager(view)["text"] == "9,952–10,001 of 10,001 · latest"
    assert pager(view)["last"] and not pager(view)["first"] and pager(view)["max"] == 10_000
    assert "10,001 messages" in parts(view)["head"]
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "answer 4999" in bundle["text/html"] and "lion-msg" in bundle["text/html"]
    assert "VBox(" not in bundle["text/plain"] and "answer 4999" in bundle["text/plain"]
    assert len(view.front.parts) < 70  # the synced state: one page of parts
    view.close()


def test_paging_through_the_pages_actions_sends_only_the_rows_that_change() -> None:
    branch = big_branch(301)
    view = ProgressionInspector(branch, page_size=50)
    page, got = following(view)
    act(view, "page", to="first")
    assert rows(view) == list(range(0, 50)) and view.visible_indices() == range(0, 50)
    assert 'data-index="0"' in view.rows_html()[0] and 'data-index="49"' in view.rows_html()[-1]
    act(view, "page", to="next")
    assert view.page == 1 and 'data-index="50"' in view.rows_html()[0]
    act(view, "page", to="last")
    assert rows(view) == list(range(251, 301)) and pager(view)["last"]
    assert pager(view)["text"] == "252–301 of 301 · latest"
    act(view, "page", to="prev")
    assert rows(view) == list(range(201, 251))
    assert pager(view)["text"] == "202–251 of 301 · page 5/7"
    act(view, "page", to="first")
    assert rows(view) == list(range(0, 50)) and pager(view)["first"]
    ops = keys_of(got)
    assert ("put", "head") not in ops and ("put", "runs") not in ops  # only rows and the pager
    assert page.resyncs == 0 and page.html() == Page(view.front.state_parts()).html()
    view.close()


def test_expand_collapse_go_to_and_filter_through_the_page() -> None:
    branch = big_branch(301)
    view = ProgressionInspector(branch, page_size=50)
    view.show_page(0)
    page, got = following(view)
    act(view, "open", key="3")
    assert view.expanded == {3}
    assert "What the model saw" in parts(view)["d3"] and "lion-tl-open" in parts(view)["r3"]
    assert keys_of(got) == [("attrs", "r3"), ("put", "d3")]  # nothing else is sent
    act(view, "open", key="3")
    assert view.expanded == set() and "d3" not in parts(view) and len(rows(view)) == 50
    act(view, "goto", index=123)
    assert view.page == 2 and 123 in view.expanded and "d123" in parts(view)
    act(view, "goto", index=5000)  # past the end: said, not raised
    assert "No message #5000" in view.status
    act(view, "filter", name="assistant")
    assert view.total == 150 and pager(view)["filter"] == "assistant"
    assert all(branch.messages[i].role == "assistant" for i in rows(view))
    view.go_to(123)  # a message the filter hides: the filter is lifted
    assert view.filter == "all" and 123 in view.visible_indices()
    act(view, "collapse")
    assert view.expanded == set() and not any(k.startswith("d") for k in parts(view))
    with pytest.raises(IndexError):
        view.go_to(301)
    with pytest.raises(ValueError, match="unknown filter"):
        view.set_filter("robots")
    act(view, "filter", name="robots")  # from the page: logged, nothing changes
    assert view.filter == "all"
    assert page.resyncs == 0 and page.html() == Page(view.front.state_parts()).html()
    view.close()


async def test_fork_here_creates_a_linked_fork_in_the_session_and_shows_it() -> None:
    branch = await conversation()
    view = ProgressionInspector(branch)
    act(view, "fork", key="2")
    fork = view.forks[-1]
    assert fork.session is branch.session and fork.id in branch.session.branches
    assert fork.metadata["forked_from"] == {
        "branch_id": str(branch.id),
        "at": str(branch.messages[2].id),
        "index": 2,
    }
    assert list(fork.messages) == list(branch.messages[:3])
    assert provenance_of(fork, create=False) is not None  # the fork's runs are recorded
    assert "Forked at #2" in view.status
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
    assert pager(view)["text"] == "no messages"
    await branch.communicate("a")
    assert view.total == 2 and view.visible_indices() == range(0, 2)
    await branch.communicate("b")
    assert view.total == 4 and view.visible_indices() == range(2, 4)  # it follows the end
    assert rows(view) == [2, 3]
    assert "Runs (2)" in parts(view)["runs.t"]
    await asyncio.sleep(0)  # the next-turn estimate runs just after, on the loop
    shown = parts(view)
    assert sum("communicate" in html for key, html in shown.items() if key.startswith("u:")) == 2
    assert "Next turn sends 4 messages" in shown["next"]
    view.show_page(0)
    await branch.communicate("c")
    assert view.visible_indices() == range(0, 2) and rows(view) == [0, 1]  # the rows stay
    assert "6 messages" in parts(view)["head"]
    view.close()
    await_closed = len(branch.messages)
    branch.add_message(Instruction(instruction="after close"))
    assert len(branch.messages) == await_closed + 1  # a closed view ignores the branch


async def test_a_run_adding_50_messages_sends_only_what_changed() -> None:
    """Following a run, the page is sent the rows that scrolled in (and drops those that
    scrolled out), the heading and the run's row of the run log: never the whole page per
    update. Bound: 2 KB a message, where re-sending the 50 visible rows per update would
    cost ~30 KB each."""
    replies = [{"chunks": [f"r{i} w{j} " for j in range(10)], "delay": 0.001} for i in range(25)]
    branch = big_branch(101, model=scripted(*replies))
    view = ProgressionInspector(branch, refresh_interval=0.05)
    await asyncio.sleep(0)
    page, got = following(view)
    for i in range(25):
        await branch.communicate(f"turn {i}")
    await asyncio.sleep(0.1)
    view.front.channel.flush()
    assert rows(view) == list(range(101, 151))  # it followed
    sent = sum(len(json.dumps(m, separators=(",", ":"))) for m in got)
    assert sent < 50 * 2048, sent
    puts = [key for op, key in keys_of(got) if op == "put" and re.fullmatch(r"r\d+", key)]
    assert len(puts) <= 50 + 25, puts  # each new row once, and a row whose run head moved
    assert page.resyncs == 0 and page.html() == Page(view.front.state_parts()).html()
    view.close()


def test_the_inspectors_ops_and_actions_are_the_protocols() -> None:
    from tests.widgets.test_protocol import JS, js_actions

    handled = {name for name in protocol.ACTIONS if hasattr(view_type(), f"_action_{name}")}
    assert {"open", "fork", "page", "goto", "filter", "collapse"} <= handled
    assert {"open", "fork", "page", "goto", "filter", "collapse"} <= js_actions(JS.read_text())
    assert "pager" in protocol.CHROME
    view = ProgressionInspector(big_branch(61), page_size=10)
    page, got = following(view)
    view.toggle(55)
    view.show_page(0)
    view.set_filter("user")
    view.collapse_all()
    assert {op["op"] for msg in got for op in msg["ops"]} <= set(protocol.OPS)
    assert page.resyncs == 0
    view.close()


def view_type() -> type:
    from lion_nb.widgets.inspector_parts import TimelineFront

    return TimelineFront


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
    """Expanding one row sends its classes and its detail, nothing of any other row, so the
    page re-renders no other row (an open "What the model saw" elsewhere stays open)."""
    view = ProgressionInspector(big_branch(301), page_size=50)
    view.toggle(290)
    _page, got = following(view)
    act(view, "open", key="260")
    act(view, "open", key="260")
    assert keys_of(got) == [("attrs", "r260"), ("put", "d260"), ("attrs", "r260"), ("drop", "d260")]
    assert "d290" in parts(view) and view.expanded == {290}
    view.close()


def test_the_page_draws_the_controls_from_the_rows_and_pager_state() -> None:
    view = ProgressionInspector(big_branch(11))
    html = parts(view)["r3"]
    assert html.startswith('<div class="lion-tl-item" data-index="3">')
    assert '<div class="lion-tl-line"><div class="lion-tl-summary">' in html
    assert '<div class="lion-tl-more" data-parts>' in html  # where its detail goes
    assert "lion-tl-pager-slot" in parts(view)["rows"]  # where the page puts the pager
    assert set(pager(view)) == {"text", "first", "last", "max", "filter", "filters"}
    assert pager(view)["filters"] == ["all", "user", "assistant", "actions", "system"]
    view.close()


async def test_runs_from_before_the_inspector_are_said_not_runs_0() -> None:
    branch = Session().new_branch(system="Be brief.", chat_model=scripted("one", "two"))
    await branch.communicate("before the inspector existed")
    view = ProgressionInspector(branch)
    assert parts(view)["runs.t"] == (
        "<summary>Runs: none observed — 2 messages came before run tracking</summary>"
    )
    assert "came before run tracking started" in parts(view)["runs.b"]
    assert "came before run tracking" in view.static_html()
    await branch.communicate("now observed")
    view.front.channel.flush()
    assert parts(view)["runs.t"] == (
        "<summary>Runs (1) · 2 messages came before run tracking</summary>"
    )
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
    assert view.total == 3 and view.visible_indices() == range(0, 3) and rows(view) == [0, 1, 2]
    assert "3 messages" in parts(view)["head"]
    assert not any("b" == m.text for m in branch.messages)
    record = view.provenance.runs[1]
    assert str(gone.id) not in record.message_ids and view.provenance.run_for(gone.id) is None
    assert len(record.message_ids) == 1  # the reply stays in its run
    view.close()


def test_the_saved_output_shows_the_current_page(outputs, comms) -> None:
    """The notebook keeps the inspector's page twice: as HTML beside the widget (no kernel,
    no widget state) and as the timeline's synced state (what a page drawing it renders)."""
    from tests.support.recording_comm import page_state

    view = ProgressionInspector(big_branch(121), page_size=50)
    outputs.show(view)
    act(view, "page", to="first")
    view.refresh_static()
    with outputs.cell():
        pass  # the end of the next cell refreshes the saved output
    saved = outputs.of(view)
    assert "messages 1–50 of 121" in saved["text/html"]
    assert saved["text/plain"].startswith(f"{view.title}: 121 messages (#0–#49 shown)")
    (front,) = [c for c in comms if c.opened["state"].get("kind") == "inspector"]
    state = page_state(front)
    shown = Page(state["parts"], state["seq"])
    assert 'data-index="0"' in shown.html() and 'data-index="49"' in shown.html()
    assert 'data-index="50"' not in shown.html()
    view.close()
