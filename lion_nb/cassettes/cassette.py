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

Where recordings go: ``"record"`` writes the file you named. ``"auto"`` never changes a cassette
that exists (one shipped with a notebook, say): it records new calls into the sibling file
``sibling(path)`` (``lesson.cassette.jsonl`` -> ``lesson.local.cassette.jsonl``), replays from
both, and says so with a ``CassetteWarning`` at its first recording there; only a cassette that
does not exist yet is recorded into directly. ``record_to=`` names the file to record into
instead. In "auto" mode a miss whose model cannot be used here (not installed, not reached) is
a ``CassetteMiss`` too, saying the prompt is not on the cassette, rather than the model's error.

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
from lion_nb.cassettes.files import CassetteFile, sibling
from lion_nb.cassettes.matching import fingerprint, request_of
from lion_nb.cassettes.miss import miss_error
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

__all__ = ["MODES", "Cassette", "CassetteWarning", "Mode", "cassette", "sibling", "use_cassette"]

Mode = Literal["auto", "record", "replay", "off"]
MODES: tuple[Mode, ...] = ("auto", "record", "replay", "off")


class CassetteWarning(UserWarning):
    """Something about a cassette file to know: a damaged line skipped ("auto" and "record"
    modes), a write that failed, new calls recorded into the sibling file ("auto")."""


def _speed(speed: float | None) -> float | None:
    if speed is None or speed == 0:
        return None
    if isinstance(speed, bool) or not isinstance(speed, int | float) or speed < 0:
        raise ValueError(f"speed must be a positive number, 0 or None (at once), not {speed!r}")
    return float(speed)


