"""``operate``: one structured turn with optional tool calls, through one Middle (ADR D5).

Steps: compose the response schema (the caller's ``response_format`` plus ``reason`` and
``action_requests``, see ``fields``), call the selected Middle exactly once (the ``middle``
given; else ``run_and_collect`` for a CLI model or when persistence is asked; else
``communicate``), validate what it returned, run the actions the model requested through
``act``, and return the result with their responses in ``action_responses``.

Choices where ADR-0021 is silent (ADR-0022 owns the coordinator):

* The Middle records the exchange (and clears first when asked); operate appends nothing
  itself except the tool calls ``act`` records.
* operate validates the exchange's reply itself, so the Middle gets no ParseParam. This lets a
  reply that only carries native tool calls skip the parse-repair turns its empty text would
  otherwise trigger.
* Requested actions are the structured reply's ``action_requests`` plus the provider's native
  tool calls (``AssistantResponse.metadata["tool_calls"]`` of messages this exchange recorded,
  minus calls already answered in the branch). Native calls run even when the reply text does
  not validate: the model asked for them explicitly. When the text does not validate but the
  model called tools natively, the result is built from the schema's defaults if it has them.
* ``tools=`` (names, functions or Tools) implies ``actions=True``; functions are registered on
  the branch so the calls can be executed.
* A CLI agent cannot be handed Python tools natively: their schemas travel in the instruction's
  context, as do results ``act`` recorded since the agent's last turn (the agent keeps its own
  history and never saw them).
* A model whose server ignores native tools (``capabilities().native_tools is False``) is sent
  no tools either: the response schema (shown in the instruction, enforced where the server
  can) constrains ``action_requests`` to them (``operations.own_actions``).
* A per-call ``chat_model`` applies to this call only: the exchange gets a port for this call
  (``BranchPort.for_call``), through which ``run`` cannot adopt it as the branch's model
  (ADR D3's adoption belongs to ``Branch.run``), so nothing has to be put back.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ValidationError

from lion_nb.errors import ConfigurationError, ParseError
from lion_nb.messages import ActionRequest, ActionResponse, AssistantResponse
from lion_nb.operations.act import SOURCE, act
from lion_nb.operations.communicate import communicate
from lion_nb.operations.fields import ActionRequestModel, compose, with_action_responses
from lion_nb.operations.instruction import context_list as _context_list
from lion_nb.operations.jsonx import extract_json
from lion_nb.operations.own_actions import ignores_native_tools, own_request_schema
from lion_nb.operations.parse import parse
from lion_nb.operations.run import run_and_collect
from lion_nb.operations.types import ChatParam, ParseParam, RunParam
from lion_nb.port.branch_port import BranchPort

if TYPE_CHECKING:
    from lion_nb.models.imodel import iModel
    from lion_nb.operations.types import Middle

HandleValidation = Literal["raise", "return_value", "return_none"]
_CHAT_FIELDS = (
    "sender",
    "recipient",
    "progression",
    "images",
    "image_detail",
    "tool_choice",
    "plain_content",
    "include_token_usage_to_model",
    "on_stop",
    "fit_context",
    "context_window",
)
_FAILED = object()  # the reply did not validate


def _model_of(port: BranchPort, chat_model: iModel | None) -> iModel | None:
    if chat_model is not None:
        return chat_model
    try:
        return port.chat_model
    except ConfigurationError:  # no model at all: a custom Middle may not need one
        return None


def _model_is_cli(port: BranchPort, chat_model: iModel | None) -> bool:
    return bool(getattr(_model_of(port, chat_model), "is_cli", False))


def unseen_tool_results(port: BranchPort) -> list[dict[str, Any]]:
    """Results ``act`` recorded after the model's last turn (a CLI agent has not seen them)."""
    found: list[dict[str, Any]] = []
    for message in reversed(list(port.messages)):
        if not isinstance(message, ActionRequest | ActionResponse):
            break
        if isinstance(message, ActionResponse) and message.metadata.get("source") == SOURCE:
            found.append(
                {
                    "function": message.function,
                    "arguments": message.arguments,
                    "output": message.output,
                    "is_error": message.is_error,
                }
            )
    return found[::-1]


