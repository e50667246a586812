"""Recording what a view showed when its run was stopped.

``Branch.communicate`` (and ``operate``, whose exchange is a communicate) records the
instruction and the reply together, after the reply: cancelled, it records nothing (ADR-0021 D3,
kept for code). A chat view has shown the prompt and the partial reply by then, and the next
turn must send what the user saw, so the view records them itself: ``TurnWatch`` follows the
run's signals (``StreamDelta`` snapshots keyed by the id the reply would have been recorded
under, ``MessageAdded``) and ``record_stopped`` records the instruction and the partial reply,
marked ``metadata["stopped"] = True`` as ``run()`` marks its own.

Only a turn that recorded nothing yet is completed this way: once the exchange is recorded,
text still streaming belongs to an unrecorded call (a parse repair turn) and stays unrecorded.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from lion_nb.messages import AssistantResponse, Instruction, RoledMessage
from lion_nb.signals import MessageAdded, Signal, StreamDelta

if TYPE_CHECKING:
    from lion_nb.session.branch import Branch

__all__ = ["INSTRUCTION_FIELDS", "TurnWatch", "model_label"]

# The verb keywords that shape the instruction (what build_instruction reads from a ChatParam).
INSTRUCTION_FIELDS = (
    "guidance",
    "context",
    "sender",
    "recipient",
    "request_fields",
    "response_format",
    "images",
    "image_detail",
    "plain_content",
)


def model_label(model: Any) -> str | None:
    """``provider/model`` as ``chat`` labels a reply's sender."""
    if model is None:
        return None
    return f"{model.provider_name}/{model.model}" if model.model else model.provider_name


class TurnWatch:
    """One view-started turn on ``branch``: the parts streamed and not recorded (by message
    id, in order), and the messages recorded. ``close()`` ends the subscription."""

    def __init__(self, branch: Branch) -> None:
        self.branch = branch
        self.recorded: list[RoledMessage] = []
        self._live: dict[uuid.UUID, dict[str, StreamDelta]] = {}
        self._close = branch.subscribe((StreamDelta, MessageAdded), self._on_signal)

    def _on_signal(self, signal: Signal) -> None:
        if isinstance(signal, StreamDelta):
            if signal.kind != "tool_args":
                self._live.setdefault(signal.message_id, {})[signal.kind] = signal
        elif isinstance(signal, MessageAdded):
            self.recorded.append(signal.message)
            self._live.pop(signal.message.id, None)

    def close(self) -> None:
        self._close()

    @property
    def first_instruction(self) -> Instruction | None:
        return next((m for m in self.recorded if isinstance(m, Instruction)), None)

    def record_stopped(self, instruction: Any, verb_kwargs: dict[str, Any]) -> list[RoledMessage]:
        """After a stop: record ``instruction`` (the recorded ``Instruction`` tried again, or
        the text sent, built into one as the verb would) and the partial reply, when nothing
        of the turn was recorded. Returns what was recorded."""
        if self.recorded:
            return []
        ins = self._instruction(instruction, verb_kwargs)
        out: list[RoledMessage] = [self.branch.add_message(ins)]
        if self._live:
            message_id, parts = list(self._live.items())[-1]
            model = verb_kwargs.get("chat_model") or self.branch.chat_model_or_none
            label = model_label(model)
            metadata: dict[str, Any] = {"stopped": True}
            if label:
                metadata["model"] = label
            if "thinking" in parts:
                metadata["thinking"] = parts["thinking"].snapshot
            text = parts["text"].snapshot if "text" in parts else ""
            reply = AssistantResponse(
                id=message_id,
                response=text,
                metadata=metadata,
                sender=label,
                recipient=ins.sender,
            )
            out.append(self.branch.add_message(reply))
        return out

    def _instruction(self, instruction: Any, verb_kwargs: dict[str, Any]) -> Instruction:
        if isinstance(instruction, Instruction):
            return instruction
        # What the verb built and never recorded: rebuilt the same way (context providers
        # included). operate's composed schema (reason, action requests) is not known here.
        from lion_nb.operations.instruction import build_instruction
        from lion_nb.operations.types import ChatParam

        fields = {k: verb_kwargs[k] for k in INSTRUCTION_FIELDS if k in verb_kwargs}
        return build_instruction(self.branch.port(), instruction, ChatParam(**fields))
