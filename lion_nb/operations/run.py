"""``run``: a CLI agent's turn as a stream of recorded messages, and ``run_and_collect``, its
one-result adapter (ADR-0021 D3, D4, D5).

``run`` records and yields the instruction, then turns the agent's chunks into messages through
``StreamAssembler`` (recording each before yielding it) while ``StreamDelta`` signals carry the
text of the response being built. It owns its lifecycle (``RunStart`` when iteration starts,
then exactly one ``RunEnd``/``RunFailed``) unless a suppressing wrapper (operate, ReAct) owns
it, and it owns cleanup on every exit — normal end, failure, cancellation, ``aclose()`` and
abandonment: the provider stream is closed (which terminates and reaps the CLI process group),
received text is kept as a response, the final snapshot is written, and only then is the
terminal signal emitted.

The lifecycle ContextVar is read, never left set across a ``yield``: the consumer's code
between items is not part of the run, and a flag left behind by a generator that is abandoned
(finalised later in another context) would silence the branch's next runs in this task.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lion_nb.compile import cli_prompt
from lion_nb.errors import ExecutionError, LionError, ParseError, ProviderTimeout
from lion_nb.messages import AssistantResponse, Instruction, RoledMessage
from lion_nb.models.base import Chunk, CLIRequest
from lion_nb.operations.assemble import StreamAssembler, usage_of
from lion_nb.operations.types import ChatParam, ParseParam, RunParam, default_persist_dir
from lion_nb.session.lifecycle import RunTracker, lifecycle_suppressed
from lion_nb.usage import record_usage

if TYPE_CHECKING:
    from lion_nb.models.imodel import iModel
    from lion_nb.persist import ChunkBuffer
    from lion_nb.session.branch import Branch

logger = logging.getLogger(__name__)

CLI_HINT = "claude_code, codex, gemini_cli (or iModel(provider='scripted', cli=True) offline)"


def _label(model: iModel) -> str:
    return f"{model.provider_name}/{model.model}" if model.model else model.provider_name


def _select_model(branch: Branch, param: RunParam) -> iModel:
    """The CLI model for this run. ``param.imodel`` replaces ``branch.chat_model`` (ADR D3),
    but only once it is known to be a CLI model, so a rejected model leaves the branch as it
    was."""
    model = param.imodel if param.imodel is not None else branch.chat_model
    if not model.is_cli:
        raise ValueError(
            f"run() streams a CLI coding agent, but {model!r} is not one. Use a CLI provider: "
            f"{CLI_HINT}. run() does not fall back to communicate(); use communicate() for "
            f"API models."
        )
    if param.imodel is not None:
        branch.chat_model = param.imodel
    return model


def stream_deadline(timeout: Any) -> float | None:
    """One absolute deadline (event-loop time) for a positive numeric ``timeout``; None, zero,
    negative values and non-numbers disable it (there is no default)."""
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        return None
    return asyncio.get_running_loop().time() + float(timeout)


async def _next_chunk(
    stream: AsyncGenerator[Chunk, None], deadline: float | None, seconds: Any, model: iModel
) -> Chunk | None:
    """The next chunk (None at the end), within the stream's absolute deadline."""
    try:
        if deadline is None:
            return await anext(stream)
        scope = asyncio.timeout_at(deadline)
        try:
            async with scope:
                return await anext(stream)
        except TimeoutError as exc:
            if not scope.expired():
                raise
            raise ProviderTimeout(
                f"the run() stream did not finish within its {seconds:g} s deadline",
                provider=model.provider_name,
            ) from exc
    except StopAsyncIteration:
        return None
    except LionError:
        raise
    except Exception as exc:  # an unclassified provider failure is still a failed call
        raise ExecutionError(f"{_label(model)} stream failed: {exc!r}") from exc


