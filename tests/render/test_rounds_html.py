"""render.rounds_html: ReAct rounds as cards, run headings, the rounds view's heading."""

from __future__ import annotations

from lion_nb.messages import ActionRequest, ActionResponse, AssistantResponse, Instruction
from lion_nb.render.rounds_html import (
    analysis_text,
    round_html,
    round_title,
    rounds_header_html,
    rounds_html,
)
from lion_nb.viewmodels.rounds import RoundsModel


def model() -> RoundsModel:
    return RoundsModel.from_messages(
        [
            Instruction(instruction="q"),
            AssistantResponse(
                response='{"analysis": "use <b>f</b>"}', metadata={"usage": {"output_tokens": 3}}
            ),
            ActionRequest(function="f", arguments={"x": "<i>"}, call_id="1"),
            ActionResponse(function="f", output="<script>", call_id="1"),
            AssistantResponse(response='{"answer": "done"}'),
        ]
    )


def test_rounds_as_cards() -> None:
    rounds = model().all_rounds()
    first = round_html(rounds[0])
    assert round_title(rounds[0]) == "Round 1" and round_title(rounds[1]) == "Answer"
    assert "1 action" in first and "lion-parallel" in first
    assert "<script>" not in first and "&lt;script&gt;" in first and "<i>" not in first
    assert analysis_text(rounds[0].steps[0].analysis) == "use <b>f</b>"
    assert 'data-round="2"' in round_html(rounds[1])


def test_the_heading_and_the_whole_view() -> None:
    rounds = model().all_rounds()
    head = rounds_header_html("R <1>", rounds)
    assert "R &lt;1&gt;" in head and "2 rounds" in head and "3 out" in head
    assert "running" not in head
    assert "No ReAct rounds yet" in rounds_html(RoundsModel())
    assert rounds_html(model(), header=head).startswith('<div class="lion-view lion-rounds">')
