"""Playing a model call back from a recording, and recording a live one, at the provider seam.

Replay keeps the stream's timing: each event is delivered at ``start + t / speed`` (an absolute
schedule, so the delays of a slow event loop do not add up); ``speed=None`` delivers at once.
API calls replay through the caller's delta sink and return the recorded ``ModelResponse``;
CLI calls are async generators of the recorded ``Chunk``s. Every replayed response and chunk
carries ``replayed`` (which cassette, which call). A recorded error is raised again as the same
``ProviderError`` after the deltas that preceded it.

Recording wraps the live call: the delta sink (API) or the chunk stream (CLI) is observed on its
way to the caller, each event stamped with its offset from the start of the call. A model that
cannot be used here (not installed, not reached) is not recorded; in "auto" mode the caller gets
the cassette's miss instead of the model's error (``Miss``: the prompt is not on the cassette).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

from lion_nb.cassettes.codec import (
    decode_chunk,
    decode_error,
    decode_response,
    encode_chunk,
    encode_error,
    encode_response,
)
from lion_nb.cassettes.store import Recording
from lion_nb.errors import (
    CassetteMiss,
    CLINotFound,
    ConfigurationError,
    ConnectionLost,
    ProviderError,
    ProviderTimeout,
)
from lion_nb.models.base import Chunk, CLIRequest, DeltaKind, DeltaSink, ModelRequest, ModelResponse

__all__ = ["Clock", "record_api", "record_cli", "replay_api", "replay_cli"]

LiveComplete = Callable[[ModelRequest, DeltaSink | None], Awaitable[ModelResponse]]
LiveStream = Callable[[CLIRequest], AsyncGenerator[Chunk, None]]
Save = Callable[[Recording], None]
Miss = Callable[[BaseException], BaseException]  # "not on the cassette", from the model's error

_KINDS: tuple[DeltaKind, ...] = ("text", "thinking", "tool_args", "tokens")
_STOP_GRACE_STEPS = 5  # loop turns a stopped recording waits for the caller to stop again


class Clock:
    """``await clock.until(t)``: sleep until ``t / speed`` seconds after the clock started."""

    __slots__ = ("loop", "speed", "start")

    def __init__(self, speed: float | None) -> None:
        self.speed = speed
        self.loop = asyncio.get_running_loop()
        self.start = self.loop.time()

    async def until(self, t: float) -> None:
        if self.speed is None:
            return
        delay = self.start + t / self.speed - self.loop.time()
        if delay > 0:
            await asyncio.sleep(delay)


def _deliver(event: dict[str, Any], on_delta: DeltaSink) -> None:
    for kind in _KINDS:
        if kind in event:
            on_delta(kind, event[kind], name=event.get("name"), call_id=event.get("id"))
            return


async def _stopped(rec: Recording, ref: dict[str, Any], clock: Clock) -> CassetteMiss:
    """A recording that ends where its caller stopped: wait as the original did, giving the
    caller the chance to stop again, then say that nothing more was recorded."""
    await clock.until(rec.end)
    for _ in range(_STOP_GRACE_STEPS):
        await asyncio.sleep(0)
    return CassetteMiss(
        f"call {rec.call} (line {rec.line}) of {ref['cassette']!r} was recorded until its caller "
        f"stopped reading, after {len(rec.events)} events; there is nothing more to replay. "
        "Stop at the same point, or record it again with mode='record'.",
        path=ref["cassette"],
        provider=rec.request.get("provider"),
        model=rec.request.get("model"),
        request=rec.request,
        nearest={"call": rec.call, "line": rec.line},
    )


async def replay_api(
    rec: Recording, on_delta: DeltaSink | None, speed: float | None, ref: dict[str, Any]
) -> ModelResponse:
    clock = Clock(speed)
    await asyncio.sleep(0)  # a replayed call is still a suspension point, as a live one is
    for event in rec.events:
        await clock.until(event["t"])
        if on_delta is not None:
            _deliver(event, on_delta)
    if rec.error is not None:
        await clock.until(rec.end)
        error = decode_error(rec.error)
        error.replayed = ref  # type: ignore[attr-defined]  # tagged onto any decoded error
        raise error
    if rec.response is None:
        raise await _stopped(rec, ref, clock)
    await clock.until(rec.end)
    return decode_response(rec.response, ref)


async def replay_cli(
    rec: Recording, speed: float | None, ref: dict[str, Any]
) -> AsyncGenerator[Chunk, None]:
    clock = Clock(speed)
    await asyncio.sleep(0)
    for event in rec.events:
        await clock.until(event["t"])
        yield decode_chunk(event["chunk"], ref)
    if rec.error is not None:
        await clock.until(rec.end)
        error = decode_error(rec.error)
        error.replayed = ref  # type: ignore[attr-defined]  # tagged onto any decoded error
        raise error
    if rec.stopped:
        raise await _stopped(rec, ref, clock)


def _unavailable(error: BaseException, events: list[dict[str, Any]]) -> bool:
    """The model could not be used on this machine, now: not installed (configuration, a
    missing CLI executable), or not reached before any of its reply arrived (no connection, a
    timeout). That is this machine's state, not the model's answer: recording it would replay
    "not installed" or "cannot connect" forever."""
    if isinstance(error, ConfigurationError | CLINotFound):
        return True
    return (
        isinstance(error, ConnectionLost | ProviderTimeout)
        and not events
        and not getattr(error, "status", None)
    )


def _recordable(error: BaseException, events: list[dict[str, Any]]) -> bool:
    """Errors that are the provider's answer (a 429, a 500, a reply cut off midway)."""
    return isinstance(error, ProviderError) and not _unavailable(error, events)


