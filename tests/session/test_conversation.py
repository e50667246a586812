"""The conversation, from code: regenerate, edit, alternatives, show, clear, Stop with
``on_stop="record"``, truncation + continue, and the context cut with ``fit_context=True`` —
on the scripted model, then on the embedded one. (Moved with the code from
tests/viewmodels/test_conversation.py; the view passes ``VIEW`` as its verb options.)"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lion_nb.errors import ContextWindowError, ProviderError
from lion_nb.messages import AssistantResponse, Instruction
from lion_nb.models.imodel import iModel
from lion_nb.operations.window import plan_context
from lion_nb.session.branch import Branch
from lion_nb.session.conversation import CONTINUE_PROMPT, Conversation, truncated
from lion_nb.session.session import Session
from lion_nb.signals import StreamDelta

SYSTEM = "You are terse."
VIEW = {"on_stop": "record", "fit_context": True}  # what a chat view passes to its verb


def scripted(*replies: Any, **kw: Any) -> iModel:
    return iModel(provider="scripted", replies=list(replies), **kw)


def ids(branch: Branch) -> list[Any]:
    return list(branch.progression)


async def two_turns() -> tuple[Conversation, Branch, iModel]:
    model = scripted("one", "two", default_reply="again")
    branch = Branch(system=SYSTEM, chat_model=model)
    conv = Conversation(branch, verb_kwargs=VIEW)
    await conv.asend("first?")
    await conv.asend("second?")
    return conv, branch, model


# -- regenerate, alternatives, show ---------------------------------------------------------


async def test_regenerate_forks_before_the_reply_and_never_changes_the_original() -> None:
    conv, original, model = await two_turns()
    before = ids(original)
    shown: list[Branch] = []
    conv.on_show = shown.append
    fork = await conv.aregenerate()
    assert ids(original) == before  # untouched: same messages, same ids
    assert conv.branch is fork and shown == [fork]
    assert ids(fork)[:4] == before[:4]  # system, first?, one, second? (the same instruction)
    assert fork.messages[4].response == "again" and fork.messages[4].id != before[4]
    assert fork.metadata["forked_from"] == {
        "branch_id": str(original.id),
        "at": str(before[3]),
        "index": 3,
    }
    assert fork.chat_model_or_none is original.chat_model_or_none
    # the model saw the history up to the instruction, as the first time
    assert [m["content"] for m in model.provider.requests[-1].messages] == [
        SYSTEM,
        "first?",
        "one",
        "second?",
    ]
    assert conv.alternatives(4) == [original, fork]
    assert conv.position(4) == (2, 2)
    assert conv.alternatives(3) == [fork]  # they share message 3
    assert conv.previous_alternative(4) is original
    conv.show(original)
    assert conv.branch is original and conv.alternatives(4) == [original, fork]
    assert conv.position(4) == (1, 2) and conv.previous_alternative(4) is fork


async def test_regenerate_an_earlier_reply_by_index() -> None:
    conv, original, _ = await two_turns()
    fork = await conv.aregenerate(index=2)
    assert [m.text for m in fork.messages] == [SYSTEM, "first?", "again"]
    assert ids(fork)[:2] == ids(original)[:2]
    assert conv.alternatives(2) == [original, fork]
    with pytest.raises(ValueError, match="not an assistant reply"):
        await conv.aregenerate(index=1)


async def test_edit_sends_the_new_text_on_a_fork() -> None:
    conv, original, model = await two_turns()
    before = ids(original)
    fork = await conv.aedit(3, "second, reworded?")
    assert ids(original) == before
    assert [m.text for m in fork.messages] == [
        SYSTEM,
        "first?",
        "one",
        "second, reworded?",
        "again",
    ]
    assert ids(fork)[:3] == before[:3] and ids(fork)[3] != before[3]
    assert fork.metadata["forked_from"]["index"] == 2
    assert conv.alternatives(3) == [original, fork]
    assert model.provider.requests[-1].messages[-1]["content"] == "second, reworded?"
    with pytest.raises(ValueError, match="not a user message"):
        await conv.aedit(2, "x")


async def test_three_alternatives_in_order_and_the_shown_one_stands_for_its_group() -> None:
    conv, original, _ = await two_turns()
    a = await conv.aregenerate()
    b = await conv.aregenerate()  # from a: a fork of a fork
    assert conv.alternatives(4) == [original, a, b]
    assert b.metadata["forked_from"]["branch_id"] == str(a.id)
    # a fork of the original after message 4 shares message 4: it is not another alternative
    later = original.fork(at=4)
    conv.show(later)
    assert conv.alternatives(4) == [later, a, b]
    assert conv.position(4) == (1, 3)


async def test_session_forks_made_in_code_are_alternatives_too() -> None:
    session = Session()
    model = scripted("one", "two")
    branch = session.new_branch(system=SYSTEM, chat_model=model)
    conv = Conversation(branch)
    await conv.asend("q?")
    other = branch.fork(at=1)  # in a cell
    other.add_message(AssistantResponse(response="hand-written"))
    assert conv.alternatives(2) == [branch, other]


async def test_clear_starts_afresh_and_keeps_the_old_one_reachable() -> None:
    conv, original, _ = await two_turns()

    def echo(x: str) -> str:
        return x

    original.register_tools(echo)
    fresh = conv.clear()
    assert conv.branch is fresh and [m.text for m in fresh.messages] == [SYSTEM]
    assert fresh.messages[0].id == original.messages[0].id
    assert fresh.chat_model_or_none is original.chat_model_or_none
    assert set(fresh.tools.tools) == set(original.tools.tools)
    assert conv.alternatives(1) == [original, fresh]
    assert conv.clear() is fresh  # nothing to clear


async def test_clear_without_a_system_message() -> None:
    branch = Branch(chat_model=scripted("one"))
    conv = Conversation(branch)
    await conv.asend("q?")
    fresh = conv.clear()
    assert len(fresh.messages) == 0 and fresh.metadata["forked_from"]["index"] == -1
    assert conv.alternatives(0) == [branch, fresh]


async def test_a_failed_regenerate_leaves_nothing_behind() -> None:
    conv, original, model = await two_turns()
    model.provider.add_replies(ProviderError("boom", provider="scripted"))
    model.provider.default_reply = None
    with pytest.raises(ProviderError):
        await conv.aregenerate()
    assert conv.branch is original and conv.branches == [original]


async def test_react_turns_are_tried_again_with_the_text_typed() -> None:
    reply = {"json": {"analysis": "ok", "extension_needed": False, "answer": "42"}}
    model = scripted(default_reply=reply)
    branch = Branch(system=SYSTEM, chat_model=model)
    conv = Conversation(branch, verb="ReAct", verb_kwargs={"max_extensions": 0})
    await conv.asend("what is six times seven?")
    first = branch.messages[1]
    assert isinstance(first, Instruction) and "six times seven" in first.text
    fork = await conv.aregenerate(index=2)
    # ReAct builds its prompt from the text typed (not from the recorded prompt): a new
    # instruction that says the same, so the replies are alternatives of one another
    assert fork.messages[1].text == first.text and fork.messages[1].id != first.id
    assert conv.alternatives(2) == [branch, fork]


# -- Stop records what the view showed ------------------------------------------------------


async def _stop_midway(conv: Conversation, send: Any, branch: Branch | None) -> None:
    """Stop ``send`` once "Three" has streamed on ``branch`` (None: on the branch it shows)."""
    seen = asyncio.Event()

    def watch(b: Branch) -> None:
        b.subscribe((StreamDelta,), lambda s: seen.set() if "Three" in s.snapshot else None)

    if branch is None:
        conv.on_show = watch
    else:
        watch(branch)
    task = asyncio.ensure_future(send)
    await asyncio.wait_for(seen.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_stop_records_the_instruction_and_the_partial_reply() -> None:
    model = scripted({"text": "One Two Three Four Five Six", "delay": 0.02})
    branch = Branch(system=SYSTEM, chat_model=model)
    conv = Conversation(branch, verb_kwargs={**VIEW, "guidance": "be brief"})
    streamed: list[Any] = []
    branch.subscribe((StreamDelta,), lambda s: streamed.append(s.message_id))
    await _stop_midway(conv, conv.asend("count"), branch)
    ins, reply = branch.messages[1], branch.messages[2]
    assert isinstance(ins, Instruction) and ins.instruction == "count"
    assert ins.guidance == "be brief"
    assert isinstance(reply, AssistantResponse)
    assert reply.response.startswith("One Two Three") and "Six" not in reply.response
    assert reply.metadata["stopped"] is True
    assert reply.id == streamed[-1]  # recorded under the id it streamed with
    assert not conv.running


async def test_communicate_cancelled_from_code_records_nothing() -> None:
    model = scripted({"text": "One Two Three Four Five Six", "delay": 0.02})
    branch = Branch(system=SYSTEM, chat_model=model)
    seen = asyncio.Event()
    branch.subscribe((StreamDelta,), lambda s: seen.set())
    task = asyncio.ensure_future(branch.communicate("count"))
    await seen.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(branch.messages) == 1  # the ADR's contract


async def test_stop_during_a_regenerate_keeps_the_fork_with_what_was_shown() -> None:
    conv, original, model = await two_turns()
    model.provider.add_replies({"text": "One Two Three Four Five Six", "delay": 0.02})
    await _stop_midway(conv, conv.aregenerate(), None)
    fork = conv.branch
    assert fork is not original and ids(fork)[:4] == ids(original)[:4]
    assert fork.messages[4].metadata["stopped"] is True
    assert conv.alternatives(4) == [original, fork]


async def test_the_turn_after_a_stop_sends_what_was_shown() -> None:
    model = scripted({"text": "One Two Three Four Five Six", "delay": 0.02}, "ok")
    branch = Branch(system=SYSTEM, chat_model=model)
    conv = Conversation(branch, verb_kwargs=VIEW)
    await _stop_midway(conv, conv.asend("count"), branch)
    await conv.asend("go on")
    sent = [m["content"] for m in model.provider.requests[-1].messages]
    assert sent[:2] == [SYSTEM, "count"] and sent[2].startswith("One Two Three")
    assert sent[3] == "go on"


async def test_operate_stopped_from_the_view_records_too() -> None:
    model = scripted({"text": '{"answer": "forty two and more"}', "delay": 0.02})
    branch = Branch(system=SYSTEM, chat_model=model)
    conv = Conversation(branch, verb="operate", verb_kwargs=VIEW)
    seen = asyncio.Event()
    branch.subscribe((StreamDelta,), lambda s: seen.set() if "forty" in s.snapshot else None)
    task = asyncio.ensure_future(conv.asend("answer"))
    await asyncio.wait_for(seen.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [m.role for m in branch.messages] == ["system", "user", "assistant"]
    assert branch.messages[2].metadata["stopped"] is True


async def test_run_stopped_records_once() -> None:
    model = scripted({"text": "One Two Three Four Five Six", "delay": 0.02}, cli=True)
    branch = Branch(system=SYSTEM, chat_model=model)
    conv = Conversation(branch, verb="run")
    await _stop_midway(conv, conv.asend("count"), branch)
    assert [m.role for m in branch.messages] == ["system", "user", "assistant"]
    assert branch.messages[2].metadata["stopped"] is True


# -- truncation and continue ----------------------------------------------------------------


async def test_continue_asks_for_the_rest_of_a_truncated_reply() -> None:
    model = scripted("time.")
    branch = Branch(system=SYSTEM, chat_model=model)
    branch.add_message(Instruction(instruction="story"))
    cut = AssistantResponse(response="Once upon a", metadata={"finish_reason": "length"})
    branch.add_message(cut)
    conv = Conversation(branch)
    assert truncated(cut) and conv.truncated(2) and not conv.truncated(1)
    same = await conv.acontinue()
    assert same is branch and conv.branch is branch
    assert branch.messages[3].text == CONTINUE_PROMPT
    assert branch.messages[3].metadata["continues"] == str(cut.id)
    assert branch.messages[4].text == "time."
    assert model.provider.requests[-1].messages[-2]["content"] == "Once upon a"
    with pytest.raises(ValueError, match="no reply cut off"):
        await conv.acontinue(4)


async def test_continue_an_earlier_truncated_reply_forks_after_it() -> None:
    model = scripted("a", "b", "rest")
    branch = Branch(system=SYSTEM, chat_model=model)
    branch.add_message(Instruction(instruction="q1"))
    branch.add_message(AssistantResponse(response="cut", metadata={"finish_reason": "length"}))
    branch.add_message(Instruction(instruction="q2"))
    branch.add_message(AssistantResponse(response="fine"))
    conv = Conversation(branch)
    fork = await conv.acontinue()
    assert fork is not branch and conv.branch is fork
    assert [m.text for m in fork.messages] == [SYSTEM, "q1", "cut", CONTINUE_PROMPT, "a"]
    assert len(branch.messages) == 5


# -- the context window ---------------------------------------------------------------------


def long_branch(model: iModel, turns: int = 6, words: int = 200) -> Branch:
    branch = Branch(system=SYSTEM, chat_model=model)
    for n in range(turns):
        branch.add_message(Instruction(instruction=f"question {n}"))
        branch.add_message(AssistantResponse(response=" ".join(["word"] * words)))
    return branch


async def test_the_next_request_is_cut_to_the_recent_turns_that_fit() -> None:
    model = scripted("short", context_window=1200, max_tokens=200)
    branch = long_branch(model)
    conv = Conversation(branch, verb_kwargs=VIEW)
    full = conv.plan("next?")
    assert full.window == 1200 and full.cut is not None and not full.exact
    kept = list(branch.messages[full.cut :])
    assert isinstance(kept[0], Instruction)  # whole turns
    await conv.asend("next?")
    sent = model.provider.requests[-1].messages
    assert sent[0]["content"] == SYSTEM
    assert [m["content"] for m in sent[1:-1]] == [m.text for m in kept]
    assert sent[-1]["content"] == "next?"
    fit = branch.messages[-2].metadata["context_fit"]  # the recorded instruction says so
    assert fit["first_sent"] == str(branch.messages[full.cut].id)
    assert len(fit["omitted"]) == full.cut - 1
    assert len(branch.messages) == 15  # the branch keeps every message
    estimate = sum(len(m["content"]) // 4 for m in sent)
    assert estimate * 1.15 <= 1200 - 200


async def test_nothing_is_cut_when_it_fits_or_the_window_is_unknown() -> None:
    assert plan_context(long_branch(scripted(), turns=1).messages, scripted()).cut is None
    unknown = scripted("x")
    conv = Conversation(long_branch(unknown, turns=40))
    plan = conv.plan("q")
    assert plan.window is None and plan.cut is None and plan.progression is None
    await conv.asend("q")
    assert len(unknown.provider.requests[-1].messages) == 82


async def test_an_overflow_with_an_unknown_window_says_what_to_do() -> None:
    error = ProviderError(
        "llama.cpp: Requested tokens (2063) exceed context window of 2048", provider="local"
    )
    conv = Conversation(long_branch(scripted(error)))
    with pytest.raises(ContextWindowError, match="context_window=N") as info:
        await conv.asend("q")
    assert info.value.__cause__ is error and info.value.window is None


async def test_an_instruction_that_cannot_fit_is_refused_before_sending() -> None:
    model = scripted("x", context_window=100, max_tokens=40)
    conv = Conversation(Branch(system=SYSTEM, chat_model=model), verb_kwargs=VIEW)
    with pytest.raises(ContextWindowError, match="instruction alone"):
        await conv.asend("word " * 200)
    assert model.provider.requests == []


async def test_the_view_can_give_the_window() -> None:
    model = scripted("x", max_tokens=100)
    conv = Conversation(long_branch(model), verb_kwargs={"context_window": 800})
    assert conv.plan("q").cut is not None


def test_cli_models_are_never_cut() -> None:
    model = scripted(cli=True, context_window=100)
    plan = plan_context(long_branch(model).messages, model, instruction="q")
    assert plan.cut is None


# -- the embedded model ---------------------------------------------------------------------


def local(**kw: Any) -> iModel:
    return iModel(provider="local", temperature=0, seed=0, **kw)


@pytest.mark.local_model
async def test_local_regenerate_edit_and_alternatives() -> None:
    branch = Branch(system="You are a helpful assistant.", chat_model=local(max_tokens=24))
    conv = Conversation(branch)
    await conv.asend("Name a colour.")
    first = branch.messages[2].text
    fork = await conv.aregenerate()
    assert ids(fork)[:2] == ids(branch)[:2]
    assert fork.messages[2].text == first  # temperature 0: the same sample again
    edited = await conv.aedit(1, "Name a fruit.")
    assert edited.messages[1].text == "Name a fruit." and edited.messages[2].text
    conv.show(branch)
    assert conv.alternatives(1) == [branch, edited]
    assert conv.alternatives(2) == [branch, fork]
    assert len(branch.messages) == 3


@pytest.mark.local_model
async def test_local_stop_records_the_partial_reply() -> None:
    branch = Branch(system="You are a helpful assistant.", chat_model=local(max_tokens=300))
    conv = Conversation(branch, verb_kwargs=VIEW)
    seen = asyncio.Event()
    branch.subscribe((StreamDelta,), lambda s: seen.set() if len(s.snapshot) > 40 else None)
    task = asyncio.ensure_future(conv.asend("Write a long story about the sea."))
    await asyncio.wait_for(seen.wait(), 60)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    reply = branch.messages[2]
    assert branch.messages[1].text == "Write a long story about the sea."
    assert reply.metadata["stopped"] is True and len(reply.text) > 40


@pytest.mark.local_model
async def test_local_long_conversation_is_cut_to_fit_the_window() -> None:
    model = local(n_ctx=512, max_tokens=120)
    branch = Branch(system="You are a helpful assistant.", chat_model=model)
    conv = Conversation(branch, verb_kwargs=VIEW)
    plan = conv.plan("Hello")
    assert not plan.exact and model.provider_or_none is None  # never built just to count
    topics = ("the sea", "a forest", "a city", "the moon", "a river")
    for topic in topics:
        await conv.asend(f"Write a long story about {topic}.")
    plan = conv.plan("Write a long story about a river.")
    assert plan is not None and plan.exact and plan.window == 512
    assert plan.cut is not None and plan.full_tokens > 512 - 120  # would not have fit
    assert "context_fit" in branch.messages[-2].metadata  # the last request was cut
    assert len(branch.messages) == 1 + 2 * len(topics)  # every message kept
    # the same request uncut is refused before it is sent, naming the fix
    with pytest.raises(ContextWindowError, match="fit_context=True"):
        await branch.chat("Write a long story about a river.", max_tokens=120)


@pytest.mark.local_model
async def test_local_truncated_reply_and_continue() -> None:
    branch = Branch(system="You are a helpful assistant.", chat_model=local(max_tokens=8))
    conv = Conversation(branch)
    await conv.asend("Write a long story about the sea.")
    assert conv.truncated(2)
    assert await conv.acontinue() is branch
    assert branch.messages[3].metadata["continues"] == str(branch.messages[2].id)
    assert isinstance(branch.messages[4], AssistantResponse) and branch.messages[4].text
