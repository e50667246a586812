"""``lion_nb.render.flow``: rows, header, detail and text from a snapshot; everything escaped."""

from __future__ import annotations

import uuid

from lion_nb.flow.view_model import FlowSnapshot, NodeRow
from lion_nb.messages import Instruction
from lion_nb.render.flow import (
    flow_html,
    flow_text,
    format_run_time,
    node_detail_html,
    row_html,
)

EVIL = '<img src=x onerror="alert(1)">'


def row(**kw) -> NodeRow:
    base = dict(
        id=uuid.UUID(int=1), index=2, operation="communicate", label="Outline", status="completed",
        run_ms=1234.0, input_tokens=1200, output_tokens=34, cost_usd=0.0123, branch="main",
        depends_on=(1,), error=None, attempts=0,
    )  # fmt: skip
    base.update(kw)
    return NodeRow(**base)


def test_a_row_shows_status_time_tokens_and_cost():
    html = row_html(row(), selected=True)
    assert 'class="lion-flow-row lion-flow-completed lion-flow-selected"' in html
    assert f'data-id="{uuid.UUID(int=1)}"' in html
    for part in ("completed", "communicate", "Outline", "1.2 s", "1,200 in · 34 out · $0.0123",
                 "after 1", "main"):  # fmt: skip
        assert part in html, part
    assert "attempts" not in html and "2 Ray attempts" in row_html(row(attempts=2))
    assert ">completed</span> · <code" in html  # readable without the stylesheet
    assert (
        '2.</span> <span class="lion-flow-status lion-flow-completed">completed</span> · ' in html
    )


def test_node_text_is_escaped_everywhere():
    html = row_html(row(operation=EVIL, label=EVIL, branch=EVIL, error=EVIL, status="failed"))
    assert "<img" not in html and "&lt;img" in html
    snap = FlowSnapshot(title=EVIL, rows=(row(label=EVIL),), counts={"completed": 1},
                        input_tokens=1, output_tokens=1, cost_usd=None, selected=None)  # fmt: skip
    assert "<img" not in flow_html(snap)
    detail = node_detail_html(
        row(error=EVIL), [Instruction(instruction=EVIL)], [(uuid.uuid4(), EVIL)]
    )
    assert "<img" not in detail and "lion-streaming-msg" in detail


def test_run_times_and_text():
    assert [format_run_time(v) for v in (None, 12.4, 1500, 125_000)] == [
        "",
        "12 ms",
        "1.5 s",
        "2 min 5 s",
    ]
    snap = FlowSnapshot(title="talk", rows=(row(), row(index=3, status="failed", error="E: x",
                        run_ms=None, input_tokens=None, output_tokens=None, cost_usd=None)),
                        counts={"completed": 1, "failed": 1}, input_tokens=1200, output_tokens=34,
                        cost_usd=0.0123, selected=None)  # fmt: skip
    assert flow_text(snap) == (
        "talk\n2. [completed] communicate: Outline | 1.2 s | 1,200 in · 34 out · $0.0123\n"
        "3. [failed] communicate: Outline | E: x"
    )
    assert "1 completed · 1 failed" in flow_html(snap)
    assert node_detail_html(None, []) == ""
