"""``chat``: one unrecorded model request (ADR D3), and ``request``, the one path every model
request takes (``communicate`` records through it).

``request`` builds the instruction, fits it into the context window (``operations.window``:
``fit_context``, or ``ContextWindowError`` before sending when it is known not to fit), emits
``CallStart`` (the instruction a view shows pending while the reply streams), streams the reply
through the port's ``MessageStream`` under the id it will be recorded with, and ends with
``CallEnd`` saying whether the reply was recorded. With ``records=True`` it records the
exchange; stopped (cancelled) with ``on_stop="record"`` it records the instruction and the
partial reply (``metadata["stopped"] = True``), else nothing (ADR-0021). ``continue_reply``
takes the same path for a reply the model continues from a given start (``fork_at_token``).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, overload

from lion_nb.compile import compile_messages
from lion_nb.errors import ContextWindowError, ExecutionError, LionError
from lion_nb.messages import AssistantResponse, Instruction, RoledMessage, TokenChoice
from lion_nb.models.base import ModelRequest, ModelResponse
from lion_nb.models.capabilities import remember
from lion_nb.models.probe import server_url
from lion_nb.operations.instruction import build_instruction
from lion_nb.operations.types import ChatParam
from lion_nb.operations.window import (
    cut_record,
    is_overflow,
    max_tokens_of,
    plan_context,
    reported_window,
    window_error,
    window_label,
)
from lion_nb.port.branch_port import BranchPort
from lion_nb.signals import CallEnd, CallStart, MessageStream
from lion_nb.tokens import encode_tokens_delta

if TYPE_CHECKING:
    from lion_nb.models.imodel import iModel
    from lion_nb.operations.window import ContextPlan


def model_label(model: Any) -> str:
    return f"{model.provider_name}/{model.model}" if model.model else model.provider_name


@overload
async def chat(
    branch: BranchPort,
    instruction: Any,
    chat_param: ChatParam,
    return_ins_res_message: Literal[False] = False,
) -> str: ...
@overload
async def chat(
    branch: BranchPort,
    instruction: Any,
    chat_param: ChatParam,
    return_ins_res_message: Literal[True],
) -> tuple[Instruction, AssistantResponse]: ...


async def chat(
    branch: BranchPort,
    instruction: Any,
    chat_param: ChatParam,
    return_ins_res_message: bool = False,
) -> tuple[Instruction, AssistantResponse] | str:
    ins, res = await request(BranchPort.of(branch), instruction, chat_param)
    if return_ins_res_message:
        return ins, res
    return res.response


async def request(
    port: BranchPort, instruction: Any, chat_param: ChatParam, *, records: bool = False
) -> tuple[Instruction, AssistantResponse]:
    """One model request; with ``records`` the exchange is recorded (see the module)."""
    model = chat_param.imodel or port.chat_model
    ins = build_instruction(port, instruction, chat_param)
    history = port.history(chat_param.progression)
    await _learn_server(model)
    ins, sent, plan = _fit(history, ins, model, chat_param)
    req = ModelRequest(
        messages=compile_messages([*sent, ins], thinking_blocks=model.spec.thinking_blocks),
        tools=chat_param.tool_schemas or None,
        tool_choice=chat_param.tool_choice,
        response_schema=ins.response_schema,
        response_name=getattr(chat_param.response_format, "__name__", "response"),
        options=dict(chat_param.imodel_kw or {}),
    )
    call = _Call(port, model, chat_param, plan, sent, ins, records=records, new_instruction=True)
    return ins, await _send(call, req)


async def continue_reply(
    port: BranchPort,
    prefix: str,
    prefix_tokens: list[TokenChoice],
    chat_param: ChatParam,
    *,
    metadata: dict[str, Any] | None = None,
) -> AssistantResponse:
    """The model continues a reply begun with ``prefix`` (``ModelRequest.prefix``; its tokens
    ``prefix_tokens``) after the branch's messages, on ``request``'s path: the window fit (the
    prefix counts as the turn to come), ``CallStart`` (``instruction=None``: no new one) and
    ``CallEnd``, thinking blocks. The reply streams prefix first and is recorded, prefix
    first, with ``metadata`` added; stopped, as ``chat_param.on_stop`` says."""
    model = chat_param.imodel or port.chat_model
    history = port.history(chat_param.progression)
    ins = next((m for m in reversed(history) if isinstance(m, Instruction)), None)
    await _learn_server(model)
    sent, plan, cut = _fit_history(history, prefix, model, chat_param)
    req = ModelRequest(
        messages=compile_messages(sent, thinking_blocks=model.spec.thinking_blocks),
        options=dict(chat_param.imodel_kw or {}),
        prefix=prefix or None,  # no prefix at all: a plain new reply, which every model gives
    )
    extra = {**(metadata or {}), **({"context_fit": cut} if cut is not None else {})}
    reply_to = ins or Instruction()
    call = _Call(port, model, chat_param, plan, sent, reply_to, records=True, prefix=prefix)
    call.prefix_tokens, call.metadata = prefix_tokens, extra
    return await _send(call, req)


@dataclass(slots=True)
class _Call:
    """One request on its way: what ``_send`` needs besides the ``ModelRequest``."""

    port: BranchPort
    model: iModel
    chat_param: ChatParam
    plan: ContextPlan | None
    sent: list[RoledMessage]  # the history sent (the instruction apart)
    ins: Instruction  # what the reply answers
    records: bool
    new_instruction: bool = False  # shown pending at CallStart and recorded with the reply
    prefix: str = ""  # the reply's given start (``continue_reply``)
    prefix_tokens: list[TokenChoice] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)  # added to the recorded reply


async def _send(call: _Call, req: ModelRequest) -> AssistantResponse:
    """Send ``req`` between ``CallStart`` and ``CallEnd``, streaming under the reply's id."""
    port, model, chat_param = call.port, call.model, call.chat_param
    response_id = uuid.uuid4()
    stream = port.stream(response_id)
    shown = call.ins if call.new_instruction else None
    port.emit(
        CallStart(
            branch_id=port.id, message_id=response_id, instruction=shown, records=call.records
        )
    )
    if call.prefix:  # the reply's start, as a view will show the whole reply
        stream("text", call.prefix)
        if req.options.get("logprobs") is not None:
            stream("tokens", encode_tokens_delta(call.prefix_tokens))
    outcome: Literal["done", "stopped", "failed"] = "failed"
    recorded = False
    try:
        started = time.perf_counter()
        try:
            result = await model.complete(req, stream)
        except (asyncio.CancelledError, KeyboardInterrupt):  # Stop, or Kernel -> Interrupt
            outcome = "stopped"
            recorded = _record_stopped(call, response_id, stream)
            raise
        except ContextWindowError:
            raise
        except LionError as exc:
            if _overflow(exc):  # the provider's words are in the message and the cause
                plan = _replan(call, exc)
                raise _window_error(plan, model, chat_param, exc) from exc
            raise
        except Exception as exc:  # an unclassified failure is still a FAILED call
            raise ExecutionError(f"{model_label(model)} call failed: {exc!r}") from exc
        res = _reply(call, response_id, result, time.perf_counter() - started)
        if call.records:
            if call.new_instruction:
                port.record(call.ins)
            port.record(res)
            recorded = True
        outcome = "done"
        return res
    finally:
        port.emit(
            CallEnd(branch_id=port.id, message_id=response_id, recorded=recorded, outcome=outcome)
        )


