"""Python functions as tools: a JSON schema from the signature and docstring, and invocation.

A sync function runs in a worker thread (``asyncio.to_thread``) so a long tool does not block
the kernel's event loop (Stop keeps working); async functions are awaited.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import ConfigDict, TypeAdapter, create_model


def _doc_parts(func: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """Summary and per-argument descriptions from a Google/NumPy/Sphinx-style docstring."""
    doc = inspect.getdoc(func) or ""
    summary = doc.split("\n\n", 1)[0].strip()
    params: dict[str, str] = {}
    for match in re.finditer(r"^\s*:param\s+(\w+):\s*(.+)$", doc, re.M):
        params[match.group(1)] = match.group(2).strip()
    section = re.search(r"^(Args|Arguments|Parameters):?\s*\n(.*?)(\n\s*\n|\Z)", doc, re.S | re.M)
    if section:
        for line in section.group(2).splitlines():
            m = re.match(r"^\s*(\w+)\s*(\([^)]*\))?\s*:\s*(.+)$", line)
            if m:
                params.setdefault(m.group(1), m.group(3).strip())
    return summary, params


class Tool:
    """A callable the model may request by name."""

    __slots__ = ("_validator", "description", "func", "name", "parameters")

    def __init__(
        self, func: Callable[..., Any], *, name: str | None = None, description: str | None = None
    ) -> None:
        self.func = func
        self.name = name or func.__name__
        summary, arg_docs = _doc_parts(func)
        self.description = description or summary or self.name
        fields: dict[str, Any] = {}
        for pname, param in inspect.signature(func).parameters.items():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue
            annotation = Any if param.annotation is inspect.Parameter.empty else param.annotation
            default = ... if param.default is inspect.Parameter.empty else param.default
            from pydantic import Field

            fields[pname] = (annotation, Field(default, description=arg_docs.get(pname)))
        model = create_model(  # type: ignore[call-overload]
            f"{self.name}_args", __config__=ConfigDict(extra="forbid"), **fields
        )
        self._validator: TypeAdapter[Any] = TypeAdapter(model)
        schema = model.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        self.parameters = schema

    @property
    def schema(self) -> dict[str, Any]:
        """OpenAI function-tool format (the lingua franca; providers translate it)."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    async def invoke(self, arguments: dict[str, Any]) -> Any:
        validated = self._validator.validate_python(arguments or {})
        kwargs = {k: getattr(validated, k) for k in type(validated).model_fields}
        if inspect.iscoroutinefunction(self.func):
            return await self.func(**kwargs)
        result = await asyncio.to_thread(self.func, **kwargs)
        if inspect.isawaitable(result):
            result = await result
        return result

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"


class ToolRegistry:
    """The tools a branch offers, by name."""

    __slots__ = ("tools",)

    def __init__(self) -> None:
        self.tools: dict[str, Tool] = {}

    def register(
        self, tools: Callable[..., Any] | Tool | Iterable[Any], *, update: bool = False
    ) -> list[Tool]:
        items = tools if isinstance(tools, list | tuple | set) else [tools]
        added: list[Tool] = []
        for item in items:
            tool = item if isinstance(item, Tool) else Tool(item)  # type: ignore[arg-type]
            if (
                tool.name in self.tools
                and not update
                and self.tools[tool.name].func is not tool.func
            ):
                raise ValueError(f"a different tool named {tool.name!r} is already registered")
            self.tools[tool.name] = tool
            added.append(tool)
        return added

    def schemas(self, names: Iterable[str] | None = None) -> list[dict[str, Any]]:
        chosen = self.tools.values() if names is None else [self.tools[n] for n in names]
        return [t.schema for t in chosen]

    def __contains__(self, name: object) -> bool:
        return name in self.tools

    def __getitem__(self, name: str) -> Tool:
        return self.tools[name]

    def __len__(self) -> int:
        return len(self.tools)
