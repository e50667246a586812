"""``interpret``: rewrite a raw user request into a clearer prompt (one unrecorded turn)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lion_nb.operations.chat import chat
from lion_nb.operations.types import ChatParam

if TYPE_CHECKING:
    from lion_nb.port.branch_port import BranchPort

GUIDANCE = (
    "Rewrite the user's raw request as a clear, specific prompt for a language model. Keep "
    "the user's intent and constraints, add what is implied, remove ambiguity. Reply with the "
    "rewritten prompt only."
)


async def interpret(
    branch: BranchPort,
    text: str,
    chat_param: ChatParam,
    *,
    domain: str | None = None,
    style: str | None = None,
) -> str:
    guidance = GUIDANCE
    if domain:
        guidance += f" Domain: {domain}."
    if style:
        guidance += f" Style: {style}."
    param = chat_param.with_(guidance=guidance, progression=[])
    return await chat(branch, text, param)
