"""What a model sees: the request compiled for any turn of a branch, and the line that says
what the next turn will send (its figures come in as ``tokens.NextTurn``).

``turn_payload`` recompiles the progression up to a turn with ``lion_nb.compile`` (the same
function the operations use to build requests), so it shows exactly what was sent when the
turn used the branch's own history — without the messages a ``fit_context`` cut left out
(the turn's instruction names them, ``metadata["context_fit"]``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lion_nb.compile import cli_prompt, compile_messages
from lion_nb.messages import ActionRequest, AssistantResponse, Instruction, RoledMessage
from lion_nb.render.escape import escape

if TYPE_CHECKING:
    from lion_nb.tokens import NextTurn

__all__ = ["PAYLOAD_SHOWN", "next_turn_html", "payload_json", "turn_payload"]

PAYLOAD_SHOWN = 200  # payload entries shown in the detail; turn_payload() returns them all


def _turn_start(messages: Sequence[RoledMessage] | Any, index: int) -> int | None:
    """Index of the first message *not* sent in the request that produced ``messages[index]``
    (the request holds ``messages[:start]``, or ``[:index + 1]`` for an instruction)."""
    msg = messages[index]
    if isinstance(msg, Instruction):
        return index + 1
    if isinstance(msg, AssistantResponse):
        return index
    if isinstance(msg, ActionRequest):
        j = index
        while j > 0 and isinstance(messages[j - 1], ActionRequest):
            j -= 1
        if j > 0 and isinstance(messages[j - 1], AssistantResponse):
            j -= 1  # the requests belong to the assistant turn just before them
        return j
    return None  # a system message or a tool result is not a model turn


def turn_payload(
    messages: Sequence[RoledMessage] | Any, index: int, *, cli: bool = False
) -> dict[str, Any] | None:
    """What the model received for the turn of ``messages[index]``, compiled from the
    progression: ``{"messages": [...]}`` (chat-completions) or, for a CLI agent, the one
    prompt it was sent. None when the message is not a model turn."""
    stop = _turn_start(messages, index)
    if stop is None:
        return None
    sent = list(messages[:stop])
    ins = next((m for m in reversed(sent) if isinstance(m, Instruction)), None)
    fit = ins.metadata.get("context_fit") if ins is not None else None
    if isinstance(fit, dict) and fit.get("omitted"):
        left_out = set(fit["omitted"])
        sent = [m for m in sent if str(m.id) not in left_out]
    if cli:
        last = next((m for m in reversed(sent) if isinstance(m, Instruction)), None)
        system = sent[0].text if sent and sent[0].role == "system" else None
        return {
            "prompt": cli_prompt(last) if last is not None else "",
            "system_prompt": system,
            "note": "a CLI agent keeps its own history",
        }
    return {"messages": compile_messages(sent)}


def payload_json(payload: dict[str, Any] | None, *, shown: int = PAYLOAD_SHOWN) -> tuple[str, str]:
    """Pretty JSON for display and a note about what was left out (very long payloads)."""
    if payload is None:
        return "", ""
    note = ""
    items = payload.get("messages")
    if isinstance(items, list) and len(items) > shown:
        note = (
            f"showing the last {shown} of {len(items):,} messages; "
            "lion_nb.render.turns.turn_payload(branch.messages, i) returns all"
        )
        payload = {**payload, "messages": items[-shown:]}
    return json.dumps(payload, indent=2, ensure_ascii=False, default=str), note


def next_turn_html(turn: NextTurn) -> str:
    if turn.cli:
        return (
            '<div class="lion-meta lion-next-turn">Next turn: a CLI agent receives only the '
            "new prompt (it keeps its own history).</div>"
        )
    # one parenthesis, one phrase: "(exact, counted by the model's tokenizer)"
    kind = (
        "exact, counted by the model's tokenizer"
        if turn.exact
        else "estimate, ~4 characters per token"
    )
    window = ""
    if turn.window:
        pct = 100.0 * turn.tokens / turn.window
        over = " — over the window" if turn.tokens > turn.window else ""
        window = f" of a {turn.window:,}-token context window ({pct:.1f}%{over})"
    else:
        window = " (context window unknown)"
    source = ""
    if turn.recorded and turn.recorded != turn.messages:
        source = f" (all {turn.recorded:,} recorded, tool calls merged into their turns)"
    elif turn.recorded:
        source = " (every recorded message)"
    return (
        f'<div class="lion-meta lion-next-turn">Next turn sends {turn.messages:,} '
        f"message{'s' if turn.messages != 1 else ''}{escape(source)} plus the new instruction: "
        f"{turn.tokens:,} tokens so far "
        f'<span class="lion-tl-kind">({escape(kind)})</span>{escape(window)}.</div>'
    )
