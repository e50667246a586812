"""Building a flow: nodes, dependencies, cycles, sessions, bad input."""

from __future__ import annotations

import pytest

from lion_nb import Branch
from lion_nb.errors import OperationError
from lion_nb.flow import Flow
from lion_nb.flow.node import Operation, Status
from lion_nb.session.session import Session
from tests.support.scripted import scripted


def test_add_returns_the_node_with_its_parameters_and_dependencies():
    b = Branch(chat_model=scripted("x"))
    flow = Flow()
    first = flow.add("communicate", instruction="Outline a talk on tides", branch=b)
    second = flow.add("communicate", depends_on=first, instruction="Write the introduction")
    assert isinstance(first, Operation) and first.status is Status.PENDING
    # a chat verb's node keeps what it streamed when the flow is stopped (on_stop="record")
    assert first.parameters == {"instruction": "Outline a talk on tides", "on_stop": "record"}
    assert first.branch_id == b.id and second.branch_id is None
    assert second.depends_on == (first.id,) and flow.dependencies(second) == [first]
    assert flow.dependents(first) == [second] and flow.nodes == [first, second]
    assert len(flow) == 2 and flow[first.id] is first and flow.given_branch(second) is None


def test_a_cycle_is_rejected_when_added_and_nothing_changes():
    flow = Flow()
    a = flow.add("chat")
    b = flow.add("chat", depends_on=[a])
    c = flow.add("chat", depends_on=[b])
    with pytest.raises(ValueError, match="cycle"):
        flow.add_edge(c, a)  # a -> b -> c -> a
    with pytest.raises(ValueError, match="cycle"):
        flow.add_edge(a, a)
    assert a.depends_on == () and c.depends_on == (b.id,)
    flow.add_edge(a, c)  # a shortcut is no cycle
    assert c.depends_on == (b.id, a.id)
    flow.add_edge(a, c)  # idempotent
    assert c.depends_on == (b.id, a.id)


def test_dependencies_must_be_nodes_of_this_flow():
    other = Flow().add("chat")
    flow = Flow()
    with pytest.raises(ValueError, match="is not a node of this flow"):
        flow.add("chat", depends_on=[other])
    with pytest.raises(ValueError, match="is not a node of this flow"):
        flow.add("chat", depends_on=[other.id])
    assert len(flow) == 0


def test_operation_names_are_checked_when_a_branch_is_given():
    session = Session()
    b = session.new_branch()

    async def summarise(branch, text: str) -> str:
        return text[:3]

    session.register_operation("summarise", summarise)
    flow = Flow(session)
    flow.add("summarise", branch=b, text="abcdef")
    with pytest.raises(OperationError, match="Unknown operation 'teleport'"):
        flow.add("teleport", branch=b)
    with pytest.raises(TypeError, match="operation must be a name"):
        flow.add(summarise, branch=b)  # type: ignore[arg-type]
    assert len(flow) == 1


def test_an_unknown_operation_without_a_branch_is_refused_when_added():
    session = Session()
    flow = Flow(session)
    first = flow.add("communicate", instruction="x", branch=Branch(chat_model=scripted("x")))
    with pytest.raises(OperationError, match="Unknown operation 'teleport'"):
        flow.add("teleport", depends_on=[first])
    assert len(flow) == 1

    async def teleport(branch, **kw):
        return "arrived"

    session.register_operation("teleport", teleport)  # once registered, the name resolves
    assert flow.add("teleport", depends_on=[first]).operation == "teleport"
    assert session.get_operation("communicate") is Branch.communicate
    assert session.get_operation("teleport") is teleport
    assert session.get_operation("nowhere") is None


def test_branches_join_the_flows_session_and_another_sessions_branch_is_refused():
    mine, theirs = Session(), Session()
    loose = Branch()
    flow = Flow(mine)
    flow.add("chat", branch=loose)
    assert loose.session is mine
    with pytest.raises(ValueError, match="belongs to another session"):
        flow.add("chat", branch=theirs.new_branch())
    with pytest.raises(TypeError, match="takes a Branch"):
        flow.add("chat", branch="main")  # type: ignore[arg-type]


def test_a_flow_without_session_uses_the_first_branchs_session():
    session = Session()
    b = session.new_branch()
    flow = Flow()
    flow.add("chat", branch=b)
    assert flow.session is session


def test_subscribers_hear_of_changes_and_a_failing_one_changes_nothing(caplog):
    flow = Flow()
    node = flow.add("chat")
    heard: list = []
    flow.subscribe(lambda n: 1 / 0)
    stop = flow.subscribe(heard.append)
    flow.notify(node)
    stop()
    flow.notify(node)
    assert heard == [node] and "flow subscriber" in caplog.text


def test_repr_counts_statuses():
    flow = Flow(name="talk")
    flow.add("chat")
    assert repr(flow) == "<Flow talk pending=1>"
    assert repr(Flow()) == "<Flow empty>"


def test_node_name_names_the_node_and_name_stays_an_operation_parameter():
    session = Session()

    async def greet(branch, name: str) -> str:
        return f"hello {name}"

    session.register_operation("greet", greet)
    flow = Flow(session)
    node = flow.add("greet", branch=session.new_branch(), name="Ann", node_name="greeting")
    assert node.parameters == {"name": "Ann"} and node.name == "greeting"
    assert node.title() == "greeting" and node.label() == "Ann"
    kept = flow.add("ReAct", instruction="x", on_stop="discard")  # given: not overridden
    assert kept.parameters == {"instruction": "x", "on_stop": "discard"}
    assert "on_stop" not in flow.add("chat", instruction="x").parameters  # records nothing
