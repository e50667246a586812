"""``Branch.fork_at_token`` and ``Conversation.afork_at_token`` on the scripted model."""

from __future__ import annotations

import pytest

from lion_nb import Branch, Session, iModel
from lion_nb.errors import ConfigurationError, ContextWindowError
from lion_nb.messages import AssistantResponse, Instruction
from lion_nb.session.conversation import Conversation
from lion_nb.signals import CallEnd, CallStart, RunEnd, RunStart, Signal, StreamDelta

STORY = [
    {"text": "Once", "logprob": -0.2, "top": [["Once", -0.2], ["The", -1.9]]},
    {"text": " a", "logprob": -0.1, "top": [[" a", -0.1], [" upon", -2.6]]},
    {"text": " cat", "logprob": -2.3, "top": [[" dog", -0.4], [" cat", -2.3], [" fox", -3.1]]},
    {"text": " slept", "logprob": -0.9, "top": [[" slept", -0.9], [" ran", -1.2]]},
]
CONTINUATION = [
    {"text": " barked", "logprob": -0.3, "top": [[" barked", -0.3], [" sat", -1.5]]},
    {"text": ".", "logprob": -0.05, "top": [[".", -0.05], ["!", -3.0]]},
]


def story_branch(*more: object, session: Session | None = None) -> Branch:
    model = iModel(provider="scripted", replies=[{"tokens": STORY}, *more], logprobs=3)
    branch = Branch(system="Tell stories.", chat_model=model)
    if session is not None:
        session.include_branches(branch)
    return branch


async def test_the_fork_starts_with_the_prefix_and_the_chosen_token_and_continues() -> None:
    branch = story_branch({"tokens": CONTINUATION})
    await branch.communicate("A story, please.")
    original = branch.messages[-1]
    assert isinstance(original, AssistantResponse)
    before = list(branch.messages)

    fork = await branch.fork_at_token(original.id, 2, " dog")

    assert list(branch.messages) == before  # the original is untouched
    assert list(fork.messages)[:-1] == before[:-1]  # the same instruction, shared
    reply = fork.messages[-1]
    assert isinstance(reply, AssistantResponse)
    assert reply.response == "Once a dog barked."
    assert reply.tokens is not None
    assert [t.text for t in reply.tokens] == ["Once", " a", " dog", " barked", "."]
    chosen = reply.tokens[2]
    assert chosen.logprob == -0.4
    assert chosen.top == [(" dog", -0.4), (" cat", -2.3), (" fox", -3.1)]
    origin = fork.metadata["forked_from"]
    assert origin["branch_id"] == str(branch.id)
    assert origin["message_id"] == str(original.id)
    assert (origin["token_index"], origin["token"]) == (2, " dog")
    assert reply.metadata["forked_from"]["token_index"] == 2
    sent = branch.chat_model.provider.requests[-1]
    assert sent.prefix == "Once a dog"
    assert sent.messages[-1]["role"] == "user"  # the prefix is not a message of the history


async def test_the_fork_streams_the_whole_reply_under_one_run() -> None:
    branch = story_branch({"tokens": CONTINUATION})
    await branch.communicate("A story, please.")
    seen: list[Signal] = []

    def follow(fork: Branch) -> None:
        fork.subscribe((StreamDelta, RunStart, RunEnd), seen.append)

    fork = await branch.fork_at_token(-1, 1, " upon", on_fork=follow)
    assert isinstance(seen[0], RunStart) and isinstance(seen[-1], RunEnd)
    texts = [s for s in seen if isinstance(s, StreamDelta) and s.kind == "text"]
    assert texts[0].delta == "Once upon" and texts[-1].snapshot == fork.messages[-1].text
    tokens = [s for s in seen if isinstance(s, StreamDelta) and s.kind == "tokens"]
    assert [s.token_index for s in tokens] == [0, 2, 3]


async def test_a_token_not_among_the_alternatives_gets_an_upper_bound() -> None:
    branch = story_branch({"tokens": CONTINUATION})
    await branch.communicate("A story, please.")
    fork = await branch.fork_at_token(-1, 2, " dragon")
    reply = fork.messages[-1]
    assert isinstance(reply, AssistantResponse) and reply.tokens is not None
    assert reply.tokens[2].text == " dragon" and reply.tokens[2].logprob == -3.1