class Cassette:
    """One cassette file in one mode: model calls recorded once and replayed anywhere.

    A cassette sits at the provider seam (``iModel.complete`` / ``iModel.stream``): a
    replayed call streams its recorded reply through the same path as a live one, so verbs,
    signals and views behave alike, and it never constructs the provider (no key, no
    server, no weights). A request is matched by what the model would see (provider, model,
    messages, tools, response format, sampling options), never by credentials, URLs or
    machine-local settings, so a recording made on one machine replays on another; secrets
    are never written. Identical requests replay their
    recordings in recorded order, the last one repeating.

    Usable as a (sync or async) context manager, which makes it the cassette of the code
    inside; ``use_cassette`` makes one the default everywhere.

    Args:
        path: The cassette file (JSON lines, e.g. ``lesson.cassette.jsonl``).
        mode: ``"auto"`` replays what the cassette has and records what it lacks;
            ``"record"`` calls the models and rewrites what it calls; ``"replay"`` never
            calls a model (a request without a recording raises ``CassetteMiss``); ``"off"``
            calls the models and touches no file.
        speed: 1.0 replays at the recorded pace, 10 ten times faster, None (or 0) at once.
        record_to: The file new calls are recorded into (modes "auto" and "record"). By
            default ``path`` in "record" mode, and in "auto" mode when ``path`` does not exist
            yet; else ``sibling(path)``, so "auto" never changes a shipped cassette.
            ``recording_to`` says which (None: this cassette records nothing).
        name: What the cassette is called in what it says (a replayed reply's ``replayed``
            metadata, a miss) when ``path`` is a copy of it: a Ray worker replays a copy of
            the notebook's cassette (``lion_nb.flow.ray_cassette``). Default: ``path``.

    Raises:
        ValueError: An unknown mode or a negative speed.
        CassetteError: In "replay" mode, a damaged line in the file (in the other modes it
            is a ``CassetteWarning`` and the line is skipped).

    Example:
        ```python
        with Cassette("lesson.cassette.jsonl", mode="replay", speed=None):
            await branch.communicate("What is a cassette?")  # no model is called
        ```
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        mode: Mode = "auto",
        speed: float | None = 1.0,
        *,
        record_to: str | os.PathLike[str] | None = None,
        name: str | None = None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(map(repr, MODES))}, not {mode!r}")
        self.path = Path(path)
        self.shown = name or os.fspath(path)
        self.mode: Mode = mode
        self.speed = _speed(speed)
        self.replayed = 0  # calls served from the file in this session
        self.recorded = 0  # calls recorded into it
        self._lock = threading.Lock()
        self._tokens: ContextVar[tuple[Token[object], ...]] = ContextVar(
            f"lion_nb_cassette_tokens_{id(self)}", default=()
        )
        self._named = CassetteFile(path)
        self._named.shown = self.shown
        self._target = self._record_file(record_to)  # where recordings go (None: nowhere)
        self._files: list[CassetteFile] = []  # what replays come from, in order
        if self._target is not None and mode == "record":
            self._files = [self._target]
        elif mode != "off":
            self._files = [self._named]
            if self._target is not None and self._target is not self._named:
                self._files.append(self._target)
        self._by_key: dict[str, list[tuple[Recording, str]]] = {}
        self._served: dict[str, int] = {}
        self._asked = 0  # requests met in this session (a miss's position)
        self._told = record_to is not None  # where it records was said (the user named it)
        self._rewritten: set[str] = set()  # keys re-recorded in this session ("record")
        self._mine: set[str] = set()  # the lines this cassette wrote
        self._pending: list[Recording] = []  # recorded, not yet on disk (a write failed)
        for file in self._files:
            self._load(file)
        self._reindex()

    def _record_file(self, record_to: str | os.PathLike[str] | None) -> CassetteFile | None:
        """The file this cassette records into: ``record_to``; else in "record" mode the named
        file, in "auto" mode the named file when it does not exist yet, else its sibling."""
        if self.mode not in ("auto", "record"):
            return None
        target = record_to
        if target is None:
            new = self.mode == "record" or not self.path.exists()
            own = os.fspath(self.path)  # the file itself (``name`` may call it otherwise)
            target = own if new else sibling(own)
        if self._named.is_(target):
            return self._named
        return CassetteFile(target)

    def _load(self, file: CassetteFile) -> None:
        file.items = store.read(file.path)
        damaged = [item for item in file.items if isinstance(item, Damaged)]
        if damaged:
            lines = "; ".join(f"line {d.line}: {d.reason}" for d in damaged)
            if self.mode == "replay":
                raise CassetteError(
                    f"the cassette {file.shown!r} is damaged ({lines}); fix or remove those "
                    "lines, or use mode='auto' to skip them",
                    path=file.shown,
                    line=damaged[0].line,
                )
            warnings.warn(
                CassetteWarning(
                    f"the cassette {file.shown!r} has damaged lines, skipped (and kept as they "
                    f"are when the file is rewritten): {lines}"
                ),
                stacklevel=4,
            )

    def _reindex(self) -> None:
        self._by_key = {}
        for file in self._files:
            for item in file.items:
                if isinstance(item, Recording):
                    self._by_key.setdefault(item.key, []).append((item, file.shown))

    # -- what is on it -------------------------------------------------------------------------

    @property
    def recordings(self) -> list[Recording]:
        """The calls on the cassette, in file order (the named file's, then those recorded
        into the sibling file)."""
        return [rec for rec, _ in self._recordings()]

    def _recordings(self) -> list[tuple[Recording, str]]:
        return [
            (item, file.shown)
            for file in self._files
            for item in file.items
            if isinstance(item, Recording)
        ]

    @property
    def recording_to(self) -> str | None:
        """The file new calls are recorded into (as given), or None ("replay", "off")."""
        return self._target.shown if self._target is not None else None

    @property
    def replaying_from(self) -> str | None:
        """The cassette replayed from (as given), or None ("record", "off")."""
        return self.shown if self.mode in ("auto", "replay") else None

    def __len__(self) -> int:
        return len(self.recordings)

    def __repr__(self) -> str:
        speed = "at once" if self.speed is None else f"speed={self.speed:g}"
        into = ""
        if self.recording_to is not None and self.recording_to != self.shown:
            into = f", recording to {self.recording_to!r}"
        return (
            f"Cassette({self.shown!r}, mode={self.mode!r}, {speed}{into}: {len(self)} calls; "
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

    @staticmethod
    def _ref(rec: Recording, shown: str) -> dict[str, Any]:
        return {
            "cassette": shown,
            "call": rec.call,
            "line": rec.line,
            "recorded_at": rec.recorded_at,
        }

    def _ask(self) -> int:
        """This request's 0-based place among the requests of this session."""
        with self._lock:
            self._asked += 1
            return self._asked - 1

    def _lookup(self, matched: dict[str, Any]) -> tuple[Recording, str] | None:
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
        target = self._target
        assert target is not None  # only "auto" and "record" record
        with self._lock:
            self.recorded += 1
            self._pending.append(rec)
            if self.mode == "record":
                self._rewritten.add(rec.key)
            try:
                items = store.read(target.path)
            except CassetteError:
                items = [i for i in target.items if all(i is not p for p in self._pending)]
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
            target.items = items
            self._reindex()
            try:
                store.write(target.path, items, secrets)
            except OSError as exc:  # the reply still reaches the caller; the next save retries
                warnings.warn(
                    CassetteWarning(
                        f"could not write the cassette {target.shown!r} ({exc}); this "
                        "recording is kept in memory and written with the next one"
                    ),
                    stacklevel=2,
                )
                return
            self._mine.update(r.raw for r in self._pending)
            self._pending.clear()
            told, self._told = self._told, True
        if not told and target is not self._named:
            warnings.warn(
                CassetteWarning(
                    f"new calls are recorded into {target.shown!r}: mode 'auto' does not "
                    f"change the existing cassette {self.shown!r} (record_to= names another "
                    "file; mode='record' re-records the cassette itself)"
                ),
                stacklevel=2,
            )

    def _unavailable(
        self, matched: dict[str, Any], position: int
    ) -> Callable[[BaseException], BaseException] | None:
        """In "auto" mode: the miss to raise when the model that would record it cannot be
        used here (the prompt is not on the cassette; the model's own error is its cause)."""
        if self.mode != "auto":
            return None
        return lambda error: self.miss(matched, position=position, unavailable=error)

    def miss(
        self,
        matched: dict[str, Any],
        *,
        position: int = 0,
        unavailable: BaseException | None = None,
    ) -> CassetteMiss:
        """The error for a request this cassette cannot replay (``miss.miss_error``): short,
        naming the closest recording (the same position in the session first) and what
        differs, and how to record it. ``position``: the request's 0-based place among this
        session's requests; ``unavailable``: the error of the model that could not record it
        ("auto" mode)."""
        return miss_error(
            matched,
            shown=self.shown,
            mode=self.mode,
            exists=self.path.exists(),
            recorded=self._recordings(),
            position=position,
            unavailable=unavailable,
        )

    async def complete(
        self,
        model: Any,
        request: ModelRequest,
        on_delta: DeltaSink | None,
        live: LiveComplete,
    ) -> ModelResponse:
        """One API call through the cassette (``iModel.complete`` calls it): the recorded
        reply replayed through ``on_delta``, else ``live(request, on_delta)`` called and
        recorded, as the mode says.

        Raises:
            CassetteMiss: No recording matches, in "replay" mode (or in "auto" mode when
                the model that would record it cannot be used here).
        """
        if self.mode == "off":
            return await live(request, on_delta)
        matched, secrets = self._matched(model, request)
        position = self._ask()
        if self.mode != "record":
            found = self._lookup(matched)
            if found is not None:
                rec, shown = found
                return await replay_api(rec, on_delta, self.speed, self._ref(rec, shown))
            if self.mode == "replay":
                raise self.miss(matched, position=position)
        return await record_api(
            live,
            request,
            on_delta,
            matched,
            lambda r: self._save(r, secrets),
            self._unavailable(matched, position),
        )

    def stream(
        self, model: Any, request: CLIRequest, live: LiveStream
    ) -> AsyncGenerator[Chunk, None]:
        """A CLI agent's stream through the cassette (``iModel.stream`` calls it): the
        recorded chunks replayed (no process starts), else ``live(request)`` streamed and
        recorded, as the mode says. A miss in "replay" mode raises ``CassetteMiss`` from
        the stream."""
        if self.mode == "off":
            return live(request)
        matched, secrets = self._matched(model, request)
        position = self._ask()
        if self.mode != "record":
            found = self._lookup(matched)
            if found is not None:
                rec, shown = found
                return replay_cli(rec, self.speed, self._ref(rec, shown))
            if self.mode == "replay":
                return _raising(self.miss(matched, position=position))
        return record_cli(
            live,
            request,
            matched,
            lambda r: self._save(r, secrets),
            self._unavailable(matched, position),
        )


