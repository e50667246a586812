"""ProgressionInspector and its view model (render.timeline, render.turns, provenance)."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from lion_nb import Branch, Session, iModel
from lion_nb.compile import compile_messages
from lion_nb.messages import ActionRequest, ActionResponse, AssistantResponse, Instruction
from lion_nb.models.imodel import PROVIDERS, register_provider
from lion_nb.provenance import Provenance, provenance_of
from lion_nb.render import timeline as tl
from lion_nb.render import turns
from lion_nb.render.escape import escape
from lion_nb.viewmodels import next_turn as nt
from lion_nb.viewmodels import timeline as tlm
from lion_nb.widgets.inspector import ProgressionInspector


def scripted(*replies, **kw) -> iModel:
    return iModel(provider="scripted", replies=list(replies), **kw)


def big_branch(n: int, *, model: iModel | None = None) -> Branch:
    branch = Branch(system="You are terse.", chat_model=model or scripted())
    for i in range((n - 1) // 2):
        branch.add_message(Instruction(instruction=f"question {i}: " + "words " * 8))
        branch.add_message(
            AssistantResponse(
                response=f"answer {i} **bold** " * 4,
                metadata={"usage": {"input_tokens": 10 + i, "output_tokens": 5}},
            )
        )
    return branch


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def conversation() -> Branch:
    """Real turns on the scripted model: communicate, a tool call through act, communicate."""
    session = Session()
    branch = session.new_branch(
        system="Be brief.",
        name="demo",
        chat_model=scripted(
            {
                "text": "Hi!",
                "usage": {"input_tokens": 9, "output_tokens": 2, "total_cost_usd": 0.002},
            },
            "It is 5.",
        ),
        tools=[add],
    )
    provenance_of(branch)
    await branch.communicate("hello")
    await branch.act([{"function": "add", "arguments": {"a": 2, "b": 3}, "id": "call_1"}])
    await branch.communicate("what is 2+3?")
    return branch


# ----- view model ------------------------------------------------------------------------------
def test_pages_cover_the_branch_exactly() -> None:
    assert tlm.page_count(0, 50) == 1 and tlm.page_count(50, 50) == 1
    assert tlm.page_count(51, 50) == 2
    assert tlm.page_bounds(0, 50, 120) == (0, 50)
    assert tlm.page_bounds(2, 50, 120) == (100, 120)
    assert tlm.page_bounds(99, 50, 120) == (100, 120)  # clamped to the last page
    assert tlm.page_bounds(-3, 50, 120) == (0, 50)


async def test_the_payload_shown_is_what_the_model_received() -> None:
    branch = await conversation()
    requests = branch.chat_model.provider.requests
    messages = branch.messages
    roles = [m.role for m in messages]
    assert roles == [
        "system",
        "user",
        "assistant",
        "action_request",
        "action_response",
        "user",
        "assistant",
    ]
    # an instruction: the request sent with it; its reply: the same request
    assert turns.turn_payload(messages, 1) == {"messages": requests[0].messages}
    assert turns.turn_payload(messages, 2) == {"messages": requests[0].messages}
    assert turns.turn_payload(messages, 5) == {"messages": requests[1].messages}
    assert turns.turn_payload(messages, 6) == {"messages": requests[1].messages}
    # a tool call belongs to the assistant turn before it; tool results and the system
    # message are not model turns
    assert turns.turn_payload(messages, 3) == turns.turn_payload(messages, 2)
    assert turns.turn_payload(messages, 4) is None
    assert turns.turn_payload(messages, 0) is None
    cli = turns.turn_payload(messages, 5, cli=True)
    assert cli == {
        "prompt": "what is 2+3?",
        "system_prompt": "Be brief.",
        "note": "a CLI agent keeps its own history",
    }


async def test_rows_carry_role_usage_run_and_time() -> None:
    branch = await conversation()
    table = provenance_of(branch)
    rows = tlm.timeline_rows(branch.messages, range(len(branch.messages)), table)
    assert [r.index for r in rows] == list(range(7))
    assert rows[0].run is None  # the system message predates every run
    assert rows[1].run is not None and rows[1].run.operation == "communicate"
    assert rows[1].new_run and not rows[2].new_run and rows[5].new_run
    assert rows[3].run is None  # act outside a lifecycle
    assert rows[2].usage == {"input_tokens": 9, "output_tokens": 2, "total_cost_usd": 0.002}
    html = tl.row_summary_html(rows[2])
    assert "9 in · 2 out · $0.0020" in html and "Hi!" in html and 'data-index="2"' in html
    assert "▶ run communicate" in tl.row_summary_html(rows[1])
    assert rows[1].run.duration_ms is not None and rows[1].run.status == "ok"


async def test_detail_shows_the_card_the_payload_json_and_provenance() -> None:
    branch = await conversation()
    rows = tlm.timeline_rows(branch.messages, [5], provenance_of(branch))
    detail = tl.row_detail_html(rows[0], branch.messages)
    assert "What the model saw" in detail and "(5 messages)" in detail
    payload_text = json.dumps(turns.turn_payload(branch.messages, 5), indent=2, ensure_ascii=False)
    assert escape(payload_text) in detail
    assert "&quot;tool_call_id&quot;: &quot;call_1&quot;" in detail
    assert str(branch.messages[5].id) in detail and "communicate" in detail


def test_long_payloads_are_cut_for_display_with_a_note() -> None:
    branch = big_branch(601)
    text, note = turns.payload_json(turns.turn_payload(branch.messages, 599))
    assert "showing the last 200 of 600 messages" in note
    assert len(json.loads(text)["messages"]) == 200


def test_hostile_text_is_escaped_in_rows_and_details() -> None:
    branch = Branch()
    branch.add_message(Instruction(instruction='<img src=x onerror="alert(1)"> hi'))
    branch.add_message(
        AssistantResponse(response="<script>alert(2)</script>", metadata={"x": "<b>meta</b>"})
    )
    rows = tlm.timeline_rows(branch.messages, range(2), None)
    for row in rows:
        for html in (tl.row_summary_html(row), tl.row_detail_html(row, branch.messages)):
            assert "<img" not in html and "<script" not in html and "<b>meta" not in html


def test_next_turn_is_a_labelled_estimate_without_a_tokenizer() -> None:
    branch = big_branch(5, model=scripted(context_window=100))
    turn = nt.next_turn(branch.messages, branch._chat_model)
    texts = nt._payload_texts(compile_messages(branch.messages))
    assert turn.messages == 5 and not turn.exact and turn.window == 100
    assert turn.tokens == sum((len(t) + 3) // 4 for t in texts)
    html = turns.next_turn_html(turn)
    assert "estimate" in html and "100-token context window" in html
    assert nt.context_window(iModel(provider="openai", model="gpt-4.1-mini")) == 1_047_576
    assert nt.context_window(scripted()) is None
    # the local model's window: its constructor's default, without constructing it
    local = iModel(provider="local")
    assert nt.context_window(local) == 2048 and local._provider is None
    assert nt.context_window(iModel(provider="local", n_ctx=4096)) == 4096
    assert "context window unknown" in turns.next_turn_html(
        nt.next_turn(branch.messages, scripted())
    )


class CountingProvider:
    """A provider with an offline tokenizer: one token per whitespace-separated word."""

    n_ctx = 64

    def __init__(self, model=None, api_key=None, **options) -> None:
        self.model = model

    def count_tokens(self, text: str) -> int:
        return len(text.split())


@pytest.fixture
def counting_provider():
    register_provider("counting-test", __name__, "CountingProvider")
    yield "counting-test"
    PROVIDERS.pop("counting-test", None)


def test_next_turn_is_exact_with_the_providers_tokenizer(counting_provider) -> None:
    branch = big_branch(3, model=iModel(provider=counting_provider))
    turn = nt.next_turn(branch.messages, branch._chat_model)
    words = sum(len(t.split()) for t in nt._payload_texts(compile_messages(branch.messages)))
    assert turn.exact and turn.tokens == words and turn.window == 64
    assert "exact (provider tokenizer)" in turns.next_turn_html(turn)


def test_a_cli_model_sends_only_the_new_prompt() -> None:
    branch = big_branch(3, model=scripted(cli=True))
    turn = nt.next_turn(branch.messages, branch._chat_model)
    assert turn.cli and "CLI agent receives only the new prompt" in turns.next_turn_html(turn)


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
    assert view._rows[3].detail in view._rows_box.children
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


def test_action_rows_show_error_state() -> None:
    branch = Branch()
    req = ActionRequest(function="f", arguments={"x": 1})
    branch.add_message(req)
    branch.add_message(
        ActionResponse(
            function="f", output="ValueError: x", is_error=True, action_request_id=req.id
        )
    )
    rows = tlm.timeline_rows(branch.messages, range(2))
    assert "error" in tl.row_summary_html(rows[1])
    assert "f({&quot;x&quot;: 1})" in tl.row_summary_html(rows[0])


@pytest.mark.local_model
def test_the_local_model_counts_exactly_when_it_exposes_its_tokenizer() -> None:
    from lion_nb.models.imodel import local_model_available
    from lion_nb.models.local import LocalProvider

    if not local_model_available():
        pytest.skip("the local model is not installed (lion_nb[local])")
    assert callable(LocalProvider.count_tokens)
    branch = big_branch(5, model=iModel(provider="local"))
    turn = nt.next_turn(branch.messages, branch._chat_model)
    counter = branch._chat_model.provider.count_tokens
    texts = nt._payload_texts(compile_messages(branch.messages))
    assert turn.exact and turn.tokens == sum(counter(t) for t in texts if t)
    assert turn.window == 2048
