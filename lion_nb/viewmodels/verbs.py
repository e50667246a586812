"""The verbs a chat view drives, by name, and what each one means for trying again.

``VERBS[name](branch, instruction, **kwargs)`` runs one turn: ``instruction`` is the user's text
or, when trying again, the ``Instruction`` recorded before (communicate, operate and run take it
as is, so the fork records the very same message and shares it with its origin). A verb may
also be any ``async def f(branch, text, **kwargs)``.

Facts about each built-in verb, used by ``viewmodels.conversation``:

* ``SENDS_HISTORY``: the request carries the branch's messages, so ``progression=`` chooses what
  is sent (a CLI agent keeps its own history; ReAct's rounds must see each other).
* ``RECORDS_WHEN_STOPPED``: the verb records nothing when cancelled (ADR-0021), so a view that
  started it records the instruction and the partial reply itself. ``run`` records its partial
  text on every exit already.
* ``TAKES_INSTRUCTION``: accepts a recorded ``Instruction`` in place of text.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lion_nb.session.branch import Branch

__all__ = ["RECORDS_WHEN_STOPPED", "SENDS_HISTORY", "TAKES_INSTRUCTION", "VERBS", "Verb"]

Verb = Callable[..., Awaitable[Any]]


async def _communicate(branch: Branch, instruction: Any, **kw: Any) -> Any:
    return await branch.communicate(instruction, **kw)


async def _run(branch: Branch, instruction: Any, **kw: Any) -> Any:
    stream = branch.run(instruction, **kw)
    try:
        async for _ in stream:
            pass
    finally:  # Stop: closing the generator closes the CLI stream and records the partial text
        await stream.aclose()


async def _operate(branch: Branch, instruction: Any, **kw: Any) -> Any:
    return await branch.operate(instruction=instruction, **kw)


async def _react(branch: Branch, instruction: Any, **kw: Any) -> Any:
    return await branch.ReAct(instruction, **kw)


VERBS: dict[str, Verb] = {
    "communicate": _communicate,
    "run": _run,
    "operate": _operate,
    "ReAct": _react,
}
SENDS_HISTORY = frozenset({"communicate", "operate"})
RECORDS_WHEN_STOPPED = frozenset({"communicate", "operate"})
TAKES_INSTRUCTION = frozenset({"communicate", "operate", "run"})