async def _raising(error: BaseException) -> AsyncGenerator[Chunk, None]:
    raise error
    yield  # pragma: no cover - makes this an async generator


def cassette(
    path: str | os.PathLike[str],
    mode: Mode = "auto",
    speed: float | None = 1.0,
    *,
    record_to: str | os.PathLike[str] | None = None,
) -> Cassette:
    """A ``Cassette`` for a ``with`` / ``async with`` block: every model call inside is
    recorded or replayed. Arguments as for ``Cassette`` (the modes, ``speed``, ``record_to``).

    Example:
        ```python
        with lion_nb.cassette("lesson.cassette.jsonl", speed=None):
            await branch.communicate("What is a cassette?")
        ```
    """
    return Cassette(path, mode=mode, speed=speed, record_to=record_to)


def use_cassette(
    path: str | os.PathLike[str] | None,
    mode: Mode = "auto",
    speed: float | None = 1.0,
    *,
    record_to: str | os.PathLike[str] | None = None,
) -> Cassette | None:
    """Make ``path`` the cassette of every model call from now on, where no ``with
    cassette(...)`` block says otherwise; ``use_cassette(None)`` turns it off.

    This is how a notebook ships with its model calls: record them once (``mode="auto"``
    records what the cassette lacks), commit the file, and a reader without a key or a GPU
    replays them. Arguments as for ``Cassette``; the chat view's status line says while one
    is in force ("replaying from …", "recording to …").

    Returns:
        The cassette now in force (None when turned off).

    Example:
        ```python
        lion_nb.use_cassette("lesson.cassette.jsonl")  # for the rest of the notebook
        lion_nb.use_cassette(None)  # off again
        ```
    """
    if path is None:
        active.set_default(None)
        return None
    installed = Cassette(path, mode=mode, speed=speed, record_to=record_to)
    active.set_default(installed)
    return installed