async def test_bad_positions_and_replies_without_tokens_are_refused() -> None:
    branch = Branch(chat_model=iModel(provider="scripted", replies=["plain", "x"]))
    await branch.communicate("hi")
    with pytest.raises(ValueError, match="logprobs=K"):
        await branch.fork_at_token(-1, 1, "y")
    with pytest.raises(ValueError, match="not an assistant reply"):
        await branch.fork_at_token(0, 0, "y")
    with pytest.raises(KeyError):
        await branch.fork_at_token("00000000-0000-0000-0000-000000000000", 0, "y")
    story = story_branch()
    await story.communicate("A story")
    with pytest.raises(IndexError, match="outside the reply"):
        await story.fork_at_token(-1, 9, "y")


async def test_a_provider_that_cannot_continue_leaves_no_fork_behind() -> None:
    session = Session()
    branch = Branch(chat_model=iModel(provider="openai", model="m", api_key="sk-x"))
    session.include_branches(branch)
    reply = AssistantResponse(response="Hi", tokens=[{"text": "Hi", "logprob": -0.1}])
    branch.add_message(Instruction(instruction="hello"))
    branch.add_message(reply)
    count = len(session.branches)
    with pytest.raises(ConfigurationError, match="prefill="):
        await branch.fork_at_token(reply.id, 0, "Hello")
    assert len(session.branches) == count


async def test_the_conversation_shows_the_fork_among_the_alternatives() -> None:
    session = Session()
    branch = story_branch({"tokens": CONTINUATION}, session=session)
    conv = Conversation(branch)
    await conv.asend("A story, please.")
    shown: list[Branch] = []
    conv.on_show = shown.append
    fork = await conv.afork_at_token(2, 2, " dog")
    assert conv.branch is fork and shown == [fork]
    assert conv.alternatives(2) == [branch, fork]
    assert conv.position(2) == (2, 2)
    assert conv.previous_alternative(2) is branch


async def test_forking_at_the_first_token_without_text_is_a_plain_new_reply() -> None:
    session = Session()
    model = iModel(provider="openai", model="m", api_key="sk-x")  # cannot continue a prefix
    branch = Branch(chat_model=model)
    session.include_branches(branch)
    branch.add_message(Instruction(instruction="hello"))
    reply = AssistantResponse(response="Hi", tokens=[{"text": "Hi", "logprob": -0.1}])
    branch.add_message(reply)
    scripted = iModel(provider="scripted", replies=["Hello!"])
    fork = await branch.fork_at_token(reply.id, 0, "", chat_model=scripted)
    assert fork.messages[-1].text == "Hello!"
    assert scripted.provider.requests[-1].prefix is None
    sent = fork.metadata["forked_from"]
    assert (sent["token_index"], sent["token"]) == (0, "")


async def test_the_fork_is_one_model_call_with_its_signals() -> None:
    branch = story_branch({"tokens": CONTINUATION})
    await branch.communicate("A story, please.")
    seen: list[Signal] = []

    def follow(fork: Branch) -> None:
        fork.subscribe((CallStart, CallEnd), seen.append)

    fork = await branch.fork_at_token(-1, 2, " dog", on_fork=follow)
    start, end = seen
    assert isinstance(start, CallStart) and isinstance(end, CallEnd)
    assert start.instruction is None  # the instruction is in the branch already
    assert start.records and start.message_id == end.message_id == fork.messages[-1].id
    assert end.recorded and end.outcome == "done"


async def test_a_fork_that_cannot_fit_the_window_is_refused_before_sending() -> None:
    session = Session()
    model = iModel(provider="scripted", replies=["never sent"], context_window=64)
    branch = Branch(chat_model=model)
    session.include_branches(branch)
    branch.add_message(Instruction(instruction="Tell me a long story. " * 40))
    reply = AssistantResponse(response="Once", tokens=[{"text": "Once", "logprob": -0.2}])
    branch.add_message(reply)
    count = len(session.branches)
    with pytest.raises(ContextWindowError):
        await branch.fork_at_token(reply.id, 1, " upon")
    assert len(session.branches) == count
    assert model.provider.requests == []
