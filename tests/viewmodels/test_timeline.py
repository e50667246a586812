"""The inspector's view model without widgets: pages, the role filter, expanded rows, rows and
totals of a branch."""

from __future__ import annotations

import pytest

from lion_nb import Session
from lion_nb.messages import AssistantResponse, Instruction
from lion_nb.provenance import provenance_of
from lion_nb.viewmodels import timeline as tlm
from lion_nb.viewmodels.timeline import TimelineModel, TotalsCache, branch_totals
from tests.support.inspector_branches import big_branch, scripted


def test_pages_cover_the_branch_exactly() -> None:
    assert tlm.page_count(0, 50) == 1 and tlm.page_count(50, 50) == 1
    assert tlm.page_count(51, 50) == 2
    assert tlm.page_bounds(0, 50, 120) == (0, 50)
    assert tlm.page_bounds(2, 50, 120) == (100, 120)
    assert tlm.page_bounds(99, 50, 120) == (100, 120)  # clamped to the last page
    assert tlm.page_bounds(-3, 50, 120) == (0, 50)


def test_the_model_opens_on_the_newest_page_and_follows_the_end() -> None:
    branch = big_branch(121)  # a system message and 60 exchanges
    model = TimelineModel(branch, page_size=50)
    assert model.total == 121 and model.start == 71 and model.at_end
    assert list(model.visible_indices()) == list(range(71, 121))
    assert model.position_text() == "72–121 of 121 · latest"
    branch.add_message(Instruction(instruction="one more"))
    model.grew()
    assert model.total == 122 and model.start == 72  # following the end
    assert model.show_start(0) and not model.show_start(-5)  # clamped, did not move
    assert model.position_text() == "1–50 of 122 · page 1/3"
    branch.add_message(Instruction(instruction="and another"))
    model.grew()
    assert model.start == 0  # paged back: the rows stay still
    assert model.static_bounds() == (0, 50)


def test_filter_go_to_and_expanded_rows() -> None:
    branch = big_branch(21)
    model = TimelineModel(branch, page_size=4, follow=False)
    model.set_filter("assistant")
    assert model.filter == "assistant" and model.start == 0
    assert list(model.indices) == [2, 4, 6, 8, 10, 12, 14, 16, 18, 20]
    assert model.position_text() == "1–4 of 10 (assistant) · page 1/3"
    assert model.hides(1) and not model.hides(2)
    model.go_to(12)
    assert 12 in model.expanded and 12 in model.visible_indices()
    model.toggle(12)
    assert model.expanded == set()
    with pytest.raises(IndexError):
        model.go_to(99)
    with pytest.raises(ValueError, match="unknown filter"):
        model.set_filter("tools")
    with pytest.raises(ValueError, match="page_size"):
        TimelineModel(branch, page_size=0)
    assert model.static_bounds() == (17, 21)  # a filter is on: the newest messages


def test_totals_grow_with_the_branch() -> None:
    branch = big_branch(5)
    cache = TotalsCache()
    first = cache.get(branch.messages)
    assert first == branch_totals(branch.messages)
    assert first["roles"] == {"system": 1, "user": 2, "assistant": 2}
    assert first["usage"] == {"input_tokens": 21, "output_tokens": 10}
    branch.add_message(AssistantResponse(response="x", metadata={"usage": {"output_tokens": 1}}))
    assert cache.get(branch.messages) == branch_totals(branch.messages)


def test_totals_follow_a_retraction_replaced_by_a_message_of_another_kind() -> None:
    branch = big_branch(5)
    cache = TotalsCache()
    cache.get(branch.messages)
    last = branch.messages[-1]
    branch.retract_message(last.id, reason="a dead worker's attempt")
    branch.add_message(Instruction(instruction="instead"))  # as many messages as before
    totals = cache.get(branch.messages)
    assert totals == branch_totals(branch.messages)
    assert totals["roles"] == {"system": 1, "user": 3, "assistant": 1}


async def test_messages_from_before_run_tracking_are_counted() -> None:
    branch = Session().new_branch(system="Be brief.", chat_model=scripted("one", "two"))
    await branch.communicate("before the inspector")  # no provenance table yet: not tracked
    model = TimelineModel(branch)
    table = provenance_of(branch)
    assert tlm.messages_before_runs(branch.messages, table) == 2 == model.untracked(table)
    await branch.communicate("after")
    assert len(table.runs) == 1
    assert tlm.messages_before_runs(branch.messages, table) == 2 == model.untracked(table)
    assert tlm.messages_before_runs(big_branch(5).messages, None) == 4  # the system aside
    tracked = Session().new_branch(chat_model=scripted("x"))
    provenance_of(tracked)
    await tracked.communicate("hi")
    assert tlm.messages_before_runs(tracked.messages, provenance_of(tracked)) == 0
