"""Deprecated: moved to ``lion_nb.port.tools`` (the seam below the operations); re-exported for
one release."""

from __future__ import annotations

import warnings

from lion_nb.port.tools import (
    Tool,
    ToolRegistry,
)

__all__ = [
    "Tool",
    "ToolRegistry",
]

warnings.warn(
    "lion_nb.session.tools is deprecated: import from lion_nb.port.tools",
    DeprecationWarning,
    stacklevel=2,
)
