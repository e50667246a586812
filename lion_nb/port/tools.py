"""Python functions as tools: a JSON schema from the signature and docstring, and invocation.

A sync function runs in a worker thread (``asyncio.to_thread``) so a long tool does not block
the kernel's event loop (Stop keeps working); async functions are awaited. Arguments are
validated (and coerced, pydantic's lax mode) against the signature before the call; unknown
argument names are rejected rather than silently dropped.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from pydantic import ConfigDict, Field, TypeAdapter, create_model

# What OpenAI-compatible APIs accept as a function name (others are stricter, none looser).
_VALID_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def _signature(func: Callable[..., Any]) -> inspect.Signature:
    """The signature with string annotations (``from __future__ import annotations``) resolved
    when possible, so ``x: int`` still yields an integer schema."""
    try:
        return inspect.signature(func, eval_str=True)
    except Exception:  # an annotation that cannot be evaluated: keep it as written
        return inspect.signature(func)


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
        if not callable(func):
            raise TypeError(f"a tool must be a function, not {func!r}")
        self.func = func
        self.name: str = name or str(getattr(func, "__name__", ""))
        if not _VALID_NAME.match(self.name):
            raise ValueError(
                f"tool name {self.name!r} is not usable by model APIs (letters, digits, _ and -, "
                "at most 64): pass Tool(func, name=...)"
            )
        summary, arg_docs = _doc_parts(func)
        self.description = description or summary or self.name
        fields: dict[str, Any] = {}
        for pname, param in _signature(func).parameters.items():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue
            annotation = Any if param.annotation is inspect.Parameter.empty else param.annotation
            default = ... if param.default is inspect.Parameter.empty else param.default
            fields[pname] = (annotation, Field(default, description=arg_docs.get(pname)))
        model = create_model(f"{self.name}_args", __config__=ConfigDict(extra="forbid"), **fields)
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

    def validate(self, arguments: dict[str, Any] | None) -> dict[str, Any]:
        """The keyword arguments for a call, checked and coerced against the signature.
        Raises pydantic's ValidationError (a ValueError) naming the offending arguments."""
        validated = self._validator.validate_python(arguments or {})
        return {k: getattr(validated, k) for k in type(validated).model_fields}

    async def invoke(self, arguments: dict[str, Any] | None) -> Any:
        kwargs = self.validate(arguments)
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
        items: Iterable[Any] = tools if isinstance(tools, list | tuple | set) else [tools]
        added: list[Tool] = []
        for item in items:
            tool = item if isinstance(item, Tool) else Tool(item)
            existing = self.tools.get(tool.name)
            if existing is not None and not update:
                if existing.func is not tool.func:
                    raise ValueError(f"a different tool named {tool.name!r} is already registered")
                tool = existing  # the same function again: keep the registered Tool
            self.tools[tool.name] = tool
            added.append(tool)
        return added

    def resolve(self, refs: Any = True) -> list[Tool]:
        """The tools ``refs`` names: ``True``/``None`` -> all; a name, Tool or function, or a
        list of them. Functions and Tools not yet registered are registered (a model can only
        call what the branch can execute). An unknown name raises ValueError."""
        if refs is None or refs is True:
            return list(self.tools.values())
        if refs is False:
            return []
        items = refs if isinstance(refs, list | tuple | set) else [refs]
        chosen: list[Tool] = []
        for item in items:
            if isinstance(item, str):
                if item not in self.tools:
                    known = ", ".join(sorted(self.tools)) or "none"
                    raise ValueError(f"no tool named {item!r} is registered (registered: {known})")
                tool = self.tools[item]
            else:
                tool = self.register(item)[0]
            if all(t.name != tool.name for t in chosen):
                chosen.append(tool)
        return chosen

    def schemas(self, names: Any = None) -> list[dict[str, Any]]:
        """OpenAI-format schemas of the tools ``names`` refers to (see ``resolve``)."""
        return [t.schema for t in self.resolve(True if names is None else names)]

    def get(self, name: str) -> Tool | None:
        return self.tools.get(name)

    def remove(self, name: str) -> None:
        del self.tools[name]

    @property
    def names(self) -> list[str]:
        return list(self.tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self.tools.values()))

    def __contains__(self, name: object) -> bool:
        return name in self.tools

    def __getitem__(self, name: str) -> Tool:
        return self.tools[name]

    def __len__(self) -> int:
        return len(self.tools)

    def __repr__(self) -> str:
        return f"ToolRegistry({self.names})"