def _exchange_tool_calls(port: BranchPort, new_ids: set[Any]) -> tuple[bool, list[ActionRequest]]:
    """Whether this exchange's replies carried native tool calls, and those not yet answered
    in the branch (an adapter may have executed some itself)."""
    answered = {m.call_id for m in port.messages if isinstance(m, ActionRequest) and m.call_id}
    any_calls = False
    out: list[ActionRequest] = []
    for message in port.messages:
        if message.id not in new_ids or not isinstance(message, AssistantResponse):
            continue
        for call in message.metadata.get("tool_calls") or []:
            any_calls = True
            call_id = call.get("id")
            if call_id and call_id in answered:
                continue
            out.append(
                ActionRequest(
                    function=call["name"],
                    arguments=call.get("arguments") or {},
                    call_id=call_id,
                    sender=message.sender,
                    recipient=call["name"],
                )
            )
    return any_calls, out


async def _validate(
    port: BranchPort, raw: Any, fmt: Any, parse_model: iModel | None, retries: int
) -> Any:
    """``raw`` as ``fmt`` (a model class or a JSON-schema dict), or ``_FAILED``."""
    model_cls: type[BaseModel] | None = fmt if isinstance(fmt, type) else None
    if model_cls is not None and isinstance(raw, model_cls):
        return raw
    if isinstance(raw, BaseModel):
        raw = raw.model_dump()
    if isinstance(raw, dict):
        if model_cls is not None:
            try:
                return model_cls.model_validate(raw)
            except ValidationError:
                return _FAILED
        raw, retries = json.dumps(raw, default=str), 0
    if not isinstance(raw, str):
        return _FAILED
    param = ParseParam(response_format=fmt, imodel=parse_model, max_retries=retries)
    try:
        return await parse(port, raw, param)
    except ValueError:  # ParseError included
        return _FAILED


def _defaults_of(fmt: Any) -> Any:
    """An instance of ``fmt`` from its defaults alone, or ``_FAILED``."""
    if isinstance(fmt, dict):
        return {} if not fmt.get("required") else _FAILED
    try:
        return fmt.model_validate({})
    except ValidationError:
        return _FAILED


def _structured_requests(result: Any) -> list[ActionRequestModel]:
    found = result.get("action_requests") if isinstance(result, dict) else None
    if isinstance(result, BaseModel):
        found = getattr(result, "action_requests", None)
    out: list[ActionRequestModel] = []
    for item in found or []:
        req = item if isinstance(item, ActionRequestModel) else _as_model(item)
        if req is not None and req.function:
            out.append(req)
    return out


def _as_model(item: Any) -> ActionRequestModel | None:
    try:
        return ActionRequestModel.model_validate(
            item.model_dump() if isinstance(item, BaseModel) else item
        )
    except ValidationError:
        return None


def _declares_sequential(result: Any) -> bool:
    if isinstance(result, BaseModel):
        return (
            "action_strategy" in result.model_fields_set
            and getattr(result, "action_strategy", None) == "sequential"
        )
    return isinstance(result, dict) and result.get("action_strategy") == "sequential"


@dataclass(slots=True)
class _Plan:
    """What ``operate``'s keywords decide before the exchange."""

    chat_param: ChatParam
    exchange: Any  # the Middle
    builtin: bool  # communicate / run_and_collect (they take the port)
    request_fmt: Any
    response_type: Any
    actions: bool
    retries: int
    strategy: Literal["concurrent", "sequential"]
    action_timeout: float | None


def _retries(kwargs: dict[str, Any]) -> int:
    retries = kwargs.pop("num_parse_retries", 3)
    if retries > 5:
        warnings.warn(
            f"num_parse_retries={retries} is high; clamped to 5", UserWarning, stacklevel=5
        )
        retries = 5
    return retries


