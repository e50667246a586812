"""select: an operations module built on operate (no facade method); choices are mapped back."""

from __future__ import annotations

from enum import Enum

import pytest
from pydantic import BaseModel

from lion_nb import Branch, Session
from lion_nb.operations.select import SelectionModel, choice_table, match_choice, select
from lion_nb.signals import RunStart
from tests.support.scripted import kinds, scripted


class Color(Enum):
    RED = "red"
    GREEN = "green"
    BLUE = "blue"


class Cat(BaseModel):
    name: str = "tom"


class Dog(BaseModel):
    name: str = "rex"


def picks(*names: str) -> dict:
    return {"json": {"selected": list(names)}}


async def test_strings_are_selected_under_one_select_lifecycle():
    model = scripted(picks("banana"))
    branch = Branch(chat_model=model)
    seen: list = []
    branch.observe(handler=seen.append)
    out = await select(branch, "Which is yellow?", ["apple", "banana", "cherry"])
    assert out == SelectionModel(selected=["banana"])
    assert [k for k in kinds(seen) if k.startswith("Run")] == ["RunStart", "RunEnd"]
    assert next(s for s in seen if isinstance(s, RunStart)).operation == "select"
    ins = branch.messages[0]
    assert "Which is yellow?" in ins.text and '["apple", "banana", "cherry"]' in ins.text
    assert ins.context[-1] == {
        "choices": {"apple": "apple", "banana": "banana", "cherry": "cherry"}
    }
    assert not hasattr(Branch, "select")  # ADR D1: no facade method


async def test_names_map_back_to_enum_members_dict_values_and_models():
    out = await select(
        Branch(chat_model=scripted(picks("red", "Blue"))), "pick", Color, max_num_selections=2
    )
    assert out.selected == [Color.RED, Color.BLUE]  # case-insensitive name match

    out = await select(
        Branch(chat_model=scripted(picks("fast"))),
        "pick",
        {"fast": {"speed": 9}, "slow": {"speed": 1}},
    )
    assert out.selected == [{"speed": 9}]

    out = await select(Branch(chat_model=scripted(picks("Dog"))), "pick", [Cat, Dog])
    assert out.selected == [Dog]
    rex = Dog()
    out = await select(Branch(chat_model=scripted(picks("Dog"))), "pick", [Cat(), rex])
    assert out.selected[0] is rex


async def test_selections_are_clean_choices_deduplicated_and_capped():
    model = scripted(picks("bananna", "banana", "durian", "cherry", "apple"))
    out = await select(
        Branch(chat_model=model), "pick", ["apple", "banana", "cherry"], max_num_selections=2
    )
    # a near-miss maps to its choice, a repeat and a non-choice are dropped, then capped at 2
    assert out.selected == ["banana", "cherry"]


async def test_a_reply_that_is_not_json_is_searched_for_choice_names():
    model = scripted("I would go with cherry, then apple.")
    out = await select(
        Branch(chat_model=model),
        "pick",
        ["apple", "cherry"],
        max_num_selections=2,
        num_parse_retries=0,
    )
    assert out.selected == ["cherry", "apple"]


async def test_operate_keywords_pass_through():
    model = scripted(picks("a"))
    branch = Branch(chat_model=model)
    await select(branch, "pick", ["a", "b"], guidance="be quick", temperature=0)
    assert branch.messages[0].guidance == "be quick"
    assert model.provider.requests[0].options == {"temperature": 0}


async def test_bad_choices_fail_before_the_run():
    branch = Branch(chat_model=scripted())
    seen: list = []
    branch.observe(handler=seen.append)
    for bad in (None, [], 42):
        with pytest.raises(TypeError, match="choices"):
            await select(branch, "pick", bad)
    assert seen == [] and len(branch.messages) == 0


async def test_a_session_can_register_select_as_an_operation():
    session = Session()
    branch = session.new_branch(chat_model=scripted(picks("b")))
    session.register_operation("select", select)
    out = await session.run_operation("select", instruction="pick", choices=["a", "b"])
    assert out.selected == ["b"] and branch.messages[0].role == "user"


def test_helpers():
    assert list(choice_table([Cat(), Cat()])) == ["Cat", "Cat_2"]
    assert match_choice(" GREEN ", ["RED", "GREEN"]) == "GREEN"
    assert match_choice("zzz", ["RED", "GREEN"]) is None
