"""What a record/replay round trip must keep identical, in comparable form.

``Trace(branch)`` collects every signal of a branch; ``signals()`` summarises them without ids,
timestamps or durations, ``deltas()`` gives the StreamDelta sequence (kind, delta, running
length), ``messages(branch)`` the recorded messages (role, text, metadata without the run's
wall-clock readings and without the ``replayed`` marker that only a replay has)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import lion_nb
from lion_nb import Branch, iModel
from lion_nb.signals import (
    MessageAdded,
    ParseAttempt,
    RoundEnd,
    RoundStart,
    RunEnd,
    RunFailed,
    RunStart,
    Signal,
    StreamDelta,
)
from tests.support.scripted import scripted

_CLOCK_KEYS = {"duration_ms", "latency_ms", "replayed", "started_at"}


class Trace:
    def __init__(self, branch: Any) -> None:
        self.seen: list[Signal] = []
        branch.observe(handler=self.seen.append)

    def deltas(self) -> list[tuple[str, str, int]]:
        return [(s.kind, s.delta, s.length) for s in self.seen if isinstance(s, StreamDelta)]

    def signals(self) -> list[tuple[Any, ...]]:
        out: list[tuple[Any, ...]] = []
        for s in self.seen:
            if isinstance(s, StreamDelta):
                out.append(("StreamDelta", s.kind, s.delta, s.name))
            elif isinstance(s, RunStart):
                out.append(("RunStart", s.operation))
            elif isinstance(s, RunEnd):
                out.append(("RunEnd", s.operation, s.input_tokens, s.output_tokens, s.stopped))
            elif isinstance(s, RunFailed):
                out.append(("RunFailed", s.operation, type(s.error).__name__, str(s.error)))
            elif isinstance(s, MessageAdded):
                out.append(("MessageAdded", s.message.role, s.message.text))
            elif isinstance(s, RoundStart | RoundEnd):
                out.append((type(s).__name__, s.round, s.final))
            elif isinstance(s, ParseAttempt):
                out.append(("ParseAttempt", s.attempt, s.ok, s.raw))
            else:
                out.append((type(s).__name__,))
        return out


def _meta(metadata: dict[str, Any]) -> str:
    return json.dumps(
        {k: v for k, v in metadata.items() if k not in _CLOCK_KEYS}, sort_keys=True, default=str
    )


def messages(branch: Any) -> list[tuple[str, str, str]]:
    return [(m.role, m.text, _meta(m.metadata)) for m in branch.messages]


SYSTEM = "Answer briefly."


def absent(**kw: Any) -> iModel:
    """The same model with nothing to say: a replay that reaches it fails loudly."""
    return iModel(provider="scripted", **kw)


async def round_trip(path: Path, script: list[Any], act: Any, *, speed: float | None = None):
    """Record ``act(branch)`` on a model playing ``script``, then replay it with the model
    absent; return both (result, messages, deltas, signals)."""
    out = []
    for mode, model in (("record", scripted(*script)), ("replay", absent())):
        branch = Branch(system=SYSTEM, chat_model=model)
        trace = Trace(branch)
        with lion_nb.cassette(path, mode=mode, speed=speed):
            result = await act(branch)
        out.append((result, messages(branch), trace.deltas(), trace.signals()))
    return out