def _record_stopped(call: _Call, response_id: uuid.UUID, stream: MessageStream) -> bool:
    """A stopped recorded exchange keeps what ``on_stop`` says; True when it was recorded."""
    if not (call.records and call.chat_param.on_stop == "record"):
        return False
    if call.new_instruction:
        call.port.record(call.ins)
    if stream:
        partial = _partial(response_id, stream, call.ins, call.model)
        call.port.record(_with_metadata(partial, call.metadata))
    return True


def _reply(
    call: _Call, response_id: uuid.UUID, result: ModelResponse, took: float
) -> AssistantResponse:
    if call.prefix:  # the continuation follows the given start
        result.text = call.prefix + result.text
        if result.tokens is not None:
            result.tokens = call.prefix_tokens + result.tokens
    res = _response(response_id, result, call.ins, call.model, took)
    return _with_metadata(res, call.metadata)


def _with_metadata(message: AssistantResponse, metadata: dict[str, Any]) -> AssistantResponse:
    if not metadata:
        return message
    return message.model_copy(update={"metadata": {**message.metadata, **metadata}})


async def _learn_server(model: Any) -> None:
    """Ask the model's server what it can do before fitting (once per server: llama-server
    says its slot's window; cheap afterwards), so the request fits the slot, not the model."""
    capabilities = getattr(model, "capabilities", None)
    if capabilities is not None:
        await capabilities()


