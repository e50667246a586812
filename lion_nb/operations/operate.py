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
* A per-call ``chat_model`` applies to this call only: ``run`` adopts a per-call CLI model as
  the branch's model (ADR D3), so operate puts the branch's own model back afterwards.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ValidationError

from lion_nb.errors import ConfigurationError, ParseError
from lion_nb.messages import ActionRequest, ActionResponse, AssistantResponse
from lion_nb.operations.act import SOURCE, act
from lion_nb.operations.fields import ActionRequestModel, compose, with_action_responses
from lion_nb.operations.instruction import context_list as _context_list
from lion_nb.operations.jsonx import extract_json
from lion_nb.operations.types import ChatParam, ParseParam, RunParam

if TYPE_CHECKING:
    from lion_nb.models.imodel import iModel
    from lion_nb.operations.types import Middle
    from lion_nb.session.branch import Branch

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
)
_FAILED = object()  # the reply did not validate


def _model_is_cli(branch: Branch, chat_model: iModel | None) -> bool:
    if chat_model is not None:
        return bool(getattr(chat_model, "is_cli", False))
    try:
        return bool(getattr(branch.chat_model, "is_cli", False))
    except ConfigurationError:  # no model at all: a custom Middle may not need one
        return False


def unseen_tool_results(branch: Branch) -> list[dict[str, Any]]:
    """Results ``act`` recorded after the model's last turn (a CLI agent has not seen them)."""
    found: list[dict[str, Any]] = []
    for message in reversed(list(branch.messages)):
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


def _exchange_tool_calls(branch: Branch, new_ids: set[Any]) -> tuple[bool, list[ActionRequest]]:
    """Whether this exchange's replies carried native tool calls, and those not yet answered
    in the branch (an adapter may have executed some itself)."""
    answered = {m.call_id for m in branch.messages if isinstance(m, ActionRequest) and m.call_id}
    any_calls = False
    out: list[ActionRequest] = []
    for message in branch.messages:
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
    branch: Branch, raw: Any, fmt: Any, parse_model: iModel | None, retries: int
) -> Any:
    """``raw`` as ``fmt`` (a model class or a JSON-schema dict), or ``_FAILED``."""
    from lion_nb.operations.parse import parse

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
        import json

        raw, retries = json.dumps(raw, default=str), 0
    if not isinstance(raw, str):
        return _FAILED
    param = ParseParam(response_format=fmt, imodel=parse_model, max_retries=retries)
    try:
        return await parse(branch, raw, param)
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


async def operate(
    branch: Branch,
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
    include_token_usage_to_model), ``tool_schemas`` (extra raw schemas), ``snapshot_dir``,
    ``num_parse_retries`` (3; clamped to 5), ``action_strategy`` ("concurrent"),
    ``action_timeout`` (seconds per tool call); anything else is a model request option
    (temperature, max_tokens, ...)."""
    if handle_validation not in ("raise", "return_value", "return_none"):
        raise ValueError(
            f"handle_validation must be raise/return_value/return_none, not {handle_validation!r}"
        )
    chat_kw = {k: kwargs.pop(k) for k in _CHAT_FIELDS if k in kwargs}
    extra_schemas = list(kwargs.pop("tool_schemas", None) or [])
    snapshot_dir = kwargs.pop("snapshot_dir", None)
    retries = kwargs.pop("num_parse_retries", 3)
    if retries > 5:
        warnings.warn(
            f"num_parse_retries={retries} is high; clamped to 5", UserWarning, stacklevel=3
        )
        retries = 5
    strategy = kwargs.pop("action_strategy", "concurrent")
    action_timeout = kwargs.pop("action_timeout", None)

    actions = bool(actions or (tools is not None and tools is not False))
    offered = branch.tools.resolve(tools) if actions else []
    request_fmt, response_type = compose(response_format, reason=reason, actions=actions)
    schemas = [t.schema for t in offered] + extra_schemas

    is_cli = _model_is_cli(branch, chat_model)
    context_items = _context_list(context)
    if is_cli:
        if schemas:
            context_items.append({"tools": schemas})
        if pending := unseen_tool_results(branch):
            context_items.append({"tool_results": pending})
    persist = stream_persist or persist_dir is not None or snapshot_dir is not None
    param_cls = RunParam if (is_cli or persist) else ChatParam
    param_kw: dict[str, Any] = dict(
        guidance=guidance,
        context=context_items or None,
        response_format=request_fmt,
        tool_schemas=schemas or None,
        imodel=chat_model,
        imodel_kw=kwargs or None,
        **chat_kw,
    )
    if param_cls is RunParam:
        param_kw.update(
            stream_persist=stream_persist, persist_dir=persist_dir, snapshot_dir=snapshot_dir
        )
    chat_param = param_cls(**param_kw)

    exchange: Any = middle
    if exchange is None:
        if is_cli or persist:
            from lion_nb.operations.run import run_and_collect as exchange
        else:
            from lion_nb.operations.communicate import communicate as exchange

    before = set(branch.progression)
    own_model = branch._chat_model  # restored below, see the module doc
    try:
        raw = await exchange(
            branch,
            instruction,
            chat_param,
            None,
            clear_messages=clear_messages,
            skip_validation=skip_validation,
        )
    finally:
        if chat_model is not None and branch._chat_model is not own_model:
            branch.chat_model = own_model  # type: ignore[assignment]
    if skip_validation:
        return raw

    tool_turn = False
    native: list[ActionRequest] = []
    if actions:
        new_ids = {i for i in branch.progression if i not in before}
        tool_turn, native = _exchange_tool_calls(branch, new_ids)
    if request_fmt is None:
        return raw

    result: Any = _FAILED
    text_has_json = True
    if tool_turn and isinstance(raw, str):
        try:
            extract_json(raw)
        except ValueError:
            text_has_json = False  # a tool-calling turn: nothing to parse, nothing to repair
    if raw is not None and text_has_json:
        result = await _validate(branch, raw, request_fmt, parse_model, 0 if tool_turn else retries)
    if result is _FAILED and tool_turn:
        result = _defaults_of(request_fmt)

    requests: list[Any] = list(native)
    if actions and result is not _FAILED:
        seen = {(r.function, repr(r.arguments)) for r in native}
        structured = [
            r for r in _structured_requests(result) if (r.function, repr(r.arguments)) not in seen
        ]
        requests += [{"function": r.function, "arguments": r.arguments} for r in structured]
        merged = [
            ActionRequestModel(function=r.function, arguments=r.arguments) for r in native
        ] + structured
        if isinstance(result, BaseModel):
            result = result.model_copy(update={"action_requests": merged})
        else:
            result = {**result, "action_requests": [r.model_dump() for r in merged]}

    responses = []
    if actions and invoke_actions and requests:
        if strategy == "concurrent" and _declares_sequential(result):
            strategy = "sequential"  # a turn may narrow its own batch, never widen it
        responses = await act(
            branch, requests, strategy=strategy, suppress_errors=True, action_timeout=action_timeout
        )

    if result is _FAILED:
        if handle_validation == "raise":
            name = getattr(request_fmt, "__name__", "the requested schema")
            raise ParseError(
                f"could not parse the response into {name}",
                target=request_fmt,
                raw=raw if isinstance(raw, str) else repr(raw),
            )
        return None if handle_validation == "return_none" else raw
    if actions:
        if isinstance(result, BaseModel):
            return with_action_responses(result, response_type, responses)
        return {**result, "action_responses": [r.model_dump() for r in responses]}
    return result
