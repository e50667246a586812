"""``SignalBus``: a branch's (and a session's) public signal bus — what the port, the run
lifecycle and a streaming message emit through, and what ``observe`` subscribes to."""

from __future__ import annotations

import asyncio
import uuid

from lion_nb import Branch, Session
from lion_nb.port.bus import SignalBus
from lion_nb.signals import MessageAdded, RunEnd, RunStart, Signal, StreamDelta
from tests.support.scripted import scripted


def _start(branch_id: uuid.UUID | None = None) -> RunStart:
    return RunStart(branch_id=branch_id or uuid.uuid4(), run_id=uuid.uuid4(), operation="x")


def test_emit_reaches_the_handlers_of_the_signals_type_until_unobserved():
    bus = SignalBus()
    starts: list[Signal] = []
    every: list[Signal] = []
    bus.observe(RunStart, handler=starts.append)

    @bus.observe()
    def everything(signal: Signal) -> None:
        every.append(signal)

    first = _start()
    bus.emit(first)
    assert starts == [first] and every == [first]
    assert bus.unobserve(starts.append) is True
    assert bus.unobserve(starts.append) is False  # nothing left to remove
    second = _start()
    bus.emit(second)
    assert starts == [first] and every == [first, second]


def test_observed_and_wants_say_who_would_hear_here_or_upstream():
    upstream, bus = SignalBus(), SignalBus()
    bus.upstream = upstream
    assert bus.observed() is False and bus.wants(StreamDelta) is False
    upstream.observe(StreamDelta, handler=lambda s: None)
    assert bus.observed() is True and bus.wants(StreamDelta) is True
    assert bus.wants(RunEnd) is False
    assert upstream.upstream is None and upstream.observed() is True


def test_unobserve_all_keeps_held_subscriptions_which_their_holder_ends():
    bus = SignalBus()
    mine: list[Signal] = []
    held: list[Signal] = []
    bus.observe(handler=mine.append)
    end = bus.subscribe((RunStart,), held.append)
    bus.unobserve_all()
    signal = _start()
    bus.emit(signal)
    assert mine == [] and held == [signal]  # a view stays attached
    end()
    bus.emit(_start())
    assert held == [signal]
    assert bus.observed() is False


async def test_drain_waits_for_async_handlers_here_and_upstream():
    upstream, bus = SignalBus(), SignalBus()
    bus.upstream = upstream
    done: list[str] = []

    async def slow(where: str) -> None:
        await asyncio.sleep(0.01)
        done.append(where)

    bus.observe(handler=lambda s: slow("branch"))
    upstream.observe(handler=lambda s: slow("session"))
    bus.emit(_start())
    assert done == []
    await bus.drain()
    assert sorted(done) == ["branch", "session"]


def test_a_branchs_signals_reach_its_sessions_bus_while_it_belongs_to_it():
    branch, session = Branch(), Session()
    seen: list[Signal] = []
    session.signals.observe(RunStart, handler=seen.append)
    session.include_branches(branch)
    assert branch.session is session and branch.signals.upstream is session.signals
    first = _start(branch.id)
    branch.signals.emit(first)
    session.remove_branch(branch)
    assert branch.signals.upstream is None
    branch.signals.emit(_start(branch.id))
    assert seen == [first]


async def test_the_port_and_the_facade_emit_through_the_branchs_bus():
    branch = Branch(chat_model=scripted("hi"))
    seen: list[Signal] = []
    branch.signals.observe(handler=seen.append)  # the same bus Branch.observe subscribes to
    await branch.communicate("hello")
    names = [type(s).__name__ for s in seen]
    assert names[0] == "RunStart" and names[-1] == "RunEnd"
    assert sum(isinstance(s, MessageAdded) for s in seen) == 2
    port = branch.port()
    signal = _start(branch.id)
    port.emit(signal)
    assert seen[-1] is signal


def test_a_stream_builds_no_delta_when_nobody_listens_and_one_when_the_session_does():
    branch, session = Branch(), Session()
    session.include_branches(branch)
    stream = branch.port().stream(uuid.uuid4())
    stream("text", "unheard")  # no handler anywhere: nothing emitted, the text still kept
    deltas: list[Signal] = []
    session.observe(StreamDelta, handler=deltas.append)
    stream("text", " heard")
    assert [(d.delta, d.snapshot) for d in deltas] == [(" heard", "unheard heard")]
