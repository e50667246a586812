"""``BranchHost``: what the port needs from the branch it serves, and nothing more.

The seam is typed against this protocol, never against ``Branch`` (as pydantic-ai's graph gets
``GraphAgentDeps``, never ``Agent``): the facade fills it, the operations see it through
``BranchPort``, and no module of ``lion_nb.port`` imports the facade.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from lion_nb.messages import RoledMessage, System
    from lion_nb.models.imodel import iModel
    from lion_nb.port.bus import SignalBus
    from lion_nb.port.tools import ToolRegistry
    from lion_nb.progression import Messages


class BranchHost(Protocol):
    """One branch as its port uses it: identity, the messages record, the models, the tools,
    the context providers, the signal bus, and the snapshot stream persistence writes."""

    context_providers: list[Callable[..., Any]]
    """``provider(branch, instruction)`` -> what it adds to the instruction, or None."""

    @property
    def id(self) -> uuid.UUID: ...

    @property
    def user(self) -> str | None: ...

    @property
    def system(self) -> System | None: ...

    @property
    def messages(self) -> Messages: ...

    @property
    def chat_model(self) -> iModel: ...

    @chat_model.setter
    def chat_model(self, model: iModel) -> None: ...

    @property
    def parse_model(self) -> iModel: ...

    @property
    def tools(self) -> ToolRegistry: ...

    @property
    def signals(self) -> SignalBus: ...

    def add_message(self, message: RoledMessage) -> RoledMessage:
        """Record ``message`` and emit ``MessageAdded``."""
        ...

    def retract_message(self, message_id: uuid.UUID, *, reason: str) -> RoledMessage:
        """Take back a recorded message and emit ``MessageRetracted``."""
        ...

    def clear_messages(self) -> None: ...

    def to_dict(self) -> dict[str, Any]:
        """The branch as JSON-safe data (what a snapshot file holds)."""
        ...
