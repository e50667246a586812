"""The worker side, run in this process with stand-ins for the relay: what an attempt sends
(its signals and its messages, live), what it returns, and that a failing live channel never
changes the record."""

from __future__ import annotations

import asyncio
import time

from lion_nb import Branch
from lion_nb.errors import ExecutionError
from lion_nb.flow.errors import RemoteError
from lion_nb.flow.node import Operation
from lion_nb.flow.payload import build_payload
from lion_nb.flow.relay import Relay
from lion_nb.flow.worker import _attempt, _Outbox, portable_error, transport
from lion_nb.messages import MESSAGE, MESSAGE_LIST, Instruction
from lion_nb.signals import MessageAdded, MessageRetracted, RunFailed, StreamDelta
from tests.support.scripted import scripted


class _Method:
    def __init__(self, fn):
        self.fn = fn

    def remote(self, *args):
        return asyncio.ensure_future(self.fn(*args))


class LocalRelay:
    """The relay actor's class, called in-process (``.push.remote`` -> awaitable)."""

    def __init__(self, fail: bool = False) -> None:
        self.relay = Relay()
        self.fail = fail
        self.push = _Method(self._push)
        self.watch = _Method(self.relay.watch)
        self.watch_changed = _Method(self.relay.watch_changed)

    async def _push(self, *args):
        if self.fail:
            raise ConnectionError("relay gone")
        await self.relay.push(*args)


async def test_an_attempt_streams_its_signals_and_returns_its_messages():
    branch = Branch(system="s", chat_model=scripted({"chunks": ["a ", "b"], "delay": 0.03}))
    node = Operation("communicate", {"instruction": "go"})
    relay = LocalRelay()
    record = await _attempt(relay, "ch", build_payload(node, branch))
    assert record["ok"] and record["response"] == "a b"
    messages = MESSAGE_LIST.validate_python(record["messages"])
    assert [(m.role, m.text) for m in messages] == [("user", "go"), ("assistant", "a b")]
    cursor, entries = await relay.relay.pull("ch", 0, 0.01)
    kinds = [e[0] for _, attempt, events in entries for e in events]
    assert all(attempt == record["attempt"] for _, attempt, _ in entries)
    assert kinds[0] == "attempt" and kinds[-1] == "end"
    # RunStart, CallStart, the reply's deltas, then each recorded message (communicate records
    # both at the end), live and in order, then CallEnd and RunEnd; the record still carries
    # the messages too
    assert kinds[1:-1] == [
        *("signal", "signal"),
        *("delta", "delta", "message", "message"),
        *("signal", "signal"),
    ]
    events = [e for _, _, batch in entries for e in batch]
    live = MESSAGE_LIST.validate_python([e[1] for e in events if e[0] == "message"])
    assert live == messages
    assert len(branch.messages) == 1  # the notebook's branch is changed only by the engine
    assert (await relay.relay.pull("ch", cursor, 0.01)) == (cursor, [])


async def test_a_failing_live_channel_does_not_change_the_record(caplog):
    branch = Branch(chat_model=scripted("fine"))
    record = await _attempt(
        LocalRelay(fail=True), "ch", build_payload(Operation("chat", {"instruction": "x"}), branch)
    )
    assert record["ok"] and record["response"] == "fine"
    assert "live events could not be sent" in caplog.text


async def test_an_operation_error_travels_as_data():
    branch = Branch(chat_model=scripted(ValueError("no")))
    record = await _attempt(
        LocalRelay(), "ch", build_payload(Operation("chat", {"instruction": "x"}), branch)
    )
    assert not record["ok"] and type(record["error"]) is ExecutionError
    assert "ValueError('no')" in str(record["error"]) and record["messages"] == []


def test_unpicklable_errors_and_signals_are_described_not_lost():
    class Local(Exception):  # a class defined in a function pickles by value...
        def __init__(self, a, b):  # ...but cannot be rebuilt from its args
            super().__init__(a)
            self.b = b

    described = portable_error(Local("broken", 2))
    assert isinstance(described, RemoteError) and "Local: broken" in str(described)
    assert "Local: broken" in described.remote_traceback
    import uuid

    bid = uuid.uuid4()
    ins = Instruction(instruction="hi")
    kind, data = transport(MessageAdded(branch_id=bid, message=ins))
    assert kind == "message" and MESSAGE.validate_python(data) == ins
    assert transport(MessageRetracted(branch_id=bid, message_id=ins.id, reason="r")) == (
        "retract", ins.id, "r",
    )  # fmt: skip
    delta = transport(StreamDelta(branch_id=bid, message_id=bid, kind="text", delta="x"))
    assert delta == ("delta", bid, "text", "x", None, None)
    failed = transport(RunFailed(branch_id=bid, run_id=bid, operation="chat", duration_ms=1,
                                 error=Local("e", 1)))  # fmt: skip
    assert failed is not None and isinstance(failed[1].error, RemoteError)


