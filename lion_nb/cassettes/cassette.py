"""``Cassette``: record once, replay anywhere; ``cassette(...)`` and ``use_cassette(...)``.

    with lion_nb.cassette("lesson.cassette.jsonl", mode="auto", speed=1.0):   # or async with
        await branch.communicate("...")

    lion_nb.use_cassette("lesson.cassette.jsonl")    # for the rest of the notebook
    lion_nb.use_cassette(None)                       # off again

Modes: ``"auto"`` replays what the cassette has and records what it lacks; ``"record"`` calls
the models and rewrites what it calls (the earlier recordings of a request are replaced the
first time it is called; other recordings are kept); ``"replay"`` never calls a model (a request
without a recording raises ``CassetteMiss``); ``"off"`` calls the models and touches no file.
Identical requests replay their recordings in recorded order, the last one repeating.

``speed``: 1.0 replays at the recorded pace, 10 ten times faster, None (or 0) at once.

The file is read when the cassette is created and rewritten (atomically) after every recorded
call, so a recording survives a kernel that dies later. A damaged line is reported with its
number: a ``CassetteWarning`` in "auto" and "record" modes (the line is skipped, and kept as it
is when the file is rewritten), a ``CassetteError`` in "replay" mode.
"""

from __future__ import annotations

import datetime
import os
import threading
import warnings
from collections.abc import AsyncGenerator, Callable
from contextvars import ContextVar, Token
from pathlib import Path
from typing import Any, Literal

from lion_nb.cassettes import active, store
from lion_nb.cassettes.matching import (
    describe,
    differences,
    fingerprint,
    last_instruction,
    request_of,
)
from lion_nb.cassettes.player import (
    LiveComplete,
    LiveStream,
    record_api,
    record_cli,
    replay_api,
    replay_cli,
)
from lion_nb.cassettes.store import Damaged, Recording
from lion_nb.errors import CassetteError, CassetteMiss
from lion_nb.models.base import Chunk, CLIRequest, DeltaSink, ModelRequest, ModelResponse

__all__ = ["MODES", "Cassette", "CassetteWarning", "Mode", "cassette", "use_cassette"]

Mode = Literal["auto", "record", "replay", "off"]
MODES: tuple[Mode, ...] = ("auto", "record", "replay", "off")


class CassetteWarning(UserWarning):
    """A cassette line was skipped (damaged) in "auto" or "record" mode."""


def _speed(speed: float | None) -> float | None:
    if speed is None or speed == 0:
        return None
    if isinstance(speed, bool) or not isinstance(speed, int | float) or speed < 0:
        raise ValueError(f"speed must be a positive number, 0 or None (at once), not {speed!r}")
    return float(speed)


