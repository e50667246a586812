"""``select``: let the model pick up to ``max_num_selections`` of the given choices.

Built on ``operate`` (one structured turn). There is no ``Branch.select`` facade (ADR D1); call
``await select(branch, "Which fits?", choices)``, or register it on a Session
(``session.register_operation("select", select)``). It runs under one ``"select"`` run
lifecycle of its own, since no facade wraps it.

Choices: a list of strings, a dict (name -> value), an Enum class, or a list of pydantic model
classes or instances (named by their class). The model answers names; each is mapped back to
its choice (exact, then case-insensitive, then the closest name by similarity) and names that
match no choice are dropped, so ``selected`` only ever holds choices, at most
``max_num_selections`` of them, without repeats. A reply that is not the requested JSON is
searched for choice names as a last resort.
"""

from __future__ import annotations

import difflib
import json
from enum import Enum
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from lion_nb.operations.operate import operate
from lion_nb.port.branch_port import BranchPort
from lion_nb.port.lifecycle import observed_run

PROMPT = (
    "Select up to {max_num_selections} of these choices: {choices}. Put the chosen names, "
    "exactly as listed, in `selected`; no comments."
)


class _SelectionReply(BaseModel):
    """What the model is asked for: choice names."""

    selected: list[str] = Field(default_factory=list, description="The chosen names.")


class SelectionModel(BaseModel):
    """The result: the chosen choices themselves (strings, dict values, Enum members, models)."""

    PROMPT: ClassVar[str] = PROMPT
    selected: list[Any] = Field(default_factory=list)


def _describe(value: Any) -> Any:
    if isinstance(value, Enum):
        return _describe(value.value)
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, type) and issubclass(value, BaseModel):
        return value.model_json_schema()
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


def choice_table(choices: Any) -> dict[str, Any]:
    """Name -> choice, in order. Raises TypeError for an unsupported kind of choices."""
    if isinstance(choices, type) and issubclass(choices, Enum):
        return {member.name: member for member in choices}
    if isinstance(choices, dict):
        return {str(k): v for k, v in choices.items()}
    if isinstance(choices, list | tuple | set):
        table: dict[str, Any] = {}
        for item in choices:
            if isinstance(item, str):
                name = item
            elif isinstance(item, type) and issubclass(item, BaseModel):
                name = item.__name__
            elif isinstance(item, BaseModel):
                name = type(item).__name__
            else:
                name = str(item)
            base, n = name, 2
            while name in table:  # two instances of one class stay two choices
                name, n = f"{base}_{n}", n + 1
            table[name] = item
        if table:
            return table
    raise TypeError(
        "choices must be a non-empty list of strings or models, a dict, or an Enum class; "
        f"got {type(choices).__name__}"
    )


def match_choice(name: Any, names: list[str]) -> str | None:
    """The listed name ``name`` refers to, or None."""
    text = str(name.value if isinstance(name, Enum) else name).strip()
    if text in names:
        return text
    folded = {n.casefold(): n for n in names}
    if text.casefold() in folded:
        return folded[text.casefold()]
    close = difflib.get_close_matches(text, names, n=1, cutoff=0.75)
    return close[0] if close else None


def _names_in_text(text: str, names: list[str]) -> list[str]:
    found = [(text.find(n), n) for n in names if n and n in text]
    return [n for _, n in sorted(found)]


async def _select(
    branch: BranchPort,
    instruction: Any,
    table: dict[str, Any],
    max_num_selections: int,
    context: Any,
    operate_kw: dict[str, Any],
) -> SelectionModel:
    names = list(table)
    prompt = PROMPT.format(max_num_selections=max_num_selections, choices=json.dumps(names))
    text = f"{instruction}\n\n{prompt}" if instruction not in (None, "") else prompt
    ctx = [] if context is None else (list(context) if isinstance(context, list) else [context])
    ctx.append({"choices": {n: _describe(v) for n, v in table.items()}})
    reply = await operate(
        branch, instruction=text, context=ctx, response_format=_SelectionReply, **operate_kw
    )
    if isinstance(reply, _SelectionReply):
        raw_names: list[Any] = list(reply.selected)
    elif isinstance(reply, str):
        raw_names = _names_in_text(reply, names)
    else:
        raw_names = []
    chosen: list[str] = []
    for raw in raw_names:
        name = match_choice(raw, names)
        if name is not None and name not in chosen:
            chosen.append(name)
    return SelectionModel(selected=[table[n] for n in chosen[: max(0, max_num_selections)]])


async def select(
    branch: BranchPort,
    instruction: Any = None,
    choices: Any = None,
    *,
    max_num_selections: int = 1,
    context: Any = None,
    **operate_kw: Any,
) -> SelectionModel:
    """Ask the model to choose; other keywords go to ``operate`` (guidance, chat_model, ...)."""
    table = choice_table(choices)  # bad choices fail before the run starts
    port = BranchPort.of(branch)
    return await observed_run(
        port, "select", _select(port, instruction, table, max_num_selections, context, operate_kw)
    )
