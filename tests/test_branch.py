import json

import pytest
from helpers_core import scripted

from lion_nb import Branch, Session, iModel
from lion_nb.messages import System


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
