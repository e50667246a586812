"""Signals, the one per-message stream accumulator, and the observer bus."""

import uuid

from lion_nb.signals import MessageAdded, MessageStream, Observers, RunEnd, RunStart, StreamDelta


def _ids():
    return uuid.uuid4(), uuid.uuid4()


def test_message_stream_keeps_one_running_text_per_part():
    branch_id, message_id = _ids()
    out: list = []
    stream = MessageStream(branch_id, message_id, out.append)
    stream("text", "Hel")
    stream("thinking", "hmm")
    stream("tool_args", '{"a":', name="add", call_id="c1")
    stream("tool_args", '{"x":', name="mul", call_id="c2")
    stream("text", "lo")
    stream("tool_args", " 1}", name="add", call_id="c1")
    assert stream.text() == "Hello" and stream.text("thinking") == "hmm"
    assert [d.snapshot for d in out] == ["Hel", "hmm", '{"a":', '{"x":', "Hello", '{"a": 1}']
    assert all(isinstance(d, StreamDelta) and d.message_id == message_id for d in out)
    assert [d.call_id for d in out if d.kind == "tool_args"] == ["c1", "c2", "c1"]


def test_an_old_deltas_snapshot_is_the_text_up_to_that_delta():
    out: list = []
    stream = MessageStream(*_ids(), out.append)
    for piece in ("a", "b", "c"):
        stream("text", piece)
    assert [d.snapshot for d in out] == ["a", "ab", "abc"]  # read after the stream grew


def test_a_silent_stream_builds_no_signal_and_still_accumulates():
    built: list = []
    stream = MessageStream(*_ids(), built.append, lambda: False)  # nobody listens
    stream("text", "x")
    silent = MessageStream(*_ids())
    silent("text", "y")
    assert not built and stream.text() == "x" and silent.text() == "y"


def test_a_stream_is_truthy_once_text_or_thinking_arrived():
    stream = MessageStream(*_ids())
    assert not stream
    stream("tool_args", "{}", call_id="c")
    assert not stream
    stream("thinking", "t")
    assert stream


def test_unsubscribe_removes_every_subscription_of_a_handler_only():
    bus = Observers()
    seen: list = []
    other: list = []
    bus.subscribe((RunStart,), seen.append)
    bus.subscribe((RunEnd,), seen.append)
    bus.subscribe((), other.append)
    assert bus.unsubscribe(seen.append) is True
    assert bus.unsubscribe(seen.append) is False
    bus.emit(RunStart(branch_id=uuid.uuid4(), run_id=uuid.uuid4(), operation="x"))
    assert seen == [] and len(other) == 1 and len(bus) == 1


def test_clear_keeps_held_subscriptions():
    bus = Observers()
    mine: list = []
    views: list = []
    bus.subscribe((MessageAdded,), mine.append)
    stop = bus.subscribe((MessageAdded,), views.append, held=True)
    bus.clear()
    bus.emit(MessageAdded(branch_id=uuid.uuid4(), message=None))
    assert mine == [] and len(views) == 1
    stop()
    assert not bus


def test_message_retracted_names_the_message_and_the_reason():
    from lion_nb.signals import MessageRetracted, Signal

    branch_id, message_id = _ids()
    signal = MessageRetracted(branch_id=branch_id, message_id=message_id, reason="worker died")
    assert isinstance(signal, Signal) and signal.at > 0
    assert (signal.message_id, signal.reason) == (message_id, "worker died")
