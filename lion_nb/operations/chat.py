"""``chat``: one unrecorded model request (ADR D3), and ``request``, the one path every model
request takes (``communicate`` records through it).

``request`` builds the instruction, fits it into the context window (``operations.window``:
``fit_context``, or ``ContextWindowError`` before sending when it is known not to fit), emits
``CallStart`` (the instruction a view shows pending while the reply streams), streams the reply
through the port's ``MessageStream`` under the id it will be recorded with, and ends with
``CallEnd`` saying whether the reply was recorded. With ``records=True`` it records the
exchange; stopped (cancelled) with ``on_stop="record"`` it records the instruction and the
partial reply (``metadata["stopped"] = True``), else nothing (ADR-0021).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import TYPE_CHECKING, Any, Literal, overload

from lion_nb.compile import compile_messages
from lion_nb.errors import ContextWindowError, ExecutionError, LionError
from lion_nb.messages import AssistantResponse, Instruction, RoledMessage
from lion_nb.models.base import ModelRequest, ModelResponse
from lion_nb.operations.types import ChatParam
from lion_nb.session.port import BranchPort
from lion_nb.signals import CallEnd, CallStart, MessageStream

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
    from lion_nb.operations.instruction import build_instruction

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
    response_id = uuid.uuid4()
    stream = port.stream(response_id)
    port.emit(
        CallStart(branch_id=port.id, message_id=response_id, instruction=ins, records=records)
    )
    outcome: Literal["done", "stopped", "failed"] = "failed"
    recorded = False
    try:
        started = time.perf_counter()
        try:
            result = await model.complete(req, stream)
        except (asyncio.CancelledError, KeyboardInterrupt):  # Stop, or Kernel -> Interrupt
            outcome = "stopped"
            if records and chat_param.on_stop == "record":
                port.record(ins)
                if stream:
                    port.record(_partial(response_id, stream, ins, model))
                recorded = True
            raise
        except ContextWindowError:
            raise
        except LionError as exc:
            if _overflow(exc):  # the provider's words are in the message and the cause
                plan = _replan(plan, [*sent, ins], model, chat_param, exc)
                raise _window_error(plan, model, chat_param, exc) from exc
            raise
        except Exception as exc:  # an unclassified failure is still a FAILED call
            raise ExecutionError(f"{model_label(model)} call failed: {exc!r}") from exc
        res = _response(response_id, result, ins, model, time.perf_counter() - started)
        if records:
            port.record(ins)
            port.record(res)
            recorded = True
        outcome = "done"
        return ins, res
    finally:
        port.emit(
            CallEnd(branch_id=port.id, message_id=response_id, recorded=recorded, outcome=outcome)
        )


async def _learn_server(model: Any) -> None:
    """Ask the model's server what it can do before fitting (once per server: llama-server
    says its slot's window; cheap afterwards), so the request fits the slot, not the model."""
    capabilities = getattr(model, "capabilities", None)
    if capabilities is not None:
        await capabilities()


def _replan(
    plan: ContextPlan | None,
    sent: list[RoledMessage],
    model: Any,
    chat_param: ChatParam,
    exc: BaseException,
) -> ContextPlan | None:
    """A server that named its window in its refusal (llama-server: one slot's) is taken at
    its word, for the next request of every model on it and for the error's figures."""
    from lion_nb.models.capabilities import remember
    from lion_nb.models.probe import server_url
    from lion_nb.operations.window import max_tokens_of, plan_context, reported_window

    window = reported_window(exc)
    url = server_url(model) if window is not None else None
    if not url or (plan is not None and plan.window == window):
        return plan
    remember(url, slot_window=window)
    *history, ins = sent
    assert isinstance(ins, Instruction)
    max_tokens = max_tokens_of(model, chat_param.imodel_kw)
    return plan_context(history, model, instruction=ins, max_tokens=max_tokens, window=window)


def _overflow(exc: BaseException) -> bool:
    from lion_nb.operations.window import is_overflow

    return is_overflow(exc)


def _window_error(
    plan: ContextPlan | None, model: iModel, chat_param: ChatParam, cause: BaseException | None
) -> ContextWindowError:
    from lion_nb.operations.window import window_error, window_label

    label = window_label(model_label(model), model, plan.window if plan else None)
    err = window_error(plan, label, fitted=chat_param.fit_context, cause=cause)
    err.provider_error = cause
    return err


def _fit(
    history: list[RoledMessage], ins: Instruction, model: iModel, chat_param: ChatParam
) -> tuple[Instruction, list[RoledMessage], ContextPlan | None]:
    """The instruction and the history to send: everything, or with ``fit_context`` the
    most recent turns that fit; a request known not to fit raises ``ContextWindowError``."""
    from lion_nb.operations.window import cut_record, max_tokens_of, plan_context

    window = chat_param.context_window or model.context_window
    if window is None or model.is_cli:
        return ins, history, None
    plan = plan_context(
        history,
        model,
        instruction=ins,
        max_tokens=max_tokens_of(model, chat_param.imodel_kw),
        window=window,
    )
    if not chat_param.fit_context:
        if plan.overflows:
            raise _window_error(plan, model, chat_param, None)
        return ins, history, plan
    if not plan.fits:
        raise _window_error(plan, model, chat_param, None)
    if plan.progression is None:
        return ins, history, plan
    keep = set(plan.progression)
    metadata = {**ins.metadata, "context_fit": cut_record(plan, history)}
    return ins.model_copy(update={"metadata": metadata}), [m for m in history if m.id in keep], plan


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
