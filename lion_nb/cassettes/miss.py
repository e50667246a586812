"""What a cassette says about a request it cannot replay: a ``CassetteMiss`` whose message is
short and plain — this prompt is not on the cassette, the closest recording (the same position
in the session first, ``matching.closest``) and what differs, and how to record it."""

from __future__ import annotations

import os
from typing import Any

from lion_nb.cassettes.files import sibling
from lion_nb.cassettes.matching import closest, describe, last_instruction
from lion_nb.cassettes.store import Recording
from lion_nb.errors import CassetteMiss

__all__ = ["miss_error"]


def _reason(error: BaseException) -> str:
    """The first sentence of an error's message (a model that cannot be used here)."""
    text = (str(error) or type(error).__name__).splitlines()[0]
    end = text.find(". ")
    if 0 < end < 120:
        text = text[: end + 1]
    return text if len(text) <= 120 else text[:119] + "…"


def _how(shown: str, mode: str, exists: bool, unavailable: BaseException | None, label: str) -> str:
    if unavailable is not None:
        return f" Recording it needs {label}, which cannot be used here: {_reason(unavailable)}"
    if mode != "replay":
        return ""
    if not exists:
        return " To record it, use mode='auto' where the model is available."
    return (
        " To record it, use mode='auto' where the model is available: new calls go to "
        f"{os.path.basename(sibling(shown))!r} beside the cassette, which stays as it is."
    )


def miss_error(
    matched: dict[str, Any],
    *,
    shown: str,
    mode: str,
    exists: bool,
    recorded: list[tuple[Recording, str]],
    position: int = 0,
    unavailable: BaseException | None = None,
) -> CassetteMiss:
    """The miss of ``matched`` on the cassette ``shown`` (in ``mode``; ``exists``: its file
    does), whose recordings are ``recorded`` (each with the file it is in). ``position``: the
    request's 0-based place among the session's requests; ``unavailable``: the error of the
    model that could not record it ("auto" mode)."""
    provider, model = matched.get("provider"), matched.get("model")
    instruction = last_instruction(matched)
    label = f"{provider}/{model}" if model else str(provider)
    said = instruction if len(instruction) <= 80 else instruction[:79] + "…"
    text = f"This prompt is not on the cassette {shown!r}: {said!r} ({label})."
    nearest: dict[str, Any] | None = None
    diffs: list[tuple[str, Any, Any]] = []
    found = closest(matched, [rec.request for rec, _ in recorded], position)
    if found is not None:
        index, diffs = found
        rec, where = recorded[index]
        nearest = {"call": rec.call, "line": rec.line, "cassette": where}
        of = "" if where == shown else f" of {where!r}"
        text += (
            f" The closest recording (call {rec.call}, line {rec.line}{of}) differs in "
            f"{describe(diffs, limit=2)}."
        )
    elif not exists:
        text += " The cassette file does not exist."
    else:
        text += " The cassette has no recordings."
    text += _how(shown, mode, exists, unavailable, label)
    return CassetteMiss(
        text,
        path=shown,
        provider=provider,
        model=model,
        instruction=instruction,
        request=matched,
        nearest=nearest,
        differences=diffs,
    )
