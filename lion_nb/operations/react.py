"""``ReAct`` and ``ReActStream``: reason and act over rounds, then answer.

Round 1 is an analysis turn offered the branch's tools (or ``tools=``); while extensions are
allowed, budget remains and the last analysis asks for more (``extension_needed``), another
analysis round runs; a final turn answers (``Analysis.answer``, or the caller's
``response_format``). Each round is one ``operate`` call, so the model's requested actions are
executed and recorded between rounds. ``RoundStart``/``RoundEnd`` mark each round (with the
run's id) so a view can group reasoning, actions and observations per round.

Lifecycle (ADR D4): the facade wraps a whole ReAct in one RunStart/RunEnd (or RunFailed) through
``lion_nb.port.lifecycle.observed_run``/``observed_stream``; the rounds emit none and read
the run's id from ``current_run_id``.

A round whose reply was only native tool calls (no structured text, so the model could not say
``extension_needed``) counts as asking for another round: the model has not seen the results.

ReAct ends in an answer or says why not, never ``None`` (where ADR-0021 is silent): an answer
round (without ``response_format``) whose reply holds no non-empty ``answer`` — ``{"answer":
null}``, a cut ``'{'``, the schema echoed back — raises ``ReActError`` naming the round and what
the model sent, and so does an analysis round that called no tool although ``tool_choice``
forced one ("required" or a tool's name). The error ends that round (its ``RoundEnd`` carries
it: the rounds view shows "no answer: …") and the run (``RunFailed``); every round stays
recorded. A caller's ``response_format`` keeps ``handle_validation``'s contract instead.

Models that ignore native tools (``iModel.capabilities().native_tools is False``) get lion_nb's
own JSON action requests, constrained by a schema (``operations.own_actions``); there round 1
must call a tool unless ``tool_choice="auto"`` or ``"none"`` says otherwise.
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from lion_nb.errors import ConfigurationError, ReActError
from lion_nb.messages import AssistantResponse
from lion_nb.operations.instruction import check_response_format
from lion_nb.operations.interpret import interpret as rewrite
from lion_nb.operations.operate import operate
from lion_nb.operations.own_actions import ignores_native_tools
from lion_nb.operations.react_models import Analysis, AnswerRequired, ReActAnalysis
from lion_nb.operations.react_outcome import Check, forced_tool, no_answer, no_forced_call
from lion_nb.operations.types import ChatParam
from lion_nb.port.branch_port import BranchPort
from lion_nb.port.lifecycle import current_run_id
from lion_nb.signals import RoundEnd, RoundStart

if TYPE_CHECKING:
    from lion_nb.models.imodel import iModel
    from lion_nb.operations.types import Middle

MAX_EXTENSIONS_CAP = 100


# ----- rounds --------------------------------------------------------------------------------
def clamp_extensions(max_extensions: int | None) -> int:
    """None/zero/negative -> 0 (no extension rounds); above 100 -> UserWarning and 100."""
    if not max_extensions or max_extensions < 0:
        return 0
    if max_extensions > MAX_EXTENSIONS_CAP:
        warnings.warn(
            f"max_extensions={max_extensions} is above {MAX_EXTENSIONS_CAP}; clamped to "
            f"{MAX_EXTENSIONS_CAP}",
            UserWarning,
            stacklevel=4,
        )
        return MAX_EXTENSIONS_CAP
    return int(max_extensions)


def needs_extension(analysis: Any) -> bool:
    """Whether an analysis round asks for another round (see the module doc)."""
    if isinstance(analysis, BaseModel):
        if "extension_needed" in analysis.model_fields_set:
            return bool(getattr(analysis, "extension_needed", False))
        responses = getattr(analysis, "action_responses", None) or []
        return any(getattr(r, "call_id", None) for r in responses)
    if isinstance(analysis, dict):
        if "extension_needed" in analysis:
            return bool(analysis["extension_needed"])
        return any(r.get("call_id") for r in analysis.get("action_responses") or [])
    return False


def _model_or_none(port: BranchPort) -> iModel | None:
    try:
        return port.chat_model
    except ConfigurationError:  # a custom Middle may need none
        return None


def _from_instruct(instruct: Any, *given: Any) -> tuple[Any, Any, Any]:
    """``(instruction, guidance, context)``: the arguments, completed from lionagi's
    ``instruct`` (a dict or an object with those fields)."""
    if instruct is None:
        return given[0], given[1], given[2]
    if isinstance(instruct, BaseModel):
        instruct = instruct.model_dump()
    if not isinstance(instruct, dict):
        instruct = {"instruction": instruct}
    names = ("instruction", "guidance", "context")
    return tuple(
        value if value is not None else instruct.get(name)
        for name, value in zip(names, given, strict=True)
    )


def _as_text(instruction: Any) -> str:
    if instruction is None:
        return ""
    if isinstance(instruction, str):
        return instruction
    if isinstance(instruction, BaseModel):
        return instruction.model_dump_json()
    return json.dumps(instruction, ensure_ascii=False, default=str)


def _reply_since(port: BranchPort, before: set[Any]) -> str:
    """The text of the last reply recorded since ``before`` (what the model sent)."""
    for message in reversed(list(port.messages)):
        if message.id in before:
            break
        if isinstance(message, AssistantResponse):
            return message.response
    return ""


def _mark_reply(port: BranchPort, before: set[Any], problem: ReActError) -> None:
    """Write on the round's recorded reply what it lacked (``metadata["react_outcome"]``), so
    a rounds view rebuilt from the messages alone says "no answer" as the live one did."""
    for message in reversed(list(port.messages)):
        if message.id in before:
            return
        if isinstance(message, AssistantResponse):
            message.metadata["react_outcome"] = {"missing": problem.missing, "sent": problem.sent}
            return


async def _round(
    port: BranchPort, number: int, final: bool, check: Check | None = None, **operate_kw: Any
) -> tuple[Any, bool | None]:
    """One round through ``operate``, between RoundStart and RoundEnd; ``check`` may find the
    round's result wanting (a ``ReActError``, which ends the round and the run)."""
    run_id = current_run_id.get()
    port.emit(RoundStart(branch_id=port.id, run_id=run_id, round=number, final=final))
    started = time.perf_counter()
    before = set(port.messages.progression)
    try:
        out = await operate(port, **operate_kw)
        problem = check(out, number, _reply_since(port, before)) if check else None
        if problem is not None:
            _mark_reply(port, before, problem)
            raise problem
    except BaseException as exc:
        port.emit(
            RoundEnd(
                branch_id=port.id,
                run_id=run_id,
                round=number,
                final=final,
                duration_ms=(time.perf_counter() - started) * 1000.0,
                error=exc,
            )
        )
        raise
    more = None if final else needs_extension(out)
    port.emit(
        RoundEnd(
            branch_id=port.id,
            run_id=run_id,
            round=number,
            final=final,
            duration_ms=(time.perf_counter() - started) * 1000.0,
            extension_needed=more,
        )
    )
    return out, more


