"""Deprecated: moved to ``lion_nb.port.branch_port`` (the seam below the operations); re-exported for
one release."""

from __future__ import annotations

import warnings

from lion_nb.port.branch_port import (
    BranchPort,
)

__all__ = [
    "BranchPort",
]

warnings.warn(
    "lion_nb.session.port is deprecated: import from lion_nb.port.branch_port",
    DeprecationWarning,
    stacklevel=2,
)