def _exchange_context(port: BranchPort, context: Any, schemas: list[Any], is_cli: bool) -> Any:
    """The instruction's context: a CLI agent gets the tool schemas and unseen results there."""
    items = _context_list(context)
    if is_cli:
        if schemas:
            items.append({"tools": schemas})
        if pending := unseen_tool_results(port):
            items.append({"tool_results": pending})
    return items or None


def _plan(
    port: BranchPort,
    *,
    guidance: Any,
    context: Any,
    chat_model: iModel | None,
    response_format: Any,
    actions: bool,
    reason: bool,
    tools: Any,
    middle: Middle | None,
    persist_kw: dict[str, Any],
    kwargs: dict[str, Any],
    own_actions: bool = False,
) -> _Plan:
    """Pop operate's own keywords from ``kwargs`` (the rest are model options), compose the
    schema, pick the parameter class and the Middle. ``own_actions``: the model ignores native
    tools (see the module doc)."""
    chat_kw = {k: kwargs.pop(k) for k in _CHAT_FIELDS if k in kwargs}
    extra_schemas = list(kwargs.pop("tool_schemas", None) or [])
    persist_kw["snapshot_dir"] = kwargs.pop("snapshot_dir", None)
    retries = _retries(kwargs)
    strategy = kwargs.pop("action_strategy", "concurrent")
    action_timeout = kwargs.pop("action_timeout", None)

    actions = bool(actions or (tools is not None and tools is not False))
    offered = port.tools.resolve(tools) if actions else []
    request_fmt, response_type = compose(response_format, reason=reason, actions=actions)
    schemas = [t.schema for t in offered] + extra_schemas
    is_cli = _model_is_cli(port, chat_model)
    persist = persist_kw["stream_persist"] or any(
        persist_kw[k] is not None for k in ("persist_dir", "snapshot_dir")
    )
    sent_fmt, own = request_fmt, own_actions and actions and not is_cli
    if own:
        sent_fmt = own_request_schema(request_fmt, offered, chat_kw.pop("tool_choice", None))
    param_kw: dict[str, Any] = dict(
        guidance=guidance,
        context=_exchange_context(port, context, schemas, is_cli),
        response_format=sent_fmt,
        tool_schemas=None if own else schemas or None,
        imodel=chat_model,
        imodel_kw=kwargs or None,
        **chat_kw,
    )
    streamed = is_cli or persist
    chat_param = RunParam(**param_kw, **persist_kw) if streamed else ChatParam(**param_kw)
    exchange: Any = middle
    if exchange is None:
        exchange = run_and_collect if streamed else communicate
    return _Plan(
        chat_param=chat_param,
        exchange=exchange,
        builtin=middle is None,
        request_fmt=request_fmt,
        response_type=response_type,
        actions=actions,
        retries=retries,
        strategy=strategy,
        action_timeout=action_timeout,
    )


async def _interpret_reply(
    port: BranchPort, plan: _Plan, raw: Any, tool_turn: bool, parse_model: iModel | None
) -> Any:
    """The exchange's reply validated against the composed schema, or ``_FAILED``."""
    text_has_json = True
    if tool_turn and isinstance(raw, str):
        try:
            extract_json(raw)
        except ValueError:
            text_has_json = False  # a tool-calling turn: nothing to parse, nothing to repair
    result: Any = _FAILED
    if raw is not None and text_has_json:
        retries = 0 if tool_turn else plan.retries
        result = await _validate(port, raw, plan.request_fmt, parse_model, retries)
    if result is _FAILED and tool_turn:
        result = _defaults_of(plan.request_fmt)
    return result


def _merge_requests(result: Any, native: list[ActionRequest]) -> tuple[Any, list[Any]]:
    """The calls to run (native ones first, then structured ones not already among them),
    and ``result`` with every requested call in its ``action_requests``."""
    seen = {(r.function, repr(r.arguments)) for r in native}
    structured = [
        r for r in _structured_requests(result) if (r.function, repr(r.arguments)) not in seen
    ]
    requests: list[Any] = list(native)
    requests += [{"function": r.function, "arguments": r.arguments} for r in structured]
    merged = [
        ActionRequestModel(function=r.function, arguments=r.arguments) for r in native
    ] + structured
    if isinstance(result, BaseModel):
        return result.model_copy(update={"action_requests": merged}), requests
    return {**result, "action_requests": [r.model_dump() for r in merged]}, requests