class _Persistence:
    """``stream_persist``: the snapshot before the stream, the chunk buffer during it, and the
    final snapshot after it (the buffer removed only once that is safely on disk)."""

    def __init__(self, branch: Branch, param: RunParam) -> None:
        self.branch = branch
        self.persist_dir = Path(param.persist_dir) if param.persist_dir else default_persist_dir()
        self.snapshot_dir = Path(param.snapshot_dir) if param.snapshot_dir else self.persist_dir
        self.buffer: ChunkBuffer | None = None

    def begin(self, header: dict[str, Any]) -> None:
        from lion_nb.persist import ChunkBuffer, buffer_path, write_snapshot

        write_snapshot(self.branch, self.snapshot_dir)
        self.buffer = ChunkBuffer(buffer_path(self.persist_dir, self.branch.id))
        self.buffer.open(header)

    def append(self, chunk: Chunk) -> None:
        if self.buffer is not None:
            self.buffer.append(chunk)

    def end(self) -> None:
        from lion_nb.persist import write_snapshot

        if self.buffer is not None:
            self.buffer.close()
        write_snapshot(self.branch, self.snapshot_dir)  # raises: the buffer stays for recovery
        if self.buffer is not None:
            self.buffer.remove()


async def run(
    branch: Branch,
    instruction: Instruction | Any,
    param: RunParam,
) -> AsyncGenerator[RoledMessage, None]:
    """Yield the instruction, then every message the CLI agent's stream completes (assistant
    responses, tool requests and their results), each recorded on ``branch`` first.

    Raises ``ValueError`` for a non-CLI model (no fallback), the provider's classified
    ``ProviderError`` for a failed stream (after recording the text received so far), and
    ``ProviderTimeout`` when a positive numeric ``timeout`` (call kwargs, else the model's
    request defaults) elapses: one absolute deadline for the whole stream.
    """
    model = _select_model(branch, param)
    options = dict(param.imodel_kw or {})
    timeout = options.pop("timeout", model.request_defaults.get("timeout"))
    tracker = None if lifecycle_suppressed(branch) else RunTracker(branch, "run")
    run_id = tracker.run_id if tracker is not None else None
    asm: StreamAssembler | None = None
    stream: AsyncGenerator[Chunk, None] | None = None
    persistence = _Persistence(branch, param) if param.stream_persist else None
    recorded = False  # the instruction is on the branch (so a final snapshot is due)
    primary: BaseException | None = None
    stopped = False
    if tracker is not None:
        tracker.start()  # iteration has begun: aclose() before this point emits nothing
    try:
        try:
            ins = build_instruction(branch, instruction, param)
        finally:
            branch._injected_context = None
        branch.add_message(ins)
        recorded = True
        asm = StreamAssembler(
            sender=_label(model),
            recipient=ins.sender,
            provider=model.provider_name,
            namespace=run_id,
            delta_sink=branch.delta_sink,
        )
        yield ins
        if persistence is not None:
            persistence.begin(
                {
                    "branch_id": str(branch.id),
                    "run_id": str(asm.namespace),
                    "instruction_id": str(ins.id),
                    "sender": asm.sender,
                    "recipient": ins.sender,
                    "provider": model.provider_name,
                    "model": model.model,
                    "started_at": time.time(),
                }
            )
        system = branch.system
        request = CLIRequest(
            prompt=cli_prompt(ins),
            system=system.system if system is not None else None,
            resume=model.provider_session_id,
            response_schema=ins.response_schema,
            options=options,
        )
        deadline = stream_deadline(timeout)
        stream = model.stream(request)
        while True:
            if deadline is None:  # the common case, inlined: this loop runs once per token
                try:
                    chunk = await anext(stream)
                except StopAsyncIteration:
                    break
                except LionError:
                    raise
                except Exception as exc:  # unclassified provider failure: still a failed call
                    raise ExecutionError(f"{_label(model)} stream failed: {exc!r}") from exc
            else:
                next_chunk = await _next_chunk(stream, deadline, timeout, model)
                if next_chunk is None:
                    break
                chunk = next_chunk
            if persistence is not None:
                persistence.append(chunk)  # before anything else: a crash keeps this chunk
            if chunk.session_id and chunk.session_id != model.provider_session_id:
                model.provider_session_id = chunk.session_id  # the next run resumes it
            messages = asm.feed(chunk)
            if chunk.type == "result":
                usage = usage_of(chunk.metadata)
                if tracker is not None:
                    tracker.usage.add(usage)  # this run's RunEnd, whichever task resumes us
                else:
                    record_usage(usage)  # the enclosing run's (operate / ReAct)
            # record the whole batch before yielding any of it: a consumer that stops at the
            # first (break, cancel) must not lose what the agent already sent with it
            for message in messages:
                branch.add_message(message)
            for message in messages:
                yield message
            if asm.error is not None:
                raise asm.error
            if asm.ended:
                break
        final = asm.finish()
        for message in final:
            branch.add_message(message)
        for message in final:
            yield message
    except (GeneratorExit, asyncio.CancelledError):
        stopped = True  # aclose(), abandonment (finalised via aclose) or cancellation
        raise
    except BaseException as exc:
        primary = exc
        raise
    finally:
        await _cleanup(
            branch,
            stream,
            asm,
            persistence if recorded else None,
            tracker,
            primary=primary,
            stopped=stopped,
        )


