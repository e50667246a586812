"""``run``: a CLI agent's turn as a stream of recorded messages, and ``run_and_collect``, its
one-result adapter (ADR-0021 D3, D4, D5).

``run`` records and yields the instruction, then turns the agent's chunks into messages through
``StreamAssembler`` (recording each before yielding it) while ``StreamDelta`` signals carry the
text of the response being built. Its lifecycle is the shared ``observed_stream`` (``RunStart``
when iteration starts, then exactly one ``RunEnd``/``RunFailed``; silent inside operate or
ReAct). The stream itself owns cleanup on every exit — normal end, failure, cancellation,
``aclose()`` and abandonment: the provider stream is closed (which terminates and reaps the CLI
process group), received text is kept as a response and the final snapshot is written, all
before ``observed_stream`` emits the terminal signal.
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
from lion_nb.models.registry import cli_provider_names
from lion_nb.operations.assemble import StreamAssembler, usage_of
from lion_nb.operations.instruction import build_instruction
from lion_nb.operations.parse import parse
from lion_nb.operations.types import ChatParam, ParseParam, RunParam, default_persist_dir
from lion_nb.port.branch_port import BranchPort
from lion_nb.port.lifecycle import observed_stream
from lion_nb.port.stream_persist import ChunkBuffer, buffer_path, write_snapshot
from lion_nb.usage import record_usage

if TYPE_CHECKING:
    from lion_nb.models.imodel import iModel

logger = logging.getLogger(__name__)


def _label(model: iModel) -> str:
    return f"{model.provider_name}/{model.model}" if model.model else model.provider_name


def _select_model(port: BranchPort, param: RunParam) -> iModel:
    """The CLI model for this run. ``param.imodel`` replaces the branch's model (ADR D3) —
    unless this run is one call of a composite verb (``BranchPort.for_call``) — but only once
    it is known to be a CLI model, so a rejected model leaves the branch as it was."""
    model = param.imodel if param.imodel is not None else port.chat_model
    if not model.is_cli:
        names = ", ".join(cli_provider_names())
        raise ValueError(
            f"run() streams a CLI coding agent, but {model!r} is not one. Use a CLI provider: "
            f"{names} (or iModel(provider='scripted', cli=True) offline). run() does not fall back to communicate(); use communicate() for "
            f"API models."
        )
    if param.imodel is not None:
        port.adopt_chat_model(param.imodel)
    return model


def stream_deadline(timeout: Any) -> float | None:
    """One absolute deadline (event-loop time) for a positive numeric ``timeout``; None, zero,
    negative values and non-numbers disable it (there is no default)."""
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        return None
    return asyncio.get_running_loop().time() + float(timeout)


async def _before(deadline: float, step: Any, seconds: Any, model: iModel) -> Chunk:
    """Await ``step`` (the next chunk) within the stream's absolute ``deadline``."""
    scope = asyncio.timeout_at(deadline)
    try:
        async with scope:
            return await step
    except TimeoutError as exc:
        if not scope.expired():
            raise
        raise ProviderTimeout(
            f"the run() stream did not finish within its {seconds:g} s deadline",
            provider=model.provider_name,
        ) from exc


class _Persistence:
    """``stream_persist``: the snapshot before the stream, the chunk buffer during it, and the
    final snapshot after it (the buffer removed only once that is safely on disk)."""

    def __init__(self, port: BranchPort, param: RunParam) -> None:
        self.branch = port.branch
        self.persist_dir = Path(param.persist_dir) if param.persist_dir else default_persist_dir()
        self.snapshot_dir = Path(param.snapshot_dir) if param.snapshot_dir else self.persist_dir
        self.buffer: ChunkBuffer | None = None

    def begin(self, header: dict[str, Any]) -> None:
        write_snapshot(self.branch, self.snapshot_dir)
        self.buffer = ChunkBuffer(buffer_path(self.persist_dir, self.branch.id))
        self.buffer.open(header)

    def append(self, chunk: Chunk) -> None:
        if self.buffer is not None:
            self.buffer.append(chunk)

    def end(self) -> None:
        if self.buffer is not None:
            self.buffer.close()
        write_snapshot(self.branch, self.snapshot_dir)  # raises: the buffer stays for recovery
        if self.buffer is not None:
            self.buffer.remove()


