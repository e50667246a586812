"""render.timeline: the inspector's row lines, expanded details, heading, run log and static
fallback, escaped."""

from __future__ import annotations

import json

from lion_nb import Branch
from lion_nb.messages import ActionRequest, ActionResponse, AssistantResponse, Instruction
from lion_nb.provenance import provenance_of
from lion_nb.render import timeline as tl
from lion_nb.render import turns
from lion_nb.render.escape import escape
from lion_nb.viewmodels import timeline as tlm
from tests.support.inspector_branches import big_branch, conversation


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


def test_heading_run_log_and_static_fallback() -> None:
    branch = big_branch(5)
    totals = tlm.branch_totals(branch.messages)
    head = tl.header_html("T <1>", 5, totals, 2)
    assert "T &lt;1&gt;" in head and "5 messages" in head and "2 runs" in head
    assert "No runs observed yet" in tl.runs_html(None)
    static = tl.static_html("T", branch.messages, 1, 3, None, None, totals)
    assert "messages 2–3 of 5" in static and static.count('class="lion-msg ') == 2


def test_previews_are_plain_text_not_markdown() -> None:
    branch = Branch()
    branch.add_message(Instruction(instruction="Run **step 176** of `plan.md`"))
    branch.add_message(
        AssistantResponse(response="## Step 176\n\nDone:\n\n```python\nprint('ok')\n```")
    )
    rows = tlm.timeline_rows(branch.messages, range(2))
    user, reply = (tl.row_summary_html(r) for r in rows)
    assert '<span class="lion-tl-preview">Run step 176 of plan.md</span>' in user
    assert '<span class="lion-tl-preview">Step 176 Done: print(&#x27;ok&#x27;)</span>' in reply
    assert "##" not in reply and "```" not in reply and "**" not in user


def test_a_replayed_message_says_which_cassette_call_and_line() -> None:
    note = {
        "cassette": "lesson.cassette.jsonl",
        "call": 3,
        "line": 4,
        "recorded_at": "2026-11-30T09:00:00Z",
    }
    branch = Branch()
    branch.add_message(Instruction(instruction="hi"))
    branch.add_message(AssistantResponse(response="hello", metadata={"replayed": note}))
    row = tlm.timeline_rows(branch.messages, [1])[0]
    said = "replayed from lesson.cassette.jsonl, call 3 (line 4), recorded 2026-11-30T09:00:00Z"
    assert tl.replayed_text(note) == said
    assert f"<tr><th>replayed</th><td>{said}</td></tr>" in tl.row_detail_html(row, branch.messages)
    assert 'class="lion-badge lion-replayed"' in tl.row_summary_html(row)
    plain = tlm.timeline_rows(branch.messages, [0])[0]
    assert "replayed" not in tl.row_summary_html(plain)
    hostile = {"cassette": "<img src=x onerror=alert(1)>.jsonl", "call": "<b>1</b>"}
    branch.add_message(AssistantResponse(response="again", metadata={"replayed": hostile}))
    row = tlm.timeline_rows(branch.messages, [2])[0]
    for html in (tl.row_summary_html(row), tl.row_detail_html(row, branch.messages)):
        assert "<img" not in html and "<b>1" not in html


async def test_runs_from_before_run_tracking_are_said_not_counted_as_zero() -> None:
    assert tl.runs_title(0) == "Runs (0)" and tl.runs_title(2) == "Runs (2)"
    assert tl.runs_title(0, 8) == "Runs: none observed — 8 messages came before run tracking"
    assert tl.runs_title(1, 1) == "Runs (1) · 1 message came before run tracking"
    note = tl.runs_html(None, untracked=8)
    assert "The branch&#x27;s 8 messages came before run tracking started" in note
    assert "provenance_of(branch)" in note and "No runs observed yet" not in note
    observed = tl.runs_html(provenance_of(await conversation()), untracked=2)
    assert "The first 2 messages came before" in observed and "<table" in observed
    branch = big_branch(5)
    totals = tlm.branch_totals(branch.messages)
    static = tl.static_html("T", branch.messages, 0, 5, None, None, totals, untracked=4)
    assert "<summary>Runs: none observed — 4 messages came before run tracking</summary>" in static
