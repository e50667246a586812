"""Deprecated: the flow's view model moved to ``lion_nb.viewmodels.flow`` (a view model sits
above the flow engine, with the other views' state). This path re-exports it for one release."""

from __future__ import annotations

import warnings

from lion_nb.viewmodels.flow import FlowSnapshot, FlowViewModel, NodeRow, error_text, worker_of

__all__ = ["FlowSnapshot", "FlowViewModel", "NodeRow", "error_text", "worker_of"]

warnings.warn(
    "lion_nb.flow.view_model moved to lion_nb.viewmodels.flow: import FlowViewModel from there "
    "(the old path goes in the next release)",
    DeprecationWarning,
    stacklevel=2,
)
