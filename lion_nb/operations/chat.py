"""``chat``: one unrecorded model request (ADR D3)."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Literal, overload

from lion_nb.compile import compile_messages
from lion_nb.errors import ExecutionError, LionError
from lion_nb.messages import AssistantResponse, Instruction
from lion_nb.models.base import ModelRequest
from lion_nb.operations.types import ChatParam
from lion_nb.session.port import BranchPort

if TYPE_CHECKING:
    from lion_nb.session.branch import Branch


def model_label(model: Any) -> str:
    return f"{model.provider_name}/{model.model}" if model.model else model.provider_name


@overload
async def chat(
    branch: Branch | BranchPort,
    instruction: Any,
    chat_param: ChatParam,
    return_ins_res_message: Literal[False] = False,
) -> str: ...
@overload
async def chat(
    branch: Branch | BranchPort,
    instruction: Any,
    chat_param: ChatParam,
    return_ins_res_message: Literal[True],
) -> tuple[Instruction, AssistantResponse]: ...


async def chat(
    branch: Branch | BranchPort,
    instruction: Any,
    chat_param: ChatParam,
    return_ins_res_message: bool = False,
) -> tuple[Instruction, AssistantResponse] | str:
    from lion_nb.operations.instruction import build_instruction

    port = BranchPort.of(branch)
    model = chat_param.imodel or port.chat_model
    ins = build_instruction(port, instruction, chat_param)
    request = ModelRequest(
        messages=compile_messages([*port.history(chat_param.progression), ins]),
        tools=chat_param.tool_schemas or None,
        tool_choice=chat_param.tool_choice,
        response_schema=ins.response_schema,
        response_name=getattr(chat_param.response_format, "__name__", "response"),
        options=dict(chat_param.imodel_kw or {}),
    )
    response_id = uuid.uuid4()
    try:
        result = await model.complete(request, port.stream(response_id))
    except LionError:
        raise
    except Exception as exc:  # an unclassified failure is still a FAILED call
        raise ExecutionError(f"{model_label(model)} call failed: {exc!r}") from exc
    metadata: dict[str, Any] = {"model": result.model or model_label(model)}
    if usage := result.usage.as_dict():
        metadata["usage"] = usage
    if result.thinking:
        metadata["thinking"] = result.thinking
    if result.tool_calls:
        metadata["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in result.tool_calls
        ]
    if result.finish_reason:
        metadata["finish_reason"] = result.finish_reason
    if result.replayed:  # from a cassette: which one, which call (the views badge it)
        metadata["replayed"] = result.replayed
    res = AssistantResponse(
        id=response_id,
        response=result.text,
        metadata=metadata,
        sender=model_label(model),
        recipient=ins.sender,
    )
    if return_ins_res_message:
        return ins, res
    return res.response
