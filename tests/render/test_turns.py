"""render.turns: what the model saw for a turn, compiled from the progression, and the
next-turn line."""

from __future__ import annotations

import json

from lion_nb.render import turns
from lion_nb.tokens import NextTurn
from tests.support.inspector_branches import big_branch, conversation


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


def test_long_payloads_are_cut_for_display_with_a_note() -> None:
    branch = big_branch(601)
    text, note = turns.payload_json(turns.turn_payload(branch.messages, 599))
    assert "showing the last 200 of 600 messages" in note
    assert len(json.loads(text)["messages"]) == 200


def test_the_next_turn_line_says_what_it_counts() -> None:
    turn = NextTurn(messages=3, tokens=120, exact=False, window=100, cli=False, recorded=4)
    html = turns.next_turn_html(turn)
    assert "Next turn sends 3 messages" in html and "tool calls merged" in html
    assert "over the window" in html and "(120.0%" in html
    assert "CLI agent" in turns.next_turn_html(
        NextTurn(messages=0, tokens=0, exact=False, window=None, cli=True)
    )


def test_an_exact_count_reads_as_one_phrase() -> None:
    turn = NextTurn(messages=9, tokens=88, exact=True, window=2048, cli=False, recorded=9)
    html = turns.next_turn_html(turn)
    kind = '<span class="lion-tl-kind">(exact, counted by the model&#x27;s tokenizer)</span>'
    assert kind in html and "((" not in html and "))" not in html


async def test_what_the_model_saw_leaves_out_what_a_fit_context_cut_left_out() -> None:
    from lion_nb import Branch, iModel
    from lion_nb.messages import AssistantResponse, Instruction

    model = iModel(provider="scripted", replies=["ok"], context_window=900, max_tokens=100)
    branch = Branch(system="S", chat_model=model)
    for n in range(6):
        branch.add_message(Instruction(instruction=f"q{n}"))
        branch.add_message(AssistantResponse(response=" ".join(["word"] * 200)))
    await branch.communicate("next?", fit_context=True)
    sent = model.provider.requests[-1].messages
    shown = turns.turn_payload(branch.messages, len(branch.messages) - 1)
    assert shown == {"messages": sent}  # exactly what was sent, not the whole history
    assert len(shown["messages"]) < len(branch.messages) - 1
