"""``act``: run the tool calls a model asked for, recording each call and its result.

``act`` has no run lifecycle of its own (it runs inside ``operate``/``ReAct`` or is called
directly as a plain recorded step), and returns one ``ActionResponseModel`` per request, in the
order given.

Cross-link: an ActionRequest is recorded with a pre-generated ``action_response_id``; its
ActionResponse is then recorded under exactly that id and carries ``action_request_id``. Both
messages stay immutable values, each names the other, and a view can show a call as pending
before its response exists. (A request that was already recorded without a link, e.g. by a
caller, is answered by a response that links back through ``action_request_id`` only.)

Order: with ``strategy="concurrent"`` every request is recorded first, in the order given (the
model asked for them together), the calls run together and each response is recorded as its
call returns. With ``"sequential"`` it is request, call, response, one call at a time, so a
batch that stops early never leaves a request without its response.

Failures: an unknown tool name, arguments that do not fit the tool's signature and a tool that
raises become an ActionResponse with ``is_error=True`` whose output is the error text, when
``suppress_errors`` (the model sees the error and can correct itself). Otherwise an unknown
tool or invalid arguments raise ``ValueError`` before anything is recorded or run, and a tool
that raises has its error response recorded and then its exception re-raised (after the other
calls of a concurrent batch finished). A cancelled batch records an error response for each
call still open, so the history stays a valid tool-call transcript.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
import uuid
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from lion_nb.messages import ActionRequest, ActionResponse
from lion_nb.models.base import ToolCall
from lion_nb.operations.fields import ActionResponseModel
from lion_nb.port.branch_port import BranchPort

if TYPE_CHECKING:
    from lion_nb.port.tools import Tool

SOURCE = "act"
"""``ActionResponse.metadata["source"]`` of results executed here (not by a CLI agent)."""


def _arguments(value: Any, function: str) -> dict[str, Any]:
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"arguments for {function!r} are not valid JSON: {exc}") from None
    if isinstance(value, BaseModel):
        value = value.model_dump()
    if not isinstance(value, dict):
        raise ValueError(f"arguments for {function!r} must be an object, not {value!r}")
    return value


def as_action_request(item: Any) -> ActionRequest:
    """Normalise one requested call: an ActionRequest (kept as is), a ``ToolCall``, a dict
    (``{"function", "arguments"}``, ``{"name", "arguments", "id"}`` or the chat-completions
    ``{"id", "function": {"name", "arguments"}}``) or a model with ``function``/``arguments``."""
    if isinstance(item, ActionRequest):
        return item
    function: Any
    arguments: Any
    call_id: Any = None
    if isinstance(item, ToolCall):
        function, arguments, call_id = item.name, item.arguments, item.id
    elif isinstance(item, dict):
        function = item.get("function", item.get("name"))
        arguments = item.get("arguments")
        call_id = item.get("call_id", item.get("id"))
        if isinstance(function, dict):  # chat-completions wire shape
            arguments = function.get("arguments", arguments)
            function = function.get("name")
    elif isinstance(item, BaseModel) and hasattr(item, "function"):
        function, arguments = item.function, getattr(item, "arguments", None)
        call_id = getattr(item, "call_id", None)
    else:
        raise TypeError(
            "an action request is a dict with 'function' and 'arguments', an ActionRequest, or a "
            f"model with function/arguments fields; got {type(item).__name__}"
        )
    if not isinstance(function, str) or not function:
        raise ValueError(f"an action request needs a function name; got {item!r}")
    return ActionRequest(
        function=function,
        arguments=_arguments(arguments, function),
        call_id=str(call_id) if call_id is not None else None,
        recipient=function,
    )


@dataclasses.dataclass(slots=True)
class _Call:
    request: ActionRequest
    recorded: bool  # the request is already in the branch
    response_id: uuid.UUID
    tool: Tool | None = None
    kwargs: dict[str, Any] | None = None
    problem: Exception | None = None  # unknown tool / invalid arguments: not run
    answered: bool = False


def _prepare(port: BranchPort, item: Any) -> _Call:
    request = as_action_request(item)
    recorded = request in port.messages
    response_id = request.action_response_id
    if response_id is None or response_id in port.messages:
        response_id = uuid.uuid4()
        if not recorded:  # not yet a recorded value: the link can still be part of it
            request = request.model_copy(update={"action_response_id": response_id})
    call = _Call(request=request, recorded=recorded, response_id=response_id)
    registry = port.tools
    tool = registry.get(request.function)
    if tool is None:
        known = ", ".join(registry.names) or "none"
        call.problem = ValueError(f"unknown tool {request.function!r} (available: {known})")
        return call
    try:
        call.kwargs = tool.validate(request.arguments)
    except ValueError as exc:
        call.problem = ValueError(f"invalid arguments for tool {request.function!r}: {exc}")
        call.problem.__cause__ = exc
    call.tool = tool
    return call


async def _record_request(port: BranchPort, call: _Call) -> None:
    if not call.recorded:
        port.record(call.request)
        call.recorded = True


async def _record_response(
    port: BranchPort, call: _Call, output: Any, *, is_error: bool, duration_ms: float | None = None
) -> None:
    meta: dict[str, Any] = {"source": SOURCE}
    if duration_ms is not None:
        meta["duration_ms"] = round(duration_ms, 3)
    req = call.request
    port.record(
        ActionResponse(
            id=call.response_id,
            function=req.function,
            arguments=req.arguments,
            # the history must stay JSON (snapshots, exports); the caller gets the raw value
            output=to_jsonable_python(output, fallback=repr),
            is_error=is_error,
            call_id=req.call_id,
            action_request_id=req.id,
            sender=req.function,
            metadata=meta,
        )
    )
    call.answered = True


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


async def _execute(
    port: BranchPort, call: _Call, limit: float | None
) -> tuple[ActionResponseModel, BaseException | None]:
    req = call.request
    error: BaseException | None = call.problem
    output: Any = None
    started = time.perf_counter()
    if error is None:
        assert call.tool is not None
        try:
            async with asyncio.timeout(limit):
                output = await call.tool.invoke(call.kwargs)
        except TimeoutError as exc:
            error = TimeoutError(f"tool {req.function!r} did not return within {limit:g} s")
            error.__cause__ = exc
        except Exception as exc:  # a tool's failure is data for the model, see module doc
            error = exc
    elapsed = (time.perf_counter() - started) * 1000.0
    if error is not None:
        output = _error_text(error)
    await _record_response(port, call, output, is_error=error is not None, duration_ms=elapsed)
    model = ActionResponseModel(
        function=req.function,
        arguments=req.arguments,
        output=output,
        is_error=error is not None,
        call_id=req.call_id,
    )
    return model, error


async def _close_open_calls(port: BranchPort, calls: list[_Call]) -> None:
    for call in calls:
        if call.recorded and not call.answered:
            await _record_response(port, call, "cancelled before the tool returned", is_error=True)


async def act(
    branch: BranchPort,
    action_request: Any,
    *,
    strategy: Literal["concurrent", "sequential"] = "concurrent",
    suppress_errors: bool = True,
    action_timeout: float | None = None,
) -> list[ActionResponseModel]:
    """Run one requested call or a list of them. ``action_timeout``: seconds each call may take
    (a sync tool's thread cannot be killed; its result is then ignored)."""
    if strategy not in ("concurrent", "sequential"):
        raise ValueError(f"strategy must be 'concurrent' or 'sequential', not {strategy!r}")
    port = BranchPort.of(branch)
    items = list(action_request) if isinstance(action_request, list | tuple) else [action_request]
    calls = [_prepare(port, item) for item in items]
    if not suppress_errors:
        for call in calls:
            if call.problem is not None:
                raise call.problem
    results: list[ActionResponseModel] = []
    errors: list[BaseException] = []
    try:
        if strategy == "sequential":
            for call in calls:
                await _record_request(port, call)
                model, error = await _execute(port, call, action_timeout)
                results.append(model)
                if error is not None and not suppress_errors:
                    raise error
        else:
            for call in calls:
                await _record_request(port, call)
            outcomes = await asyncio.gather(*(_execute(port, c, action_timeout) for c in calls))
            for model, error in outcomes:
                results.append(model)
                if error is not None:
                    errors.append(error)
    except asyncio.CancelledError:
        await _close_open_calls(port, calls)
        raise
    if errors and not suppress_errors:
        raise errors[0]
    return results
