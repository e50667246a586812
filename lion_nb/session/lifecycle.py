"""Deprecated: moved to ``lion_nb.port.lifecycle`` (the seam below the operations); re-exported for
one release."""

from __future__ import annotations

import warnings

from lion_nb.port.lifecycle import (
    RunTracker,
    current_run_id,
    lifecycle_suppressed,
    observed_run,
    observed_stream,
    suppress_lifecycle,
)

__all__ = [
    "RunTracker",
    "current_run_id",
    "lifecycle_suppressed",
    "observed_run",
    "observed_stream",
    "suppress_lifecycle",
]

warnings.warn(
    "lion_nb.session.lifecycle is deprecated: import from lion_nb.port.lifecycle",
    DeprecationWarning,
    stacklevel=2,
)
