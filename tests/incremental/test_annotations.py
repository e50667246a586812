"""Annotations read for display and validation."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from lion_nb.incremental.annotations import item_annotation, model_fields, type_name, unwrap


class Item(BaseModel):
    name: str
    count: int = Field(alias="n")


def test_type_names_are_readable() -> None:
    assert type_name(list[Item]) == "list[Item]"
    assert type_name(str | None) == "str | None"
    assert type_name(Literal["a", 1]) == "Literal['a', 1]"
    assert type_name(Annotated[int, "meta"]) == "int"
    assert type_name(None) == "None" and type_name(dict) == "dict"


def test_walking_into_annotations() -> None:
    assert unwrap(Item | None) is Item and unwrap(Annotated[int, 1]) is int
    assert unwrap(int | str) == int | str  # a real union stays
    assert model_fields(Item) == {"name": str, "n": int} and model_fields(int) is None
    assert item_annotation(list[Item] | None, 0) is Item
    assert item_annotation(dict[str, float], "k") is float
    assert item_annotation(Item, "n") is int and item_annotation(int, 0) is None