def run(
    branch: BranchPort,
    instruction: Instruction | Any,
    param: RunParam,
) -> AsyncGenerator[RoledMessage, None]:
    """Yield the instruction, then every message the CLI agent's stream completes (assistant
    responses, tool requests and their results), each recorded on ``branch`` first.

    Raises ``ValueError`` for a non-CLI model (no fallback; before anything is emitted), the
    provider's classified ``ProviderError`` for a failed stream (after recording the text
    received so far), and ``ProviderTimeout`` when a positive numeric ``timeout`` (call
    kwargs, else the model's request defaults) elapses: one absolute deadline for the whole
    stream. The lifecycle is ``observed_stream``'s; the result of its ``RunEnd`` is the
    collected assistant text.
    """
    port = BranchPort.of(branch)
    turn = _RunTurn(port, _select_model(port, param), instruction, param)
    return observed_stream(port, "run", turn.messages(), result=turn.collected_text)


class _RunTurn:
    """One ``run()`` stream: its model, assembler and persistence, and the cleanup that every
    exit path (normal end, failure, cancellation, ``aclose()``, abandonment) shares."""

    def __init__(self, port: BranchPort, model: iModel, instruction: Any, param: RunParam):
        self.port = port
        self.model = model
        self.instruction = instruction
        self.param = param
        self.options = dict(param.imodel_kw or {})
        self.timeout = self.options.pop("timeout", model.request_defaults.get("timeout"))
        self.asm: StreamAssembler | None = None
        self.persistence = _Persistence(port, param) if param.stream_persist else None
        self.recorded = False  # the instruction is on the branch (so a final snapshot is due)

    def collected_text(self) -> str | None:
        return self.asm.collected_text() if self.asm is not None else None

    async def messages(self) -> AsyncGenerator[RoledMessage, None]:
        stream: AsyncGenerator[Chunk, None] | None = None
        primary: BaseException | None = None
        stopped = False
        try:
            ins = build_instruction(self.port, self.instruction, self.param)
            self.port.record(ins)
            self.recorded = True
            asm = self.asm = StreamAssembler(
                sender=_label(self.model),
                recipient=ins.sender,
                provider=self.model.provider_name,
                stream_for=self.port.stream,
            )
            yield ins
            if self.persistence is not None:
                self.persistence.begin(self._header(ins, asm))
            stream = self.model.stream(self._request(ins))
            deadline = stream_deadline(self.timeout)
            while True:
                if deadline is None:  # the common case, inlined: this loop runs per token
                    try:
                        chunk = await anext(stream)
                    except StopAsyncIteration:
                        break
                    except LionError:
                        raise
                    except Exception as exc:
                        raise self._failed(exc) from exc
                elif (found := await self._next(stream, deadline)) is None:
                    break
                else:
                    chunk = found
                messages = self._absorb(chunk, asm)
                for message in messages:
                    yield message
                if asm.error is not None:
                    raise asm.error
                if asm.ended:
                    break
            final = asm.finish()
            for message in final:
                self.port.record(message)
            for message in final:
                yield message
        except (GeneratorExit, asyncio.CancelledError):
            stopped = True  # aclose(), abandonment (finalised via aclose) or cancellation
            raise
        except BaseException as exc:
            primary = exc
            raise
        finally:
            await self._cleanup(stream, primary=primary, stopped=stopped)

    def _header(self, ins: Instruction, asm: StreamAssembler) -> dict[str, Any]:
        return {
            "branch_id": str(self.port.id),
            "run_id": str(asm.namespace),
            "instruction_id": str(ins.id),
            "sender": asm.sender,
            "recipient": ins.sender,
            "provider": self.model.provider_name,
            "model": self.model.model,
            "started_at": time.time(),
        }

    def _request(self, ins: Instruction) -> CLIRequest:
        system = self.port.system
        return CLIRequest(
            prompt=cli_prompt(ins),
            system=system.system if system is not None else None,
            resume=self.model.provider_session_id,
            response_schema=ins.response_schema,
            options=self.options,
        )

    async def _next(self, stream: AsyncGenerator[Chunk, None], deadline: float) -> Chunk | None:
        """The next chunk (None at the end), within the stream's absolute deadline."""
        try:
            return await _before(deadline, anext(stream), self.timeout, self.model)
        except StopAsyncIteration:
            return None
        except LionError:
            raise
        except Exception as exc:
            raise self._failed(exc) from exc

    def _failed(self, exc: Exception) -> ExecutionError:
        """An unclassified provider failure is still a failed call."""
        return ExecutionError(f"{_label(self.model)} stream failed: {exc!r}")

    def _absorb(self, chunk: Chunk, asm: StreamAssembler) -> list[RoledMessage]:
        """Persist, note the session, and record the messages ``chunk`` completes — the whole
        batch before any is yielded: a consumer that stops at the first (break, cancel) must
        not lose what the agent already sent with it."""
        if self.persistence is not None:
            self.persistence.append(chunk)  # before anything else: a crash keeps this chunk
        model = self.model
        if chunk.session_id and chunk.session_id != model.provider_session_id:
            model.provider_session_id = chunk.session_id  # the next run resumes it
        messages = asm.feed(chunk)
        if chunk.type == "result":
            record_usage(usage_of(chunk.metadata))  # this run's, or the enclosing run's
        for message in messages:
            self.port.record(message)
        return messages

    async def _cleanup(
        self,
        stream: AsyncGenerator[Chunk, None] | None,
        *,
        primary: BaseException | None,
        stopped: bool,
    ) -> None:
        """Every exit path. Each step runs even if an earlier one failed; a secondary failure
        is logged and never replaces the exception already propagating. Awaiting is allowed
        here even inside ``aclose()`` (only yielding is not)."""
        steps = _CleanupSteps()
        if stream is not None:
            # first: terminates and reaps the CLI process group
            await steps.run_async("closing the provider stream", stream.aclose)
        if self.asm is not None and self.asm.has_pending:  # keep what was said before the end
            extra: dict[str, Any] = {"stopped": True} if stopped else {}
            if primary is not None:
                extra["error"] = str(primary) or type(primary).__name__
            steps.run("recording the partial response", self._record_partial, extra)
        if self.persistence is not None and self.recorded:
            steps.run(
                "writing the final snapshot (the buffer is kept for recover_branch)",
                self.persistence.end,
            )
        steps.reraise_if(primary is None)

    def _record_partial(self, extra: dict[str, Any]) -> None:
        assert self.asm is not None
        for message in self.asm.flush(**extra):
            self.port.record(message)


