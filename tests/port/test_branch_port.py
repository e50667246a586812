"""``BranchPort``: the one way operations reach a branch."""

import uuid

from lion_nb import Branch
from lion_nb.messages import Instruction
from lion_nb.port.branch_port import BranchPort
from lion_nb.signals import MessageAdded, StreamDelta
from tests.support.scripted import recording_branch, scripted


def test_of_builds_the_branch_port_and_keeps_a_port_as_it_is():
    branch = Branch()
    port = BranchPort.of(branch)
    assert isinstance(port, BranchPort) and port.branch is branch and port.id == branch.id
    assert BranchPort.of(port) is port


async def test_history_follows_the_chosen_progression():
    branch = Branch(system="s", chat_model=scripted("a", "b"))
    await branch.communicate("one")
    await branch.communicate("two")
    port = branch.port()
    assert port.history() == list(branch.messages)
    chosen = [branch.messages[0].id, branch.messages[3].id]
    assert port.history(chosen) == [branch.messages[0], branch.messages[3]]
    assert port.history([]) == []


def test_record_emits_message_added_and_stream_emits_snapshots():
    branch, seen = recording_branch()
    port = branch.port()
    ins = port.record(Instruction(instruction="hi"))
    assert branch.messages[-1] is ins
    assert isinstance(seen[-1], MessageAdded) and seen[-1].message is ins
    message_id = uuid.uuid4()
    stream = port.stream(message_id)
    for piece in ("Hel", "lo"):
        stream("text", piece)
    deltas = [s for s in seen if isinstance(s, StreamDelta)]
    assert [(d.delta, d.snapshot, d.message_id) for d in deltas] == [
        ("Hel", "Hel", message_id),
        ("lo", "Hello", message_id),
    ]
    assert stream.text() == "Hello"


def test_a_per_call_model_is_used_but_never_adopted():
    own, other = scripted("own"), scripted("other")
    branch = Branch(chat_model=own)
    call = branch.port().for_call(chat_model=other)
    assert call.chat_model is other and call.parse_model is own
    assert call.adopt_chat_model(other) is False
    assert branch.chat_model is own
    assert branch.port().adopt_chat_model(other) is True  # run(chat_model=...) as ADR D3 says
    assert branch.chat_model is other


def test_parse_model_prefers_the_ports_then_the_branchs():
    chat, parse, override = scripted("c"), scripted("p"), scripted("o")
    assert Branch(chat_model=chat).port().parse_model is chat
    assert Branch(chat_model=chat, parse_model=parse).port().parse_model is parse
    port = BranchPort(Branch(chat_model=chat), parse_model=override)
    assert port.parse_model is override


def test_context_additions_run_each_provider_and_skip_none():
    branch = Branch()
    calls = []

    def memory(b, instruction):
        calls.append((b, instruction))
        return {"memory": "likes tea"}

    branch.context_providers += [memory, lambda b, i: None]
    assert branch.port().context_additions("hi") == [{"memory": "likes tea"}]
    assert calls == [(branch, "hi")]


async def test_operations_take_a_port_or_a_branch_alike():
    from lion_nb.operations.communicate import communicate
    from lion_nb.operations.types import ChatParam

    a = Branch(chat_model=scripted("x"))
    b = Branch(chat_model=scripted("x"))
    assert await communicate(a, "q", ChatParam()) == await communicate(b.port(), "q", ChatParam())
    assert [m.role for m in a.messages] == [m.role for m in b.messages] == ["user", "assistant"]


def test_retract_takes_a_message_back_through_the_port():
    from lion_nb.signals import MessageRetracted

    branch, seen = recording_branch(system="s")
    port = branch.port()
    ins = port.record(Instruction(instruction="hi"))
    assert port.retract(ins.id, "a dead worker's message") is ins
    assert [m.role for m in port.messages] == ["system"] and ins.id not in branch.progression
    assert isinstance(seen[-1], MessageRetracted) and seen[-1].message_id == ins.id
    assert seen[-1].reason == "a dead worker's message"
