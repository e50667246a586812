"""Deprecated: stream persistence moved below the operations, recovery to the facade.

* ``lion_nb.port.stream_persist``: ``write_snapshot``, ``ChunkBuffer``, ``read_buffer``,
  ``chunk_to_dict``/``chunk_from_dict``, ``snapshot_path``/``buffer_path`` and the file
  names' constants;
* ``lion_nb.session.recover``: ``recover_branch`` (also ``lion_nb.recover_branch``).

This module re-exports them for one release.
"""

from __future__ import annotations

import warnings

from lion_nb.port.stream_persist import (
    BUFFER_FORMAT,
    BUFFER_SUFFIX,
    SNAPSHOT_SUFFIX,
    ChunkBuffer,
    buffer_path,
    chunk_from_dict,
    chunk_to_dict,
    read_buffer,
    snapshot_path,
    write_snapshot,
)
from lion_nb.session.recover import recover_branch

__all__ = [
    "BUFFER_FORMAT",
    "BUFFER_SUFFIX",
    "SNAPSHOT_SUFFIX",
    "ChunkBuffer",
    "buffer_path",
    "chunk_from_dict",
    "chunk_to_dict",
    "read_buffer",
    "recover_branch",
    "snapshot_path",
    "write_snapshot",
]

warnings.warn(
    "lion_nb.persist is deprecated: import the stream-persistence writer from "
    "lion_nb.port.stream_persist and recover_branch from lion_nb.session.recover "
    "(or lion_nb.recover_branch)",
    DeprecationWarning,
    stacklevel=2,
)