async def _cleanup(
    branch: Branch,
    stream: AsyncGenerator[Chunk, None] | None,
    asm: StreamAssembler | None,
    persistence: _Persistence | None,
    tracker: RunTracker | None,
    *,
    primary: BaseException | None,
    stopped: bool,
) -> None:
    """Every exit path. Each step runs even if an earlier one failed; a secondary failure is
    logged and never replaces the exception already propagating. Awaiting is allowed here even
    inside ``aclose()`` (only yielding is not)."""
    secondary: BaseException | None = None

    def failed(step: str, exc: BaseException) -> None:
        nonlocal secondary
        logger.warning("run cleanup: %s failed: %r", step, exc, exc_info=exc)
        if secondary is None:
            secondary = exc

    if stream is not None:
        try:
            await stream.aclose()  # first: terminates and reaps the CLI process group
        except BaseException as exc:
            failed("closing the provider stream", exc)
    if asm is not None and asm.has_pending:  # keep what the agent said before the end
        extra: dict[str, Any] = {"stopped": True} if stopped else {}
        if primary is not None:
            extra["error"] = str(primary) or type(primary).__name__
        try:
            for message in asm.flush(**extra):
                branch.add_message(message)
        except BaseException as exc:
            failed("recording the partial response", exc)
    if persistence is not None:
        try:
            persistence.end()
        except BaseException as exc:
            failed("writing the final snapshot (the buffer is kept for recover_branch)", exc)
    try:
        await branch._drain()  # message signals reach observers before the terminal one
    except BaseException as exc:
        failed("draining observers", exc)
    if tracker is not None:
        result = asm.collected_text() if asm is not None else None
        if primary is not None:
            tracker.fail(primary)
        else:
            tracker.end(result, stopped=stopped)
    if secondary is not None and primary is None and not isinstance(secondary, Exception):
        raise secondary  # a cancellation or interrupt during cleanup is not swallowed


def build_instruction(branch: Branch, instruction: Any, param: ChatParam) -> Instruction:
    from lion_nb.operations.instruction import build_instruction as build

    return build(branch, instruction, param)


async def run_and_collect(
    branch: Branch,
    instruction: Instruction | Any,
    chat_param: ChatParam,
    parse_param: ParseParam | None = None,
    clear_messages: bool = False,
    skip_validation: bool = False,
) -> Any:
    """The CLI ``Middle`` (ADR D5): consume ``run`` and return the non-empty assistant texts
    joined by a blank line (``None`` if there were none) — raw when ``skip_validation`` or no
    response format, else parsed once into ``parse_param.response_format``.

    A response format given only to the parser is also put on the instruction, so the agent
    is asked for JSON matching the schema.
    """
    from lion_nb.operations.parse import parse

    if clear_messages:
        branch.clear_messages()
    param = RunParam.from_chat(chat_param)
    fmt = parse_param.response_format if parse_param is not None else None
    if fmt is not None and param.response_format is None:
        param = param.with_(response_format=fmt)
    texts: list[str] = []
    stream = run(branch, instruction, param)
    try:
        async for message in stream:
            if isinstance(message, AssistantResponse) and message.response.strip():
                texts.append(message.response)
    finally:
        await stream.aclose()
    if not texts:
        return None
    text = "\n\n".join(texts)
    if skip_validation or parse_param is None or fmt is None:
        return text
    if parse_param.imodel is None and parse_param.max_retries and branch.parse_model.is_cli:
        # Repair turns are unrecorded chat() calls, which a CLI agent cannot take: without an
        # API parse model, parsing is local extraction only (still one parse).
        parse_param = parse_param.with_(max_retries=0)
    try:
        return await parse(branch, text, parse_param)
    except ParseError:
        raise
    except ValueError as exc:
        raise ParseError(
            f"could not parse the response into {getattr(fmt, '__name__', fmt)}: {exc}",
            target=fmt,
            raw=text,
        ) from exc
