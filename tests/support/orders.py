"""The structured value the parse tests share: a nested pydantic ``Order`` and a valid one."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Item(BaseModel):
    name: str
    price: float = Field(gt=0)


class Order(BaseModel):
    customer: str = Field(max_length=10)
    items: list[Item]
    note: str | None = None
    meta: dict[str, int] = {}


ORDER = {
    "customer": "Alice",
    "items": [{"name": "tea", "price": 2.5}, {"name": "cake", "price": 4.0}],
    "note": "ring twice",
    "meta": {"table": 4},
}


def rows_by_path(rows):
    return {r.path: r for r in rows}
