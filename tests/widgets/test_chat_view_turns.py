"""The chat view shows what the branch holds: a turn started in a cell and the same
turn sent from the view behave alike — the view is an adapter over the conversation layer.
Each test is one of the problems found on 0.2 and failed there."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

from lion_nb import Branch, BranchView, Session, iModel
from lion_nb.errors import ContextWindowError
from lion_nb.messages import AssistantResponse, Instruction
from lion_nb.render.html import transcript_html
from lion_nb.signals import StreamDelta


def scripted(*replies, **kw) -> iModel:
    return iModel(provider="scripted", replies=list(replies), **kw)


async def _until(predicate, seconds: float = 10.0) -> None:
    for _ in range(int(seconds / 0.01)):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached")


def _cards(view: BranchView) -> list[str]:
    return [key if isinstance(key, str) else str(key) for key, _ in view.transcript.items]


# 1. a turn interrupted in a cell: nothing recorded, nothing that looks kept
async def test_a_code_started_turn_shows_its_instruction_while_it_streams() -> None:
    branch = Branch(chat_model=scripted({"chunks": ["x "] * 200, "delay": 0.01}, "REAL"))
    view = BranchView(branch)
    task = asyncio.ensure_future(branch.communicate("asked in a cell"))
    await _until(lambda: bool(view.transcript.live))
    assert "asked in a cell" in view.rendered_html()  # pending, before it is recorded
    assert len(branch.messages) == 0
    task.cancel()  # Kernel -> Interrupt: the ADR's contract, nothing recorded
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0)
    html = view.rendered_html()
    assert len(branch.messages) == 0
    assert "not recorded" in html and "lion-unrecorded-msg" in html  # never looks kept
    assert "stopped · not recorded" in view.status.value or "nothing was recorded" in (
        view.status.value
    )
    await branch.communicate("next from code")
    await asyncio.sleep(0)
    # the next turn is drawn as what the branch holds: no stale stopped card in between
    assert view.rendered_html() == BranchView(branch).rendered_html()
    assert "not recorded" not in view.rendered_html() and "asked in a cell" not in (
        view.rendered_html()
    )
    view.close()


async def test_stop_in_the_view_records_through_the_verb() -> None:
    branch = Branch(chat_model=scripted({"chunks": [f"p{i} " for i in range(300)], "delay": 0.01}))
    view = BranchView(branch)
    assert view.verb_kwargs["on_stop"] == "record" and view.verb_kwargs["fit_context"] is True
    view.send("long")
    await _until(lambda: "p3" in view.rendered_html())
    view.stop()
    await view.task
    _ins, reply = branch.messages
    assert reply.metadata["stopped"] is True and "p3" in reply.response
    assert "partial reply is kept" in view.status.value
    assert view.rendered_html() == BranchView(branch).rendered_html()
    view.close()


# 2. parse with a repair turn: no streaming card left, the status ends in the outcome
class Order(BaseModel):
    item: str
    qty: int


async def test_a_parse_repair_turn_leaves_no_card_and_the_status_says_parsed() -> None:
    branch = Branch(chat_model=scripted('{"item": "tea", "qty": 2}'))
    view = BranchView(branch)
    value = await branch.parse("two teas please", Order)
    await asyncio.sleep(0)
    assert value == Order(item="tea", qty=2)
    assert not view.transcript.live and "streaming" not in view.rendered_html()
    assert view.rendered_html() == ""  # parse records nothing
    assert "parsed into Order after 1 repair turn" in view.status.value
    assert "retrying" not in view.status.value
    view.close()


# 3. an overflow sent from code: one clear error naming the fix; the gauge says what is true
async def test_an_overflow_from_code_raises_context_window_error_and_the_gauge_agrees() -> None:
    model = scripted("ok", context_window=900, max_tokens=100)
    branch = Branch(system="S", chat_model=model)
    for n in range(6):
        branch.add_message(Instruction(instruction=f"q{n}"))
        branch.add_message(AssistantResponse(response=" ".join(["word"] * 200)))
    view = BranchView(branch)
    await asyncio.sleep(0)
    assert "(fit_context)" in view.ctx["text"]  # the view's Send fits the history
    with pytest.raises(ContextWindowError, match="fit_context=True"):
        await branch.communicate("from a cell")
    assert model.provider.requests == [] and len(branch.messages) == 13
    await view.asend("from the view")  # the view passes fit_context=True
    assert len(model.provider.requests) == 1 and len(branch.messages) == 15
    await asyncio.sleep(0)
    assert "Context window: the last request left out" in view.rendered_html()
    plain = BranchView(branch, verb_kwargs={"fit_context": False})
    assert "left out (fit_context)" not in plain.ctx.get("text", "")
    view.close()
    plain.close()


# 4. regenerate names the branch shown; Compare follows; latencies from the runs
async def test_regenerate_names_the_fork_and_compare_follows_it() -> None:
    session = Session()
    branch = session.new_branch(
        system="S", chat_model=scripted("FIRST", "SECOND", "THIRD"), name="demo"
    )
    view = BranchView(branch)
    await view.asend("hello")
    fork = await view.aregenerate()
    assert view.branch is fork and view.title == "demo · Alternative 2 of 2"
    status = view.status.value
    assert "Alternative 2 of 2 · <code>view.branch</code> now points to it" in status
    # ids only in the tooltip
    assert f'title="view.branch: branch {str(fork.id)[:8]}, forked from' in status
    assert str(fork.id)[:8] not in status.split(">", 1)[1]
    compare = view.compare()
    assert compare.branch_b is fork
    third = await view.aregenerate()
    assert view.compare_view is not None and view.compare_view.branch_b is third  # followed
    assert compare.closed
    view.show(branch)
    assert view.title == "demo · Alternative 1 of 3"  # as its switcher says: ‹ 1/3 ›
    assert "<code>view.branch</code> is the branch you started with" in view.status.value
    view.close()


async def test_compare_latency_is_the_request_not_the_time_since_the_user_message() -> None:
    from lion_nb.viewmodels.compare import side_stats

    branch = Branch(system="S", chat_model=scripted("a", {"text": "b", "delay": 0.0}))
    await branch.communicate("q")
    ins = branch.messages[1]
    fork = branch.fork(at=0)  # before the instruction, as Regenerate forks
    await asyncio.sleep(0.3)  # the user thinks before pressing Regenerate
    await fork.communicate(ins)
    reply = fork.messages[-1]
    stats = side_stats([reply], list(fork.messages))
    assert stats.latency_source == "requests"
    assert stats.latency_ms == reply.metadata["latency_ms"] < 250


# 5. continue: a continued reply offers no Continue and says where its rest is
async def test_a_continued_reply_is_linked_and_cannot_be_continued_twice() -> None:
    session = Session()
    branch = session.new_branch(system="S", chat_model=scripted("the rest."))
    branch.add_message(Instruction(instruction="story"))
    cut = branch.add_message(
        AssistantResponse(response="Once upon a", metadata={"finish_reason": "length"})
    )
    view = BranchView(branch)
    await asyncio.sleep(0)
    assert view.cut_marks == [str(cut.id)]
    await view.acontinue()
    await asyncio.sleep(0)
    assert view.cut_marks == []  # no Continue control any more
    continuation = branch.messages[3]
    assert f'data-continued="{continuation.id}"' in view.rendered_html()
    assert "continued below" in view.rendered_html()
    with pytest.raises(ValueError, match="continued already"):
        await view.acontinue(2)
    view.close()


# 6. the marks are in the HTML the static fallback and rendered_html() give
async def test_the_truncated_badge_and_the_cut_notice_are_in_the_saved_html() -> None:
    branch = Branch(system="S", chat_model=scripted("x", context_window=900, max_tokens=100))
    for n in range(6):
        branch.add_message(Instruction(instruction=f"q{n}"))
        branch.add_message(AssistantResponse(response=" ".join(["word"] * 200)))
    branch.add_message(Instruction(instruction="last"))
    branch.add_message(AssistantResponse(response="cut off", metadata={"finish_reason": "length"}))
    view = BranchView(branch)
    await view.asend("more")
    await asyncio.sleep(0)
    for html in (view.rendered_html(), view.static_html(), transcript_html(branch.messages)):
        assert "lion-cut-badge" in html and ">truncated<" in html
        assert "Context window: the last request left out" in html
    assert "Next turn sends" in view.static_html()  # the gauge's words, from render/
    assert view.rendered_html() == BranchView(branch).rendered_html()
    view.close()


async def test_streamed_deltas_of_an_unrecorded_chat_leave_no_card() -> None:
    branch = Branch(chat_model=scripted("just asking"))
    view = BranchView(branch)
    seen: list[StreamDelta] = []
    branch.subscribe((StreamDelta,), seen.append)
    assert await branch.chat("q") == "just asking"
    await asyncio.sleep(0)
    assert seen and not view.transcript.live and view.rendered_html() == ""
    view.close()
