"""``lion_nb.render.flow``: rows, header, detail and text from a snapshot; everything escaped."""

from __future__ import annotations

import uuid

from lion_nb.messages import Instruction
from lion_nb.render.flow import (
    flow_html,
    flow_text,
    format_run_time,
    node_detail_html,
    row_html,
)
from lion_nb.viewmodels.flow import FlowSnapshot, NodeRow

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
    assert ">completed</span></span> · <span" in html  # readable without the stylesheet
    assert (
        '2.</span> <span class="lion-flow-status lion-flow-completed">completed</span></span> · '
        in html
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


def _fields(cells: str) -> tuple[list[tuple[str, str]], list[str]]:
    """A row's top level: its elements as (class, text), and the text between them."""
    from html.parser import HTMLParser

    class Top(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.depth, self.fields, self.between = 0, [], []

        def handle_starttag(self, tag, attrs):
            if self.depth == 0:
                self.fields.append([dict(attrs).get("class", ""), ""])
            self.depth += 1

        def handle_endtag(self, tag):
            self.depth -= 1

        def handle_data(self, data):
            if self.depth == 0:
                self.between.append(data)
            else:
                self.fields[-1][1] += data

    top = Top()
    top.feed(cells)
    return [(c, t) for c, t in top.fields], top.between


def test_every_field_of_a_row_is_one_nowrap_span_and_rows_wrap_only_between_fields():
    from lion_nb.render.flow import row_cells_html
    from lion_nb.render.html import lion_css

    cells = row_cells_html(row(attempts=3, run_ms=552.0, branch="template (fork)"))
    fields, between = _fields(cells)
    assert [c.split()[0] for c in (cls for cls, _ in fields)] == ["lion-flow-f"] * 7
    assert set(between) == {" · "}  # the only place a row can wrap
    assert [t for _, t in fields] == [
        "2. completed", "communicate Outline", "after 1", "template (fork)", "3 Ray attempts",
        "552 ms", "1,200 in · 34 out · $0.0123",
    ]  # fmt: skip
    assert ".lion-flow-f { white-space: nowrap; }" in lion_css()
    fields, _ = _fields(row_cells_html(row(error="E: x")))
    assert fields[-1] == ("lion-flow-error", "E: x")  # the error goes on its own line


def test_a_stopped_node_says_stopped_and_a_named_fork_is_not_repeated():
    html = row_html(row(status="stopped", error=None, name="section 2", title="section 2",
                        branch="section 2"))  # fmt: skip
    assert "lion-flow-stopped" in html and "failed" not in html and "Error" not in html
    assert html.count("section 2") == 1  # its name; the fork named after it adds nothing
    assert '<b class="lion-flow-name">section 2</b>' in html
    given = row_html(row(title="Outline", branch="template (fork)"))
    assert (
        '<span class="lion-flow-f lion-flow-branch" title="branch">template (fork)</span>' in given
    )
    assert "lion-flow-cancelled" in row_html(row(status="cancelled", run_ms=None))


def _snap(*rows: NodeRow, span_ms: float = 2000.0) -> FlowSnapshot:
    return FlowSnapshot(title="talk", rows=rows, counts={}, input_tokens=0, output_tokens=0,
                        cost_usd=None, selected=None, span_ms=span_ms)  # fmt: skip


def test_the_time_strip_has_one_lane_per_node_and_a_bar_for_each_that_ran():
    from lion_nb.render.flow import strip_html

    snap = _snap(
        row(index=1, title="Outline", start_ms=0.0, run_ms=500.0, worker="kernel"),
        row(index=2, id=uuid.UUID(int=2), title="section 2", status="stopped", start_ms=500.0,
            run_ms=1500.0, worker="worker 4242"),
        row(index=3, id=uuid.UUID(int=3), title="later", status="cancelled", start_ms=None,
            run_ms=None, worker=None),
    )  # fmt: skip
    html = strip_html(snap)
    assert html.count('class="lion-flow-lane ') == 3 and html.count('class="lion-flow-bar ') == 2
    assert 'class="lion-flow-bar lion-flow-completed" style="left:0.00%;width:25.00%"' in html
    assert 'class="lion-flow-bar lion-flow-stopped" style="left:25.00%;width:75.00%"' in html
    assert '<span class="lion-flow-nobar">cancelled</span>' in html
    assert "+500 ms · 1.5 s · worker 4242" in html and "1. Outline" in html
    assert ">2.0 s</span>" in html  # the axis: the whole span
    assert html in flow_html(snap)  # the static block shows the picture too
    assert strip_html(_snap()) == ""
    tiny = strip_html(_snap(row(start_ms=2000.0, run_ms=0.0)))
    assert 'style="left:99.40%;width:0.60%"' in tiny  # an instant still shows, inside the strip


def test_the_time_strip_escapes_node_text():
    from lion_nb.render.flow import strip_html

    html = strip_html(_snap(row(title=EVIL, worker=EVIL, status=EVIL, start_ms=0.0)))
    assert "<img" not in html and "&lt;img" in html