class Cassette:
    """One cassette file in one mode. Usable as a (sync or async) context manager, which makes
    it the cassette of the code inside; ``use_cassette`` makes it the default everywhere."""

    def __init__(
        self, path: str | os.PathLike[str], mode: Mode = "auto", speed: float | None = 1.0
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(map(repr, MODES))}, not {mode!r}")
        self.path = Path(path)
        self.shown = os.fspath(path)
        self.mode: Mode = mode
        self.speed = _speed(speed)
        self.replayed = 0  # calls served from the file in this session
        self.recorded = 0  # calls recorded into it
        self._lock = threading.Lock()
        self._tokens: ContextVar[tuple[Token[object], ...]] = ContextVar(
            f"lion_nb_cassette_tokens_{id(self)}", default=()
        )
        self._items: list[Recording | Damaged] = []
        self._by_key: dict[str, list[Recording]] = {}
        self._served: dict[str, int] = {}
        self._rewritten: set[str] = set()  # keys re-recorded in this session ("record")
        self._mine: set[str] = set()  # the lines this cassette wrote
        self._pending: list[Recording] = []  # recorded, not yet on disk (a write failed)
        if mode != "off":
            self._load()

    def _load(self) -> None:
        self._items = store.read(self.path)
        damaged = [item for item in self._items if isinstance(item, Damaged)]
        if damaged:
            lines = "; ".join(f"line {d.line}: {d.reason}" for d in damaged)
            if self.mode == "replay":
                raise CassetteError(
                    f"the cassette {self.shown!r} is damaged ({lines}); fix or remove those "
                    "lines, or use mode='auto' to skip them",
                    path=self.shown,
                    line=damaged[0].line,
                )
            warnings.warn(
                CassetteWarning(
                    f"the cassette {self.shown!r} has damaged lines, skipped (and kept as they "
                    f"are when the file is rewritten): {lines}"
                ),
                stacklevel=4,
            )
        for item in self._items:
            if isinstance(item, Recording):
                self._by_key.setdefault(item.key, []).append(item)

    # -- what is on it -------------------------------------------------------------------------

    @property
    def recordings(self) -> list[Recording]:
        """The calls on the cassette, in file order."""
        return [item for item in self._items if isinstance(item, Recording)]

    def __len__(self) -> int:
        return len(self.recordings)

    def __repr__(self) -> str:
        speed = "at once" if self.speed is None else f"speed={self.speed:g}"
        return (
            f"Cassette({self.shown!r}, mode={self.mode!r}, {speed}: {len(self)} calls; "
            f"{self.replayed} replayed, {self.recorded} recorded in this session)"
        )

    # -- being the active cassette -------------------------------------------------------------

    def __enter__(self) -> Cassette:
        # The tokens live in the context too: tasks entering the same cassette concurrently
        # each restore their own.
        token = active.scoped.set(self)
        self._tokens.set((*self._tokens.get(), token))
        return self

    def __exit__(self, *exc: object) -> None:
        *rest, token = self._tokens.get()
        self._tokens.set(tuple(rest))
        active.scoped.reset(token)

    async def __aenter__(self) -> Cassette:
        return self.__enter__()

    async def __aexit__(self, *exc: object) -> None:
        self.__exit__(*exc)

    # -- the seam (called by iModel) -----------------------------------------------------------

    def _ref(self, rec: Recording) -> dict[str, Any]:
        return {
            "cassette": self.shown,
            "call": rec.call,
            "line": rec.line,
            "recorded_at": rec.recorded_at,
        }

    def _lookup(self, matched: dict[str, Any]) -> Recording | None:
        key = fingerprint(matched)
        with self._lock:
            recs = self._by_key.get(key)
            if not recs:
                return None
            served = self._served.get(key, 0)
            self._served[key] = served + 1
            self.replayed += 1
            return recs[min(served, len(recs) - 1)]

    @staticmethod
    def _matched(model: Any, request: Any) -> tuple[dict[str, Any], list[str | None]]:
        """The request as matched (and as it will be written: without secrets)."""
        secrets = [*model.secret_values(), *store.secrets_from_environment()]
        return store.scrub_value(request_of(model, request), secrets), secrets

    def _save(self, rec: Recording, secrets: list[str | None]) -> None:
        """Add ``rec`` to the file: read it again, merge, write it atomically. Reading first
        means two cassettes on one file (``use_cassette`` plus a ``with`` block, a cell run
        again while a task of the last run still records) add to it instead of overwriting
        each other's recordings."""
        # Scrubbed now, with this call's secrets: later rewrites of the file are made for other
        # models' calls and know only theirs.
        rec.events = store.scrub_value(rec.events, secrets)
        rec.response = store.scrub_value(rec.response, secrets)
        rec.error = store.scrub_value(rec.error, secrets)
        rec.recorded_at = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        with self._lock:
            self.recorded += 1
            self._pending.append(rec)
            if self.mode == "record":
                self._rewritten.add(rec.key)
            try:
                items = store.read(self.path)
            except CassetteError:
                items = [i for i in self._items if all(i is not p for p in self._pending)]
            # "record" replaces the earlier recordings of what it calls (not its own)
            items = [
                i
                for i in items
                if not (
                    isinstance(i, Recording)
                    and i.key in self._rewritten
                    and i.raw not in self._mine
                )
            ]
            items += self._pending
            self._items = items
            self._by_key = {}
            for item in items:
                if isinstance(item, Recording):
                    self._by_key.setdefault(item.key, []).append(item)
            try:
                store.write(self.path, items, secrets)
            except OSError as exc:  # the reply still reaches the caller; the next save retries
                warnings.warn(
                    CassetteWarning(
                        f"could not write the cassette {self.shown!r} ({exc}); this recording "
                        "is kept in memory and written with the next one"
                    ),
                    stacklevel=2,
                )
                return
            self._mine.update(r.raw for r in self._pending)
            self._pending.clear()

    def _note(self, matched: dict[str, Any]) -> Callable[[], str] | None:
        if self.mode != "auto":
            return None
        return lambda: f"(the cassette could not replay this call: {self.miss(matched)})"

    def miss(self, matched: dict[str, Any]) -> CassetteMiss:
        """The error for a request this cassette cannot replay, naming the nearest recording."""
        provider, model = matched.get("provider"), matched.get("model")
        instruction = last_instruction(matched)
        label = f"{provider}/{model}" if model else str(provider)
        said = instruction if len(instruction) <= 120 else instruction[:119] + "…"
        text = (
            f"no recording in {self.shown!r} (mode {self.mode!r}) of the {label} request whose "
            f"last instruction is {said!r}. "
        )
        nearest: dict[str, Any] | None = None
        diffs: list[tuple[str, Any, Any]] = []
        candidates = [(differences(r.request, matched), r) for r in self.recordings]
        if candidates:
            same = [c for c in candidates if c[1].request.get("provider") == provider]
            diffs, rec = min(same or candidates, key=lambda c: len(c[0]))
            nearest = {"call": rec.call, "line": rec.line}
            text += (
                f"The nearest recorded request (call {rec.call}, line {rec.line}) differs in "
                f"{describe(diffs)}."
            )
        elif not self.path.exists():
            text += "The cassette file does not exist (yet)."
        else:
            text += "The cassette has no recordings."
        if self.mode == "replay":
            text += " Record it with mode='auto' or 'record' (the model must be available)."
        return CassetteMiss(
            text.rstrip(),
            path=self.shown,
            provider=provider,
            model=model,
            instruction=instruction,
            request=matched,
            nearest=nearest,
            differences=diffs,
        )

    async def complete(
        self,
        model: Any,
        request: ModelRequest,
        on_delta: DeltaSink | None,
        live: LiveComplete,
    ) -> ModelResponse:
        if self.mode == "off":
            return await live(request, on_delta)
        matched, secrets = self._matched(model, request)
        if self.mode != "record":
            rec = self._lookup(matched)
            if rec is not None:
                return await replay_api(rec, on_delta, self.speed, self._ref(rec))
            if self.mode == "replay":
                raise self.miss(matched)
        return await record_api(
            live, request, on_delta, matched, lambda r: self._save(r, secrets), self._note(matched)
        )

    def stream(
        self, model: Any, request: CLIRequest, live: LiveStream
    ) -> AsyncGenerator[Chunk, None]:
        if self.mode == "off":
            return live(request)
        matched, secrets = self._matched(model, request)
        if self.mode != "record":
            rec = self._lookup(matched)
            if rec is not None:
                return replay_cli(rec, self.speed, self._ref(rec))
            if self.mode == "replay":
                return _raising(self.miss(matched))
        return record_cli(
            live, request, matched, lambda r: self._save(r, secrets), self._note(matched)
        )


async def _raising(error: BaseException) -> AsyncGenerator[Chunk, None]:
    raise error
    yield  # pragma: no cover - makes this an async generator


def cassette(
    path: str | os.PathLike[str], mode: Mode = "auto", speed: float | None = 1.0
) -> Cassette:
    """A cassette for a ``with`` / ``async with`` block: every model call inside is recorded
    or replayed (see the module docstring for the modes and ``speed``)."""
    return Cassette(path, mode=mode, speed=speed)


def use_cassette(
    path: str | os.PathLike[str] | None, mode: Mode = "auto", speed: float | None = 1.0
) -> Cassette | None:
    """Make ``path`` the cassette of every model call from now on (where no ``with
    cassette(...)`` block says otherwise); ``use_cassette(None)`` turns it off. Returns the
    cassette (None when turned off)."""
    if path is None:
        active.set_default(None)
        return None
    installed = Cassette(path, mode=mode, speed=speed)
    active.set_default(installed)
    return installed
