"""Building the Instruction for a turn: parameters + context providers (shared by chat/run)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from lion_nb.errors import ResponseFormatError
from lion_nb.messages import Instruction

if TYPE_CHECKING:
    from lion_nb.operations.types import ChatParam
    from lion_nb.session.port import BranchPort


def response_schema_of(fmt: Any) -> dict[str, Any] | None:
    """A JSON schema for a pydantic model class/instance, or a dict taken as a schema."""
    if fmt is None:
        return None
    if isinstance(fmt, BaseModel):
        fmt = type(fmt)
    if isinstance(fmt, type) and issubclass(fmt, BaseModel):
        return fmt.model_json_schema()
    if isinstance(fmt, dict):
        return fmt
    raise ResponseFormatError(
        f"response_format must be a pydantic model or a JSON schema dict, not {fmt!r}"
    )


def context_list(context: Any) -> list[Any]:
    if context is None:
        return []
    return list(context) if isinstance(context, list | tuple) else [context]


def build_instruction(port: BranchPort, instruction: Any, param: ChatParam) -> Instruction:
    """The Instruction for this turn. Context providers run here; what they add is recorded in
    the instruction's context (so the inspector shows what the model saw, and nothing of it
    lingers on the branch after the call)."""
    injected = port.context_additions(instruction)
    if isinstance(instruction, Instruction):
        if not injected:
            return instruction
        return instruction.model_copy(update={"context": [*instruction.context, *injected]})
    request_fields = param.request_fields
    if isinstance(request_fields, list):
        request_fields = {name: "..." for name in request_fields}
    context = context_list(param.context) + injected
    if param.include_token_usage_to_model:
        from lion_nb.tokens import estimate_tokens

        used = estimate_tokens(m.text for m in port.messages)
        context.append(f"Conversation so far: about {used} tokens.")
    return Instruction(
        instruction=instruction,
        guidance=param.guidance,
        context=context,
        plain_content=param.plain_content,
        request_fields=request_fields,
        response_schema=response_schema_of(param.response_format),
        images=list(param.images or []),
        image_detail=param.image_detail,
        sender=param.sender or port.user or "user",
        recipient=param.recipient or str(port.id),
    )
