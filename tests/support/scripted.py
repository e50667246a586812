"""Small shared helpers for core tests."""

from __future__ import annotations

from typing import Any

from lion_nb import Branch, iModel


def scripted(*replies: Any, **kw: Any) -> iModel:
    return iModel(provider="scripted", replies=list(replies), **kw)


def recording_branch(*replies: Any, system: str | None = None, **kw: Any) -> tuple[Branch, list]:
    """A branch on a scripted model plus the list of every signal it emits."""
    branch = Branch(system=system, chat_model=scripted(*replies, **kw))
    seen: list = []
    branch.observe(handler=seen.append)
    return branch, seen


# the signals of one recorded exchange (communicate): the call, its two messages, its end
RECORDED_EXCHANGE = ("CallStart", "MessageAdded", "MessageAdded", "CallEnd")


def kinds(signals: list, *, skip_deltas: bool = True) -> list[str]:
    return [
        type(s).__name__ for s in signals if not (skip_deltas and type(s).__name__ == "StreamDelta")
    ]


def held_outside_messages(branch: Branch, text: str) -> bool:
    """Whether any of the branch's state other than its recorded messages holds ``text``
    (a call's context-provider additions must not linger on the branch after the call)."""
    return text in repr({k: v for k, v in vars(branch).items() if k != "_messages"})
