"""A CLI-like test provider that streams exactly the chunks a test gives it.

``iModel(provider="chunk_list", script=Script([chunk, 0.05, chunk, ...], [...]))``: one list per
request; a number sleeps that many seconds, an exception is raised, a ``Chunk`` is yielded.
It counts stream starts and closes (``finally`` of the generator) so tests can check cleanup,
and ``fail_on_close`` makes the close itself raise (a secondary cleanup failure).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator
from typing import Any

from lion_nb.models.base import Chunk, CLIRequest


class Script:
    """The per-request chunk lists (not a list, so iModel.to_dict leaves it out)."""

    def __init__(self, *requests: list[Any]) -> None:
        self.requests = [list(r) for r in requests]


class ChunkListProvider:
    name = "chunk_list"
    is_cli = True

    def __init__(
        self,
        model: str | None = None,
        api_key: str | None = None,
        *,
        script: Script | None = None,
        fail_on_close: bool = False,
        **options: Any,
    ) -> None:
        self.model = model
        self.script = script or Script()
        self.fail_on_close = fail_on_close
        self.options = options
        self.requests: list[CLIRequest] = []
        self.session_id: str | None = None
        self.started = 0
        self.closed = 0
        self.closed_at: float | None = None

    async def stream(self, request: CLIRequest) -> AsyncGenerator[Chunk, None]:
        self.requests.append(request)
        items = self.script.requests.pop(0)
        self.started += 1
        try:
            for item in items:
                if isinstance(item, int | float):
                    await asyncio.sleep(item)
                elif isinstance(item, BaseException):
                    raise item
                else:
                    yield item
        except GeneratorExit:
            if self.fail_on_close:  # fails only when closed early, as a cleanup step
                raise RuntimeError("closing the fake stream failed") from None
            raise
        finally:
            self.closed += 1
            self.closed_at = time.monotonic()


def use_chunk_provider(monkeypatch: Any) -> None:
    """Register ``provider="chunk_list"`` for one test (monkeypatch restores the registry)."""
    from lion_nb.models.imodel import PROVIDERS, ProviderSpec

    monkeypatch.setitem(
        PROVIDERS,
        "chunk_list",
        ProviderSpec("tests.support.chunk_provider", "ChunkListProvider", kind="cli"),
    )


def chunk_model(*requests: list[Any], **kw: Any) -> Any:
    from lion_nb import iModel

    return iModel(provider="chunk_list", script=Script(*requests), **kw)


def text(t: str) -> Chunk:
    return Chunk(type="text", text=t)


def system(session_id: str = "sess-1") -> Chunk:
    return Chunk(type="system", session_id=session_id)


def tool_use(tool_id: str, name: str, **arguments: Any) -> Chunk:
    return Chunk(type="tool_use", tool_id=tool_id, name=name, arguments=arguments)


def tool_result(tool_id: str, output: Any, *, is_error: bool = False) -> Chunk:
    return Chunk(type="tool_result", tool_id=tool_id, output=output, is_error=is_error)


def result(**metadata: Any) -> Chunk:
    return Chunk(type="result", metadata=metadata)