def _replan(call: _Call, exc: BaseException) -> ContextPlan | None:
    """A server that named its window in its refusal (llama-server: one slot's) is taken at
    its word, for the next request of every model on it and for the error's figures."""
    window = reported_window(exc)
    url = server_url(call.model) if window is not None else None
    if not url or (call.plan is not None and call.plan.window == window):
        return call.plan
    remember(url, slot_window=window)
    turn = call.ins if call.new_instruction else call.prefix
    max_tokens = max_tokens_of(call.model, call.chat_param.imodel_kw)
    return plan_context(
        call.sent, call.model, instruction=turn, max_tokens=max_tokens, window=window
    )


def _overflow(exc: BaseException) -> bool:
    return is_overflow(exc)


def _window_error(
    plan: ContextPlan | None, model: iModel, chat_param: ChatParam, cause: BaseException | None
) -> ContextWindowError:
    label = window_label(model_label(model), model, plan.window if plan else None)
    err = window_error(plan, label, fitted=chat_param.fit_context, cause=cause)
    err.provider_error = cause
    return err


def _fit(
    history: list[RoledMessage], ins: Instruction, model: iModel, chat_param: ChatParam
) -> tuple[Instruction, list[RoledMessage], ContextPlan | None]:
    """The instruction and the history to send: everything, or with ``fit_context`` the
    most recent turns that fit; a request known not to fit raises ``ContextWindowError``."""
    sent, plan, cut = _fit_history(history, ins, model, chat_param)
    if cut is None:
        return ins, sent, plan
    metadata = {**ins.metadata, "context_fit": cut}
    return ins.model_copy(update={"metadata": metadata}), sent, plan


def _fit_history(
    history: list[RoledMessage], turn: Instruction | str, model: iModel, chat_param: ChatParam
) -> tuple[list[RoledMessage], ContextPlan | None, dict[str, Any] | None]:
    """The history to send before ``turn`` (the instruction, or a reply's given start), its
    plan, and the record of what was cut (None when nothing was)."""
    window = chat_param.context_window or model.context_window
    if window is None or model.is_cli:
        return history, None, None
    plan = plan_context(
        history,
        model,
        instruction=turn,
        max_tokens=max_tokens_of(model, chat_param.imodel_kw),
        window=window,
    )
    if not chat_param.fit_context:
        if plan.overflows:
            raise _window_error(plan, model, chat_param, None)
        return history, plan, None
    if not plan.fits:
        raise _window_error(plan, model, chat_param, None)
    if plan.progression is None:
        return history, plan, None
    keep = set(plan.progression)
    return [m for m in history if m.id in keep], plan, cut_record(plan, history)


def _response(
    response_id: uuid.UUID, result: ModelResponse, ins: Instruction, model: iModel, took: float
) -> AssistantResponse:
    metadata: dict[str, Any] = {"model": result.model or model_label(model)}
    if usage := result.usage.as_dict():
        metadata["usage"] = usage
    if result.thinking:
        metadata["thinking"] = result.thinking
    if result.thinking_blocks:  # signed: sent back in a tool loop (compile_messages)
        metadata["thinking_blocks"] = result.thinking_blocks
    if result.tool_calls:
        metadata["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in result.tool_calls
        ]
    if result.finish_reason:
        metadata["finish_reason"] = result.finish_reason
    if result.replayed:  # from a cassette: which one, which call (the views badge it)
        metadata["replayed"] = result.replayed
    metadata["latency_ms"] = round(took * 1000, 1)  # the request itself (compare shows it)
    return AssistantResponse(
        id=response_id,
        response=result.text,
        tokens=result.tokens,
        metadata=metadata,
        sender=model_label(model),
        recipient=ins.sender,
    )


def _partial(
    response_id: uuid.UUID, stream: MessageStream, ins: Instruction, model: iModel
) -> AssistantResponse:
    """What a stopped reply streamed, under the id it streamed with."""
    label = model_label(model)
    metadata: dict[str, Any] = {"model": label, "stopped": True}
    if thinking := stream.text("thinking"):
        metadata["thinking"] = thinking
    text = stream.text("text")
    tokens = stream.tokens()
    if tokens is not None and "".join(t.text for t in tokens) != text:
        tokens = None  # stopped between a text delta and its tokens: the text is what counts
    return AssistantResponse(
        id=response_id,
        response=text,
        tokens=tokens,
        metadata=metadata,
        sender=label,
        recipient=ins.sender,
    )
