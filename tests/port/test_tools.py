"""Tools: Python functions -> OpenAI-format schemas; validated invocation; the registry."""

from __future__ import annotations

import asyncio
import functools
import threading

import pytest
from pydantic import BaseModel, ValidationError

from lion_nb import Branch
from lion_nb.port.tools import Tool, ToolRegistry
from tests.support.scripted import scripted


def add(a: int, b: int = 2) -> int:
    """Add two integers.

    Args:
        a: the first addend
        b (int): the second addend
    """
    return a + b


async def fetch(url: str, *, retries: int = 0) -> str:
    """Fetch a page.

    :param url: where to go
    """
    await asyncio.sleep(0)
    return f"{url}#{retries}"


class Point(BaseModel):
    x: float
    y: float


def norm(p: Point, scale: float | None = None) -> float:
    return (p.x**2 + p.y**2) ** 0.5 * (scale or 1)


def test_schema_is_openai_function_format_from_signature_and_docstring():
    assert Tool(add).schema == {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two integers.",
            "parameters": {
                "type": "object",
                "properties": {
                    "a": {"type": "integer", "description": "the first addend"},
                    "b": {"type": "integer", "default": 2, "description": "the second addend"},
                },
                "required": ["a"],
                "additionalProperties": False,
            },
        },
    }


def test_sphinx_docstring_keyword_only_and_nested_models():
    fetch_params = Tool(fetch).parameters
    assert fetch_params["properties"]["url"]["description"] == "where to go"
    assert fetch_params["properties"]["retries"] == {"type": "integer", "default": 0}
    norm_params = Tool(norm).parameters
    assert norm_params["required"] == ["p"]
    assert norm_params["$defs"]["Point"]["required"] == ["x", "y"]
    assert Tool(norm).description == "norm"  # no docstring: the name


def test_string_annotations_are_resolved():
    # this module uses `from __future__ import annotations`: annotations are strings
    assert Tool(add).parameters["properties"]["a"]["type"] == "integer"


async def test_invoke_sync_in_a_thread_and_async_awaited():
    seen: list[str] = []

    def where() -> str:
        seen.append(threading.current_thread().name)
        return "ok"

    assert await Tool(where).invoke({}) == "ok"
    assert seen[0] != threading.main_thread().name  # the event loop is never blocked
    assert await Tool(fetch).invoke({"url": "u", "retries": "3"}) == "u#3"  # coerced


async def test_invoke_validates_arguments():
    tool = Tool(add)
    with pytest.raises(ValidationError, match="a"):
        await tool.invoke({"b": 1})
    with pytest.raises(ValidationError, match="extra"):
        await tool.invoke({"a": 1, "c": 3})  # unknown names are rejected, not dropped
    assert await tool.invoke({"a": "5"}) == 7
    assert await Tool(norm).invoke({"p": {"x": 3, "y": 4}}) == 5.0


def test_bad_tool_names_are_rejected_with_a_hint():
    with pytest.raises(ValueError, match="name="):
        Tool(lambda: 1)
    with pytest.raises(ValueError, match="name="):
        Tool(functools.partial(add, 1))
    assert Tool(functools.partial(add, 1), name="add_one").name == "add_one"
    with pytest.raises(TypeError):
        Tool(42)  # type: ignore[arg-type]


def test_registry_register_resolve_and_conflicts():
    reg = ToolRegistry()
    reg.register([add, fetch])
    reg.register(add)  # the same function again is fine
    assert reg.names == ["add", "fetch"] and len(reg) == 2 and "add" in reg

    def other_add(x: int) -> int:
        return x

    with pytest.raises(ValueError, match="different tool named 'add'"):
        reg.register(Tool(other_add, name="add"))
    reg.register(Tool(other_add, name="add"), update=True)
    assert reg["add"].func is other_add

    assert [t.name for t in reg.resolve(None)] == ["add", "fetch"]
    assert reg.resolve(False) == []
    assert [t.name for t in reg.resolve("fetch")] == ["fetch"]
    assert [t.name for t in reg.resolve([norm, "fetch", norm])] == ["norm", "fetch"]
    assert "norm" in reg  # resolving a function registers it
    with pytest.raises(ValueError, match=r"no tool named 'nope'.*add, fetch, norm"):
        reg.resolve(["nope"])
    assert [s["function"]["name"] for s in reg.schemas(["norm"])] == ["norm"]
    reg.remove("norm")
    assert reg.get("norm") is None and [t.name for t in reg] == ["add", "fetch"]


def test_branch_tools_constructor_and_register_tools():
    branch = Branch(chat_model=scripted(), tools=[add])
    branch.register_tools(fetch)
    assert branch.tools.names == ["add", "fetch"]
    assert repr(branch.tools) == "ToolRegistry(['add', 'fetch'])"