class _CleanupSteps:
    """Runs cleanup steps so that one failing never skips the next; keeps the first failure."""

    def __init__(self) -> None:
        self.secondary: BaseException | None = None

    def _failed(self, step: str, exc: BaseException) -> None:
        logger.warning("run cleanup: %s failed: %r", step, exc, exc_info=exc)
        if self.secondary is None:
            self.secondary = exc

    def run(self, step: str, fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except BaseException as exc:
            self._failed(step, exc)

    async def run_async(self, step: str, fn: Any) -> None:
        try:
            await fn()
        except BaseException as exc:
            self._failed(step, exc)

    def reraise_if(self, nothing_propagating: bool) -> None:
        """A cancellation or interrupt during cleanup is not swallowed."""
        error = self.secondary
        if error is not None and nothing_propagating and not isinstance(error, Exception):
            raise error


async def run_and_collect(
    branch: BranchPort,
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
    port = BranchPort.of(branch)
    if clear_messages:
        port.clear_messages()
    param = RunParam.from_chat(chat_param)
    fmt = parse_param.response_format if parse_param is not None else None
    if fmt is not None and param.response_format is None:
        param = param.with_(response_format=fmt)
    texts: list[str] = []
    stream = run(port, instruction, param)
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
    if parse_param.imodel is None and parse_param.max_retries and port.parse_model.is_cli:
        # Repair turns are unrecorded chat() calls, which a CLI agent cannot take: without an
        # API parse model, parsing is local extraction only (still one parse).
        parse_param = parse_param.with_(max_retries=0)
    try:
        return await parse(port, text, parse_param)
    except ParseError:
        raise
    except ValueError as exc:
        raise ParseError(
            f"could not parse the response into {getattr(fmt, '__name__', fmt)}: {exc}",
            target=fmt,
            raw=text,
        ) from exc
