"""render.turns: what the model saw for a turn, compiled from the progression, and the
next-turn line."""

from __future__ import annotations

import json

from lion_nb import Branch, Session, iModel
from lion_nb.messages import AssistantResponse, Instruction
from lion_nb.provenance import provenance_of
from lion_nb.render import turns
from lion_nb.viewmodels.next_turn import NextTurn


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
