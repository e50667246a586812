"""What a Ray node relays while nobody watches its stream (B8): no per-token deltas,
yet the same results and messages; a watcher that appears mid-run (FlowView opening the node)
gets the text so far, then live deltas; a stopped node keeps what it streamed either way."""

from __future__ import annotations

import asyncio
import contextlib
import sys

import pytest
from ray import cloudpickle

from lion_nb import Branch
from lion_nb.flow import Flow
from lion_nb.flow.node import Status
from lion_nb.flow.ray_engine import _NodeLink
from lion_nb.session.session import Session
from lion_nb.signals import MessageAdded, RunStart, StreamDelta
from lion_nb.viewmodels.flow import FlowViewModel
from tests.support.scripted import scripted
from tests.support.waiting import until

cloudpickle.register_pickle_by_value(sys.modules[__name__])

pytestmark = pytest.mark.usefixtures("ray_local")

WORDS = [f"w{i} " for i in range(20)]


@pytest.fixture
def relayed(monkeypatch):
    """The batches the notebook received from the relay: [(node key, [event kind, ...])]."""
    batches: list[tuple[str, list[str]]] = []
    apply = _NodeLink.apply

    def counting(self, attempt, events):
        batches.append((str(self.node.id), [e[0] for e in events]))
        return apply(self, attempt, events)

    monkeypatch.setattr(_NodeLink, "apply", counting)
    return batches


async def _two_nodes(watch: bool) -> tuple[Flow, list, list]:
    session = Session()
    template = session.new_branch(chat_model=scripted(default_reply={"chunks": WORDS}))
    flow = Flow(session)
    first = flow.add("communicate", instruction="one", branch=template)
    flow.add("communicate", instruction="two", depends_on=[first])
    added: list = []
    session.observe(MessageAdded, handler=added.append)  # messages: not the stream
    deltas: list = []
    if watch:
        session.observe(StreamDelta, handler=deltas.append)
    results = await flow.run(engine="ray")
    return flow, [results[n.id] for n in flow.nodes], [added, deltas]


def _said(flow: Flow) -> list[list[tuple[str, str, bool]]]:
    return [
        [(m.role, m.text, bool(m.metadata.get("stopped"))) for m in n.branch.messages]
        for n in flow.nodes
    ]


async def test_an_unwatched_flow_relays_no_deltas_yet_records_the_same(relayed):
    quiet, quiet_results, (quiet_added, quiet_deltas) = await _two_nodes(watch=False)
    unwatched = [kind for _, kinds in relayed for kind in kinds]
    relayed.clear()
    loud, loud_results, (loud_added, loud_deltas) = await _two_nodes(watch=True)
    watched = [kind for _, kinds in relayed for kind in kinds]

    assert unwatched.count("delta") == 0 and not quiet_deltas
    assert watched.count("delta") > 0 and loud_deltas  # the same flow, watched: they travel
    # the same results, messages (with the worker's ids, landed live, once each, in order)
    assert quiet_results == loud_results == ["".join(WORDS)] * 2
    assert _said(quiet) == _said(loud)
    for flow, added in ((quiet, quiet_added), (loud, loud_added)):
        ids = [m.id for n in flow.nodes for m in n.branch.messages if m.role != "system"]
        assert [s.message.id for s in added] == list(dict.fromkeys(ids))
    assert all(n.status is Status.COMPLETED for n in (*quiet.nodes, *loud.nodes))


async def test_a_flow_view_follows_only_the_node_it_opens_and_gets_its_text_so_far(relayed):
    words = [f"w{i} " for i in range(60)]
    b = Branch(chat_model=scripted({"chunks": words, "delay": 0.1}))
    flow = Flow()
    node = flow.add("communicate", instruction="stream it", branch=b)
    starts: list = []
    flow.session.observe(RunStart, handler=starts.append)
    view = FlowViewModel(flow)
    shown: list[str] = []  # the open transcript's reply at each change
    view.on_change = lambda _: shown.append("".join(t for _, t in view.transcript()[1]))
    view.attach()  # rows only: the node's stream is not watched
    task = asyncio.create_task(flow.run(engine="ray"))
    await until(lambda: starts, 60, "the node's run, live")
    await asyncio.sleep(1.0)  # the worker writes on, unwatched
    assert not any(kind == "delta" for _, kinds in relayed for kind in kinds)
    view.select(node)  # FlowView's open: from now on the stream is watched
    await until(lambda: any(shown), 30, "the reply so far")
    first = next(text for text in shown if text)
    assert len(first.split()) >= 2  # what was written before, in one go
    await task
    view.detach()
    growing = [text for text in shown if text]
    assert growing[-1] != first and growing[-1].startswith(first)  # then live
    assert node.response == "".join(words) and b.messages[-1].text == "".join(words)
    deltas = [kinds.count("delta") for _, kinds in relayed]
    assert 0 < sum(deltas) < len(words)  # the text so far travelled as one delta


async def test_a_stopped_unwatched_node_keeps_what_it_streamed(relayed):
    words = [f"w{i} " for i in range(200)]
    b = Branch(chat_model=scripted({"chunks": words, "delay": 0.02}))
    flow = Flow()
    node = flow.add("communicate", instruction="go", branch=b)
    starts: list = []
    b.observe(RunStart, handler=starts.append)
    task = asyncio.create_task(flow.run(engine="ray"))
    await until(lambda: starts, 60, "the node's run, live")
    await asyncio.sleep(1.0)
    assert flow.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert node.status is Status.STOPPED and node.error is None
    assert not any(kind == "delta" for _, kinds in relayed for kind in kinds)
    # the worker's stopped turn, with what it streamed, landed before the node settled
    assert [(m.role, bool(m.metadata.get("stopped"))) for m in b.messages] == [
        ("user", False),
        ("assistant", True),
    ]
    kept = b.messages[-1].text
    assert kept and "".join(words).startswith(kept) and kept != "".join(words)
