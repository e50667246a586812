"""``BranchPort``: what an operation may do with a branch, and nothing more.

Operations never touch a branch's private state (HOUSE_STYLE 15): the facade builds a port and
hands it to the operation, which reads history, records (or takes back) messages, emits
signals, streams the message it is building, and learns which models, tools and
context-provider additions apply to *this call* through the port alone. A port is a cheap view
onto one branch; it holds only the per-call choices (the models), so choosing a model for one
call never changes the branch (ADR-0021 D3's "run replaces branch.chat_model" is the one
exception, done through ``adopt_chat_model`` and only when the port allows it).

Operation functions keep the ADR's signatures (``chat(branch, instruction, chat_param)``): they
accept a ``Branch`` or a port and call ``BranchPort.of`` first, so direct callers and
registered user code keep passing branches.

The port is typed against ``BranchHost`` (``lion_nb.port.host``), which ``Branch`` fills; it
emits through the host's public ``signals`` bus.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from lion_nb.signals import MessageStream

if TYPE_CHECKING:
    from lion_nb.messages import RoledMessage, System
    from lion_nb.models.imodel import iModel
    from lion_nb.port.host import BranchHost
    from lion_nb.port.tools import ToolRegistry
    from lion_nb.progression import Messages
    from lion_nb.signals import Signal


class BranchPort:
    """One branch as an operation sees it. Build with ``branch.port()`` or ``BranchPort.of``."""

    __slots__ = ("_adopts", "_chat_model", "_parse_model", "branch")

    def __init__(
        self,
        branch: BranchHost,
        *,
        chat_model: iModel | None = None,
        parse_model: iModel | None = None,
        adopts_run_model: bool = True,
    ) -> None:
        self.branch = branch  # handed on only to user code (a custom Middle, registered ops)
        self._chat_model = chat_model
        self._parse_model = parse_model
        self._adopts = adopts_run_model

    @classmethod
    def of(cls, target: BranchHost | BranchPort) -> BranchPort:
        """The port for ``target``: itself if it is one, else a port onto the branch."""
        return target if isinstance(target, BranchPort) else cls(target)

    def for_call(self, *, chat_model: iModel | None = None) -> BranchPort:
        """A port for one call of a composite verb (operate): ``chat_model`` applies to that
        call only and is never adopted by the branch, whatever inner verb runs."""
        return BranchPort(
            self.branch,
            chat_model=chat_model if chat_model is not None else self._chat_model,
            parse_model=self._parse_model,
            adopts_run_model=False,
        )

    # ----- identity and history -----------------------------------------------------------
    @property
    def id(self) -> uuid.UUID:
        return self.branch.id

    @property
    def user(self) -> str | None:
        return self.branch.user

    @property
    def system(self) -> System | None:
        return self.branch.system

    @property
    def messages(self) -> Messages:
        return self.branch.messages

    def history(self, progression: Any = None) -> list[RoledMessage]:
        """The messages a model sees before a new instruction: all, or the chosen ids."""
        messages = self.branch.messages
        if progression is None:
            return list(messages)
        return [messages[i] for i in progression]

    # ----- recording and signals ----------------------------------------------------------
    def record(self, message: RoledMessage) -> RoledMessage:
        """Append ``message`` and emit ``MessageAdded``."""
        return self.branch.add_message(message)

    def retract(self, message_id: uuid.UUID, reason: str) -> RoledMessage:
        """Take back a recorded message and emit ``MessageRetracted`` (see
        ``Branch.retract_message``); returns it."""
        return self.branch.retract_message(message_id, reason=reason)

    def clear_messages(self) -> None:
        self.branch.clear_messages()

    def emit(self, signal: Signal) -> None:
        self.branch.signals.emit(signal)

    async def drain(self) -> None:
        """Wait for async observers of the signals emitted so far (before a terminal one)."""
        await self.branch.signals.drain()

    def stream(self, message_id: uuid.UUID) -> MessageStream:
        """The one accumulator of the message that will be recorded under ``message_id``:
        call it with each provider delta; it emits ``StreamDelta`` with the running snapshot."""
        bus = self.branch.signals
        return MessageStream(self.branch.id, message_id, bus.emit, bus.observed)

    # ----- what applies to this call ------------------------------------------------------
    @property
    def chat_model(self) -> iModel:
        return self._chat_model if self._chat_model is not None else self.branch.chat_model

    @property
    def parse_model(self) -> iModel:
        return self._parse_model if self._parse_model is not None else self.branch.parse_model

    def adopt_chat_model(self, model: iModel) -> bool:
        """``run(chat_model=...)`` makes ``model`` the branch's (ADR D3), unless this port is
        one call of a composite verb. Returns whether the branch adopted it."""
        if not self._adopts:
            return False
        self.branch.chat_model = model
        return True

    @property
    def tools(self) -> ToolRegistry:
        return self.branch.tools

    def context_additions(self, instruction: Any) -> list[Any]:
        """What the branch's context providers add to this instruction (recorded in it)."""
        found: list[Any] = []
        for provider in self.branch.context_providers:
            extra = provider(self.branch, instruction)
            if extra is not None:
                found.append(extra)
        return found

    def __repr__(self) -> str:
        return f"<BranchPort of {self.branch!r}>"