def _unparsed(plan: _Plan, raw: Any, handle_validation: HandleValidation) -> Any:
    if handle_validation == "raise":
        name = getattr(plan.request_fmt, "__name__", "the requested schema")
        raise ParseError(
            f"could not parse the response into {name}",
            target=plan.request_fmt,
            raw=raw if isinstance(raw, str) else repr(raw),
        )
    return None if handle_validation == "return_none" else raw


async def operate(
    branch: BranchPort,
    *,
    instruction: Any = None,
    guidance: Any = None,
    context: Any = None,
    chat_model: iModel | None = None,
    parse_model: iModel | None = None,
    response_format: type[BaseModel] | BaseModel | dict | None = None,
    actions: bool = False,
    reason: bool = False,
    tools: Any = None,
    invoke_actions: bool = True,
    skip_validation: bool = False,
    handle_validation: HandleValidation = "return_value",
    middle: Middle | None = None,
    stream_persist: bool = False,
    persist_dir: str | None = None,
    clear_messages: bool = False,
    **kwargs: Any,
) -> Any:
    """One structured turn. Extra keywords: the ChatParam fields (sender, recipient,
    progression, images, image_detail, tool_choice, plain_content,
    include_token_usage_to_model, on_stop, fit_context, context_window), ``tool_schemas`` (extra raw schemas), ``snapshot_dir``,
    ``num_parse_retries`` (3; clamped to 5), ``action_strategy`` ("concurrent"),
    ``action_timeout`` (seconds per tool call); anything else is a model request option
    (temperature, max_tokens, ...)."""
    if handle_validation not in ("raise", "return_value", "return_none"):
        raise ValueError(
            f"handle_validation must be raise/return_value/return_none, not {handle_validation!r}"
        )
    port = BranchPort.of(branch)
    own_actions = False
    if middle is None and (actions or tools not in (None, False)):
        own_actions = await ignores_native_tools(_model_of(port, chat_model))
    plan = _plan(
        port,
        guidance=guidance,
        context=context,
        chat_model=chat_model,
        response_format=response_format,
        actions=actions,
        reason=reason,
        tools=tools,
        middle=middle,
        persist_kw={"stream_persist": stream_persist, "persist_dir": persist_dir},
        kwargs=kwargs,
        own_actions=own_actions,
    )
    before = set(port.messages.progression)
    # a per-call chat_model applies to this call only: the port for the exchange never lets
    # run() adopt it; a custom Middle is user code and gets the branch itself
    target = port.for_call(chat_model=chat_model) if plan.builtin else port.branch
    raw = await plan.exchange(
        target,
        instruction,
        plan.chat_param,
        None,
        clear_messages=clear_messages,
        skip_validation=skip_validation,
    )
    if skip_validation:
        return raw
    tool_turn = False
    native: list[ActionRequest] = []
    if plan.actions:
        new_ids = {i for i in port.messages.progression if i not in before}
        tool_turn, native = _exchange_tool_calls(port, new_ids)
    if plan.request_fmt is None:
        return raw
    result = await _interpret_reply(port, plan, raw, tool_turn, parse_model)
    requests: list[Any] = list(native)
    if plan.actions and result is not _FAILED:
        result, requests = _merge_requests(result, native)
    responses = []
    if plan.actions and invoke_actions and requests:
        strategy = plan.strategy
        if strategy == "concurrent" and _declares_sequential(result):
            strategy = "sequential"  # a turn may narrow its own batch, never widen it
        responses = await act(
            port,
            requests,
            strategy=strategy,
            suppress_errors=True,
            action_timeout=plan.action_timeout,
        )
    if result is _FAILED:
        return _unparsed(plan, raw, handle_validation)
    if not plan.actions:
        return result
    if isinstance(result, BaseModel):
        return with_action_responses(result, plan.response_type, responses)
    return {**result, "action_responses": [r.model_dump() for r in responses]}
