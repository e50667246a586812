"""What counts as the end of a ReAct round: an answer, or a ``ReActError`` saying why not.

An answer round's answer is ``Analysis.answer`` (or a reply in plain words: a model that ignored
the JSON format still answered). None of these is an answer: an empty one, text that begins as
JSON but is none (a cut ``'{'``), lion_nb's own words echoed back (a schema's description, a
round's prompt: small models do this). An analysis round whose ``tool_choice`` forced a tool
must have called one. The checks return the ``ReActError`` for ``react._round`` to raise inside
the round, so its ``RoundEnd`` carries it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from typing import Any

from lion_nb.errors import ReActError
from lion_nb.operations.react_models import Analysis, AnswerRequired, ReActAnalysis

__all__ = ["SENT_CHARS", "Check", "answer_of", "forced_tool", "no_answer", "no_forced_call"]

SENT_CHARS = 160  # what an error quotes of the model's reply, at most


def _truncated(text: str) -> str:
    return text if len(text) <= SENT_CHARS else text[: SENT_CHARS - 1] + "…"


def forced_tool(tool_choice: Any) -> str | None:
    """The tool (or "a tool") a ``tool_choice`` forces, else None."""
    if tool_choice == "required":
        return "a tool"
    if isinstance(tool_choice, str) and tool_choice not in ("auto", "none"):
        return tool_choice
    if isinstance(tool_choice, dict):
        return (tool_choice.get("function") or {}).get("name") or tool_choice.get("name")
    return None


Check = Callable[[Any, int, str], ReActError | None]


@cache
def _own_words() -> tuple[str, ...]:
    """lion_nb's own words in a ReAct request (the schemas' descriptions, the round prompts):
    a reply that only repeats one of them is the request echoed back, not an answer."""
    words = [ReActAnalysis.FIRST_EXT_PROMPT, ReActAnalysis.CONTINUE_EXT_PROMPT]
    words.append(ReActAnalysis.ANSWER_PROMPT.split("{")[0])
    for model in (Analysis, AnswerRequired, ReActAnalysis):
        schema = model.model_json_schema()
        words.append(schema.get("description") or "")
        words.extend(p.get("description") or "" for p in schema["properties"].values())
    return tuple(sorted({_plain(w) for w in words} - {""}))


_ECHO_CHARS = 24  # an answer that begins with this much of lion_nb's own words echoes them


def _echoes(text: str) -> bool:
    plain = _plain(text)
    for words in _own_words():
        if plain == words or plain.startswith(words[:_ECHO_CHARS]):
            return True
        if len(plain) >= _ECHO_CHARS // 2 and words.startswith(plain):
            return True
    return False


def _plain(text: str) -> str:
    return " ".join(text.lower().strip(" .\n\t\"'`").split())


def answer_of(out: Any) -> str | None:
    """The answer an answer round gave: ``Analysis.answer``, or a reply in plain words (a model
    that ignored the JSON format still answered); None for none — an empty answer, JSON that
    did not validate (a cut ``'{'``), or lion_nb's own schema text echoed back."""
    if isinstance(out, Analysis):
        text = out.answer or ""
    elif isinstance(out, str):
        text = out
    else:
        return None
    if _broken_json(text) or not _plain(text) or _echoes(text):
        return None
    return text


def _broken_json(text: str) -> bool:
    """Text that begins as JSON but is none (a cut ``'{'``): a fragment, not an answer."""
    text = text.strip()
    if text.startswith("```"):
        return True
    if not text.startswith(("{", "[")):
        return False
    try:
        json.loads(text)
    except ValueError:
        return True
    return False


def no_answer(out: Any, number: int, sent: str) -> ReActError | None:
    """A ``ReActError`` when an answer round gave no answer (``answer_of``)."""
    if answer_of(out) is not None:
        return None
    quoted = repr(_truncated(sent)) if sent else "nothing"
    return ReActError(
        f"ReAct got no answer in round {number} (the answer round): the model sent {quoted}. "
        "Every round is recorded on the branch; ask again, or use a model that follows "
        'the answer\'s JSON format ({"answer": "..."}).',
        round=number,
        sent=_truncated(sent),
        missing="answer",
    )


def no_forced_call(tool: str) -> Check:
    """A check that an analysis round called ``tool`` (what ``tool_choice`` forced)."""

    def check(out: Any, number: int, sent: str) -> ReActError | None:
        responses = (out.get("action_responses") if isinstance(out, dict) else None) or getattr(
            out, "action_responses", None
        )
        if responses:
            return None
        quoted = repr(_truncated(sent)) if sent else "nothing"
        return ReActError(
            f"ReAct round {number} called no tool although tool_choice asked for {tool}: the "
            f"model sent {quoted}. Its server may ignore tools; the round is recorded.",
            round=number,
            sent=_truncated(sent),
            missing="tool call",
        )

    return check
