"""The cassette in force, carried to a Ray worker: a flow (or grid) on Ray replays as it does here.

A cassette is in force in this process (``lion_nb.use_cassette``, ``with cassette(...)``,
``lion_nb.cassettes.active``); a Ray worker is another process, perhaps on another machine,
where none is. So the engine sends the cassette with each node (``cassette_part``): its mode,
speed and name, and its recordings as data (the file's lines, put into Ray's object store once
per run and cassette, so a remote worker needs no copy of the file). The worker runs the node
under a cassette replaying a copy of those lines (``worker_cassette``), known by the notebook's
name, so a replayed reply's ``replayed`` metadata and a ``CassetteMiss`` name the notebook's
cassette.

A worker never records: its file is a copy that goes with the attempt. In mode "replay" a
request the cassette lacks fails the node (``CassetteMiss``); in mode "auto" it is made live on
the worker, in mode "record" every call is, and those calls are not recorded: record them with
``engine="local"`` (a grid or flow replays on Ray what it recorded here).
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from lion_nb.cassettes import active, store
from lion_nb.cassettes.cassette import Cassette, Mode

__all__ = ["cassette_lines", "cassette_part", "worker_cassette", "worker_mode"]

_WORKER_MODE: dict[str, Mode] = {"replay": "replay", "auto": "auto", "record": "off"}


def worker_mode(mode: str) -> Mode:
    """The mode a worker's copy runs in: the notebook's, but never recording ("record" calls
    the models: "off")."""
    return _WORKER_MODE.get(mode, "off")


def cassette_lines(tape: Cassette) -> str:
    """The cassette's recordings as a cassette file's text (its file and the sibling it
    records into, as it replays them)."""
    lines = [json.dumps(store.HEADER)]
    lines += [rec.raw or store.encode(rec, ()) for rec in tape.recordings]
    return "\n".join(lines) + "\n"


def cassette_part(lines_of: Callable[[Cassette], Any] = cassette_lines) -> dict[str, Any] | None:
    """What a node sends of the cassette in force here (None: none, or one that plays
    nothing). ``lines_of(cassette)``: its lines, or what travels instead (the engine's object
    in Ray's store, made once per run: ``RayEngine``)."""
    tape = active.current()
    if not isinstance(tape, Cassette) or worker_mode(tape.mode) == "off":
        return None
    return {"name": tape.shown, "mode": tape.mode, "speed": tape.speed, "lines": lines_of(tape)}


@contextlib.contextmanager
def worker_cassette(part: dict[str, Any] | None) -> Iterator[Cassette | None]:
    """On the worker: the notebook's cassette (``cassette_part``) in force for the block."""
    if part is None:
        yield None
        return
    lines = part["lines"]
    if not isinstance(lines, str):
        import ray  # lazy: only on a Ray worker, which has it imported already

        lines = ray.get(lines)
    with tempfile.TemporaryDirectory(prefix="lion_nb_cassette_") as folder:
        copy = Path(folder) / "replayed.cassette.jsonl"
        copy.write_text(lines, encoding="utf-8", errors="surrogateescape")
        tape = Cassette(
            copy,
            mode=worker_mode(part["mode"]),
            speed=part["speed"],
            record_to=Path(folder) / "unkept.cassette.jsonl",  # "auto": goes with the folder
            name=part["name"],
        )
        with tape:
            yield tape
