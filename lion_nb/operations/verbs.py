"""The verbs' facts, in one table: which verbs a conversation, a view or a flow drives by name,
which send the branch's history, which take a recorded instruction, what an interactive caller
sets for them, and which module each loads on its first call.

A view (``widgets/chat_view.py``), a flow (``flow/graph.py``) and a conversation
(``session/conversation.py``) read these; none of them writes its own list.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lion_nb.models.imodel import iModel
    from lion_nb.session.branch import Branch

__all__ = [
    "INTERACTIVE",
    "SENDS_HISTORY",
    "TAKES_INSTRUCTION",
    "VERBS",
    "VERB_MODULES",
    "Verb",
    "interactive_defaults",
    "warm_up",
]

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
"""The verbs a conversation drives by name: ``VERBS[name](branch, instruction, **kwargs)``."""
SENDS_HISTORY = frozenset({"communicate", "operate", "ReAct"})
"""Verbs whose request carries the branch's messages (``fit_context`` applies; a CLI agent
keeps its own history) and whose stop ``on_stop`` decides (``run`` records its partial text on
every exit already)."""
TAKES_INSTRUCTION = frozenset({"communicate", "operate", "run"})
"""Verbs that accept a recorded ``Instruction`` in place of text."""
INTERACTIVE: Mapping[str, Any] = MappingProxyType({"on_stop": "record", "fit_context": True})
"""What an interactive caller sets for a verb in ``SENDS_HISTORY`` unless told otherwise: a
stop keeps the reply streamed so far (``on_stop="record"``), and the history is fitted into
the model's window (``fit_context=True``). Code calling a verb chooses for itself."""
VERB_MODULES: Mapping[str, str] = MappingProxyType(
    {
        "communicate": "lion_nb.operations.communicate",
        "run": "lion_nb.operations.run",
        "operate": "lion_nb.operations.operate",
        "ReAct": "lion_nb.operations.react",
    }
)
"""The module each verb loads on its first call (the facade imports it inside the method)."""


def interactive_defaults(verb: str | Verb, *, fit_context: bool = True) -> dict[str, Any]:
    """The keyword arguments an interactive caller adds for ``verb`` (``INTERACTIVE``); none
    for ``run`` or a function of one's own. A flow node, whose request is what the code asked
    for, takes ``fit_context=False``: only a stop's partial reply is kept."""
    if not isinstance(verb, str) or verb not in SENDS_HISTORY:
        return {}
    return {k: v for k, v in INTERACTIVE.items() if fit_context or k != "fit_context"}


def warm_up(verb: str | Verb, model: iModel | None) -> None:
    """Import what the first turn of ``verb`` on ``model`` needs and the facade imports only
    when it is called: the operation's modules, the run lifecycle and the branch's port, and
    the provider's module (never the provider itself: no weights loaded, no client opened).
    Measured: the first Send of a chat view waited ~35-40 ms for these on a busy 2-core machine
    (B10, Enter -> first text). A chat view runs this in a thread when it is made."""
    names = ["lion_nb.port.lifecycle", "lion_nb.port.branch_port"]
    if isinstance(verb, str) and verb in VERB_MODULES:
        names.append(VERB_MODULES[verb])
    for name in names:
        importlib.import_module(name)
    if model is not None:
        with contextlib.suppress(Exception):  # a missing SDK is said at the first call
            model.spec.load(model.api)
