"""The named-operation registry a Session shares with all its branches (ADR D2)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any


def is_coro_func(func: Any) -> bool:
    """True for ``async def`` functions and objects whose ``__call__`` is ``async def``."""
    if inspect.iscoroutinefunction(func):
        return True
    call = type(func).__dict__.get("__call__") if not inspect.isroutine(func) else None
    return call is not None and inspect.iscoroutinefunction(call)


class OperationManager:
    """Maps operation names to coroutine functions. Registration rejects duplicates unless
    ``update=True`` and rejects synchronous callables (they are not wrapped)."""

    __slots__ = ("registry",)

    def __init__(self) -> None:
        self.registry: dict[str, Callable[..., Any]] = {}

    def register(self, operation: str, func: Callable[..., Any], update: bool = False) -> None:
        if not isinstance(operation, str) or not operation:
            raise ValueError(f"operation name must be a non-empty string, got {operation!r}")
        if operation in self.registry and not update:
            raise ValueError(
                f"Operation {operation!r} is already registered; pass update=True to replace it"
            )
        if not is_coro_func(func):
            raise ValueError(
                f"Operation {operation!r} must be an async function (got {func!r}); "
                "synchronous callables are not wrapped"
            )
        self.registry[operation] = func

    def get(self, operation: str) -> Callable[..., Any] | None:
        return self.registry.get(operation)

    def __contains__(self, operation: object) -> bool:
        return operation in self.registry

    def __len__(self) -> int:
        return len(self.registry)