def _instead(
    error: BaseException, events: list[dict[str, Any]], miss: Miss | None
) -> BaseException | None:
    """The cassette's miss to raise instead of ``error`` when the model that would have
    recorded the call cannot be used here: the call is simply not on the cassette."""
    if miss is not None and _unavailable(error, events):
        return miss(error)
    return None


async def record_api(
    live: LiveComplete,
    request: ModelRequest,
    on_delta: DeltaSink | None,
    matched: dict[str, Any],
    save: Save,
    miss: Miss | None = None,
) -> ModelResponse:
    events: list[dict[str, Any]] = []
    start = time.perf_counter()

    def sink(
        kind: DeltaKind, delta: str, *, name: str | None = None, call_id: str | None = None
    ) -> None:
        event: dict[str, Any] = {"t": round(time.perf_counter() - start, 4), kind: delta}
        if name is not None:
            event["name"] = name
        if call_id is not None:
            event["id"] = call_id
        events.append(event)
        if on_delta is not None:
            on_delta(kind, delta, name=name, call_id=call_id)

    def done(**kw: Any) -> None:
        end = time.perf_counter() - start
        save(Recording(kind="api", request=matched, events=events, end=end, **kw))

    try:
        response = await live(request, sink)
    except asyncio.CancelledError:
        done(stopped=True)
        raise
    except BaseException as exc:
        if _recordable(exc, events):
            done(error=encode_error(exc))
        instead = _instead(exc, events, miss)
        if instead is not None:
            raise instead from exc
        raise
    done(response=encode_response(response))
    return response


async def record_cli(
    live: LiveStream,
    request: CLIRequest,
    matched: dict[str, Any],
    save: Save,
    miss: Miss | None = None,
) -> AsyncGenerator[Chunk, None]:
    events: list[dict[str, Any]] = []
    start = time.perf_counter()
    ended = False  # a result or error chunk arrived: what follows the stream's end is no loss
    error: dict[str, Any] | None = None
    stream: AsyncGenerator[Chunk, None] | None = None
    try:
        stream = live(request)  # builds the provider: it may find the model unavailable
        async for chunk in stream:
            events.append(
                {"t": round(time.perf_counter() - start, 4), "chunk": encode_chunk(chunk)}
            )
            ended = ended or chunk.type in ("result", "error")
            yield chunk
        ended = True
    except BaseException as exc:
        if _recordable(exc, events):
            error, ended = encode_error(exc), True
        instead = _instead(exc, events, miss)
        if instead is not None:
            raise instead from exc
        raise
    finally:
        try:
            if stream is not None:
                await stream.aclose()  # first: the live provider reaps its process here
        finally:
            end = time.perf_counter() - start
            if ended or events:
                save(
                    Recording(
                        kind="cli",
                        request=matched,
                        events=events,
                        error=error,
                        end=end,
                        stopped=not ended,
                    )
                )
