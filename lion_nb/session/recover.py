"""``recover_branch``: a branch back after a crash during ``run(stream_persist=True)``.

The files are written by ``lion_nb.port.stream_persist`` (the snapshot, then the live chunk
buffer); this rebuilds the branch from the snapshot and replays the buffered chunks through the
same ``StreamAssembler`` ``run()`` uses.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from pathlib import Path
from typing import Any

from lion_nb.operations.assemble import StreamAssembler
from lion_nb.port.stream_persist import BUFFER_SUFFIX, read_buffer, snapshot_path
from lion_nb.session.branch import Branch

logger = logging.getLogger(__name__)


def _find_snapshot(path: Path, branch_id: uuid.UUID | str | None) -> Path:
    if path.is_file():
        return path
    if not path.is_dir():
        raise FileNotFoundError(f"no snapshot file or directory at {str(path)!r}")
    if branch_id is not None:
        found = snapshot_path(path, branch_id)
        if not found.is_file():
            raise FileNotFoundError(f"no snapshot for branch {branch_id} in {str(path)!r}")
        return found
    leftovers = sorted(path.glob(f"*{BUFFER_SUFFIX}"))
    if len(leftovers) == 1:
        return snapshot_path(path, leftovers[0].name[: -len(BUFFER_SUFFIX)])
    what = "several leftover buffers" if leftovers else "no leftover buffer"
    raise ValueError(f"{str(path)!r} holds {what}; pass branch_id= to choose a snapshot")


def recover_branch(
    snapshot_path_or_dir: str | os.PathLike[str],
    branch_id: uuid.UUID | str | None = None,
    *,
    buffer_path: str | os.PathLike[str] | None = None,
) -> Branch:
    """Rebuild a branch after a crash during ``run(stream_persist=True)``.

    ``snapshot_path_or_dir``: the snapshot file, or the snapshot directory plus ``branch_id``
    (which may be left out when the directory holds exactly one leftover buffer).
    ``buffer_path``: the live buffer; default ``<branch id>.buffer.jsonl`` beside the
    snapshot (pass it when ``persist_dir`` differed from ``snapshot_dir``).

    The snapshot is loaded (``Branch.from_dict``), then the buffered chunks are replayed
    through ``StreamAssembler``: the responses, tool requests and tool results the run had
    recorded come back with the same ids (those the snapshot already holds are skipped), and
    text received but never recorded becomes a final response marked
    ``metadata["recovered"] = True``. Without a buffer the snapshot is returned as it is.
    The files are left in place; the provider session id, when the buffer has one, is set on
    the branch's CLI model so the next ``run()`` resumes the agent's session.
    """
    snap = _find_snapshot(Path(snapshot_path_or_dir), branch_id)
    branch = Branch.from_dict(json.loads(snap.read_text(encoding="utf-8")))
    buf = (
        Path(buffer_path)
        if buffer_path is not None
        else snap.parent / (f"{branch.id}{BUFFER_SUFFIX}")
    )
    if not buf.is_file():
        return branch
    header, chunks = read_buffer(buf)
    if header.get("branch_id") not in (None, str(branch.id)):
        raise ValueError(f"{buf} belongs to branch {header['branch_id']}, not {branch.id}")
    if header.get("instruction_id") and uuid.UUID(header["instruction_id"]) not in branch.messages:
        logger.warning(
            "recover: the snapshot does not hold the run's instruction; the "
            "recovered messages follow the snapshot's last message"
        )
    namespace = uuid.UUID(header["run_id"]) if header.get("run_id") else None
    asm = StreamAssembler(
        sender=header.get("sender"),
        recipient=header.get("recipient"),
        provider=header.get("provider"),
        namespace=namespace,
    )

    def record(messages: list[Any]) -> None:
        for message in messages:
            if message.id not in branch.messages:
                branch.restore_message(message)

    for chunk in chunks:
        record(asm.feed(chunk))
        if asm.ended:
            break
    if asm.error is None and asm.ended:  # a benign end: the run had finished
        record(asm.finish(recovered=True))
    elif asm.error is None and asm.result:  # the result arrived, the final snapshot did not
        record(asm.finish(recovered=True))
    else:
        record(asm.flush(recovered=True))
    if asm.session_id:
        _restore_session(branch, asm.session_id)
    return branch


def _restore_session(branch: Branch, session_id: str) -> None:
    model = branch.chat_model_or_none
    if model is None:
        branch.metadata.setdefault("provider_session_id", session_id)
        return
    try:
        if model.is_cli:
            model.provider_session_id = session_id
    except Exception as exc:  # a provider that cannot be built here: keep the id visible
        logger.warning("recover: could not set the session id on %r: %s", model, exc)
        branch.metadata.setdefault("provider_session_id", session_id)
