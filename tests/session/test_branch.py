import json
import uuid

import pytest

from lion_nb import Branch, Session, iModel
from lion_nb.messages import Instruction, Messages, System
from lion_nb.signals import MessageRetracted
from tests.support.scripted import scripted


async def test_to_dict_round_trips_every_message_and_never_a_key():
    model = iModel(
        provider="openai", model="m", api_key="sk-topsecret-999", base_url="http://127.0.0.1:9/v1"
    )
    branch = Branch(system="s", chat_model=model, name="demo")
    branch._chat_model = scripted("a", "b")
    await branch.chat_and_record("one")
    await branch.communicate("two")
    branch._chat_model = model
    data = branch.to_dict()
    text = json.dumps(data)
    assert "sk-topsecret" not in text
    restored = Branch.from_dict(json.loads(text))
    assert list(restored.messages) == list(branch.messages)
    assert restored.id == branch.id and restored.name == "demo"
    assert restored.chat_model.provider_name == "openai" and restored.chat_model.model == "m"


def test_system_must_come_first():
    branch = Branch()
    branch.add_message(System(system="ok"))
    with pytest.raises(ValueError, match="first message"):
        branch.add_message(System(system="again"))


async def test_fork_copies_history_up_to_k_and_links_origin():
    session = Session()
    branch = session.new_branch(system="s", chat_model=scripted("a", "b", "c"), name="main")
    await branch.communicate("q1")
    await branch.communicate("q2")
    fork = branch.fork(2, name="alt")
    assert list(fork.messages) == list(branch.messages)[:3]
    assert fork.metadata["forked_from"]["branch_id"] == str(branch.id)
    assert fork.session is session and fork.id in session.branches
    await fork.communicate("q3-alt")
    assert len(fork.messages) == 5 and len(branch.messages) == 5
    assert fork.messages[-1].response == "c" and branch.messages[-1].response == "b"
    with pytest.raises(IndexError):
        branch.fork(99)


def test_messages_and_progression_are_exposed():
    branch = Branch(system="s")
    assert len(branch.messages) == 1 and list(branch.progression) == [branch.messages[0].id]
    assert branch.system.system == "s"


async def test_unobserve_detaches_one_handler_and_unobserve_all_leaves_views():
    branch = Branch(chat_model=scripted("a", "b", "c"))
    mine: list = []
    view: list = []
    branch.observe(handler=mine.append)
    stop = branch.subscribe((), view.append)
    assert branch.unobserve(mine.append) is True and branch.unobserve(mine.append) is False
    await branch.communicate("one")
    assert mine == [] and view
    branch.observe(handler=mine.append)
    branch.unobserve_all()  # a user's reset never detaches an open view
    count = len(view)
    await branch.communicate("two")
    assert mine == [] and len(view) > count
    stop()
    count = len(view)
    await branch.communicate("three")
    assert len(view) == count


async def test_session_unobserve_and_held_subscriptions():
    session = Session()
    branch = session.new_branch(chat_model=scripted("a", "b"))
    mine: list = []
    view: list = []
    session.observe(handler=mine.append)
    stop = session.subscribe((), view.append)
    session.unobserve_all()
    await branch.communicate("one")
    assert mine == [] and view
    assert session.unobserve(view.append) is True  # a held one can still be removed by name
    stop()


def test_restore_message_appends_without_message_added():
    branch = Branch()
    seen: list = []
    branch.observe(handler=seen.append)
    message = System(system="restored")
    branch.restore_message(message)
    assert list(branch.messages) == [message] and seen == []


def test_chat_model_or_none_never_resolves_a_model():
    branch = Branch()
    assert branch.chat_model_or_none is None
    model = scripted("x")
    branch.chat_model = model
    assert branch.chat_model_or_none is model


# ----- taking a message back ---------------------------------------------------------------------
async def test_retract_message_drops_it_from_messages_and_progression_and_says_why():
    branch = Branch(system="s", chat_model=scripted("a", "b"))
    await branch.communicate("one")
    await branch.communicate("two")
    seen: list = []
    branch.observe(handler=seen.append)
    gone = branch.messages[1]
    assert branch.retract_message(gone.id, reason="it never happened") is gone
    assert gone.id not in branch.messages and gone.id not in branch.progression
    assert [m.text for m in branch.messages] == ["s", "a", "two", "b"]
    assert len(branch.progression) == len(branch.messages) == 4
    assert [type(s) for s in seen] == [MessageRetracted]
    assert seen[0].message_id == gone.id and seen[0].reason == "it never happened"
    assert seen[0].branch_id == branch.id
    restored = Branch.from_dict(json.loads(json.dumps(branch.to_dict())))
    assert list(restored.messages) == list(branch.messages)
    assert list(restored.progression) == list(branch.progression)


def test_retracting_an_unknown_or_the_system_message_is_refused_and_changes_nothing():
    branch = Branch(system="s")
    seen: list = []
    branch.observe(handler=seen.append)
    unknown = uuid.uuid4()
    with pytest.raises(ValueError, match=str(unknown)):
        branch.retract_message(unknown, reason="x")
    with pytest.raises(ValueError, match="system message"):
        branch.retract_message(branch.messages[0].id, reason="x")
    assert len(branch.messages) == 1 and seen == []


def test_the_message_container_removes_one_message_and_keeps_the_order():
    messages = Messages()
    first, second, third = (Instruction(instruction=t) for t in ("1", "2", "3"))
    for m in (first, second, third):
        messages._append(m)
    assert messages._remove(second.id) is second
    assert list(messages) == [first, third] and list(messages.progression) == [first.id, third.id]
    assert messages.get(second.id) is None and second not in messages
    with pytest.raises(ValueError, match="not recorded"):
        messages._remove(second.id)
    with pytest.raises(ValueError, match="not recorded"):
        messages._remove(uuid.uuid4())
    messages._append(second)  # removed means gone: it can be recorded again, at the end
    assert [m.text for m in messages] == ["1", "3", "2"]