async def ReActStream(  # the ADR's name
    branch: BranchPort,
    instruction: Any = None,
    *,
    guidance: Any = None,
    context: Any = None,
    tools: Any = None,
    response_format: type[BaseModel] | None = None,
    extension_allowed: bool = True,
    max_extensions: int | None = 0,
    chat_model: iModel | None = None,
    parse_model: iModel | None = None,
    reason: bool = False,
    handle_validation: str = "return_value",
    action_strategy: str = "concurrent",
    middle: Middle | None = None,
    clear_messages: bool = False,
    interpret: bool = False,
    interpret_domain: str | None = None,
    interpret_style: str | None = None,
    interpret_model: iModel | None = None,
    **kwargs: Any,
) -> AsyncGenerator[Any, None]:
    """Yield each analysis round's result, then the final answer object (``Analysis`` unless
    ``response_format`` was given). Emits no run lifecycle (the facade owns it). Extra
    keywords go to every round's ``operate`` (model options such as temperature);
    ``tool_choice`` to the analysis rounds only; lionagi's ``instruct={"instruction",
    "guidance", "context"}`` fills what the arguments leave out."""
    check_response_format(response_format)  # a bad one fails now, not after the rounds
    port = BranchPort.of(branch)
    instruction, guidance, context = _from_instruct(
        kwargs.pop("instruct", None), instruction, guidance, context
    )
    extensions = clamp_extensions(max_extensions)
    text = _as_text(instruction)
    if interpret:
        rewritten = await rewrite(
            port,
            text,
            ChatParam(imodel=interpret_model),
            domain=interpret_domain,
            style=interpret_style,
        )
        text = f"{text}\n\nInterpreted instruction: {rewritten}"
    offered = port.tools.resolve(tools)
    tool_choice = kwargs.pop("tool_choice", None)  # the analysis rounds' (the answer has none)
    own = (
        bool(offered)
        and middle is None
        and await ignores_native_tools(chat_model or _model_or_none(port))
    )
    common: dict[str, Any] = dict(
        chat_model=chat_model,
        parse_model=parse_model,
        handle_validation=handle_validation,
        middle=middle,
        **kwargs,
    )
    analysis_kw: dict[str, Any] = dict(
        response_format=ReActAnalysis,
        reason=reason,
        actions=bool(offered),
        tools=[t.name for t in offered] if offered else None,
        action_strategy=action_strategy,
        **common,
    )
    if tool_choice is not None:
        analysis_kw["tool_choice"] = tool_choice
    forced = forced_tool(tool_choice) if offered else None
    check = no_forced_call(forced) if forced else None
    first = text
    if extension_allowed and extensions:
        first += "\n\n" + ReActAnalysis.FIRST_EXT_PROMPT.format(extensions=extensions)
    first_kw = dict(analysis_kw)
    if own and tool_choice is None:  # a model that cannot choose: round 1 calls a tool
        first_kw["tool_choice"] = "required"
    number = 1
    analysis, more = await _round(
        port,
        number,
        False,
        check,
        instruction=first.strip(),
        guidance=guidance,
        context=context,
        clear_messages=clear_messages,
        **first_kw,
    )
    yield analysis
    remaining = extensions
    while extension_allowed and remaining > 0 and more:
        number += 1
        prompt = ReActAnalysis.CONTINUE_EXT_PROMPT.format(extensions=remaining)
        analysis, more = await _round(port, number, False, check, instruction=prompt, **analysis_kw)
        remaining -= 1
        yield analysis
    final, _ = await _round(
        port,
        number + 1,
        True,
        None if response_format else no_answer,
        instruction=ReActAnalysis.ANSWER_PROMPT.format(instruction=text),
        response_format=response_format or (AnswerRequired if own else Analysis),
        **common,
    )
    yield final


async def ReAct(  # the ADR's name
    branch: BranchPort,
    instruction: Any = None,
    *,
    max_extensions: int | None = 3,
    return_analysis: bool = False,
    response_format: type[BaseModel] | None = None,
    **kwargs: Any,
) -> Any:
    """Run every round and return the answer text (``Analysis.answer``), the final object
    when ``response_format`` is given (or the raw reply when it did not validate), or with
    ``return_analysis=True`` the list of every round's result, final included. Keywords are
    ``ReActStream``'s."""
    outs: list[Any] = []
    stream = ReActStream(
        branch,
        instruction,
        max_extensions=max_extensions,
        response_format=response_format,
        **kwargs,
    )
    try:
        async for item in stream:
            outs.append(item)
    finally:
        await stream.aclose()
    if return_analysis:
        return outs
    final = outs[-1]
    if response_format is None and isinstance(final, Analysis):
        return final.answer
    return final