async def test_relay_channels_are_separate_and_survive_a_restart():
    relay = Relay()
    await relay.push("a", "k", "t", [1])
    await relay.push("b", "k", "t", [2])
    assert await relay.pull("a", 0, 0.01) == (1, [("k", "t", [1])])
    assert await relay.pull("a", 1, 0.01) == (1, [])
    fresh = Relay()  # restarted: empty, while the notebook's cursor is at 5
    await fresh.push("a", "k", "t", [3])
    assert await fresh.pull("a", 5, 0.01) == (6, [("k", "t", [3])])
    await relay.close("a")
    assert await relay.pull("b", 0, 0.01) == (1, [("k", "t", [2])])


async def test_a_relay_pull_gathers_what_two_workers_push_into_one_return():
    """At most one return with entries per ``gather_s``: a pull that comes sooner waits, and
    the pushes of both workers meanwhile arrive together (half the calls, each costing CPU)."""
    relay = Relay()
    await relay.push("c", "node 1", "t", [1])
    cursor, first = await relay.pull("c", 0, 1.0, 0.3)  # the first return is at once
    assert [key for key, _, _ in first] == ["node 1"]
    asked = time.monotonic()
    later = asyncio.create_task(relay.pull("c", cursor, 1.0, 0.3))
    await relay.push("c", "node 1", "t", [2])
    await asyncio.sleep(0.1)
    await relay.push("c", "node 2", "t", [3])  # pushed while the pull waits out its gap
    cursor, entries = await later
    assert time.monotonic() - asked >= 0.15
    assert [(key, events) for key, _, events in entries] == [("node 1", [2]), ("node 2", [3])]
    assert cursor == 3


async def test_closing_the_outbox_sends_the_last_events_without_waiting_for_the_batch():
    relay = LocalRelay()
    outbox = _Outbox(relay, "c", "k", "a", flush_s=30.0)  # a batch would gather for 30 s
    pump = asyncio.create_task(outbox.pump())
    outbox.put(("attempt", {}))  # the first event of a quiet spell goes at once
    await asyncio.sleep(0.05)
    outbox.put(("end", None))  # ... the next one would wait for the batch window
    await asyncio.wait_for(outbox.close(pump), 5.0)  # the node's end is not held back
    _, entries = await relay.relay.pull("c", 0, 0.0)
    assert [event[0] for _, _, events in entries for event in events] == ["attempt", "end"]


async def test_an_unwatched_attempt_keeps_its_deltas_then_sends_the_text_so_far_when_watched():
    words = [f"w{i} " for i in range(30)]
    branch = Branch(chat_model=scripted({"chunks": words, "delay": 0.02}))
    node = Operation("communicate", {"instruction": "go"})
    relay = LocalRelay()
    parts = {**build_payload(node, branch), "watched": False}
    attempt = asyncio.ensure_future(_attempt(relay, "ch", parts))
    await asyncio.sleep(0.3)  # about half the reply written, unwatched
    _, entries = await relay.relay.pull("ch", 0, 0.01)
    assert "delta" not in [e[0] for _, _, events in entries for e in events]
    await relay.relay.watch("ch", parts["node_id"], True)  # the notebook: watched from now on
    record = await attempt
    _, entries = await relay.relay.pull("ch", 0, 0.01)
    deltas = [e for _, _, events in entries for e in events if e[0] == "delta"]
    # first the text so far, in one delta, then one per word; together the whole reply
    assert len(deltas[0][3].split()) >= 2 and all(len(d[3].split()) == 1 for d in deltas[1:])
    assert "".join(d[3] for d in deltas) == "".join(words) == record["response"]


async def test_an_attempt_nobody_watches_sends_the_same_messages_without_deltas():
    async def run(watched: bool) -> tuple[list[str], list[tuple[str, str]]]:
        branch = Branch(chat_model=scripted({"chunks": ["a ", "b ", "c"], "delay": 0.01}))
        parts = build_payload(Operation("communicate", {"instruction": "go"}), branch)
        relay = LocalRelay()
        record = await _attempt(relay, "ch", {**parts, "watched": watched})
        _, entries = await relay.relay.pull("ch", 0, 0.01)
        kinds = [e[0] for _, _, batch in entries for e in batch]
        said = [(m.role, m.text) for m in MESSAGE_LIST.validate_python(record["messages"])]
        return kinds, said

    (quiet, quiet_said), (loud, loud_said) = await run(False), await run(True)
    assert "delta" not in quiet and loud.count("delta") == 3
    # the rest alike and in order: lifecycle signals and both messages, live
    assert [k for k in loud if k != "delta"] == quiet and quiet.count("message") == 2
    assert quiet_said == loud_said == [("user", "go"), ("assistant", "a b c")]
