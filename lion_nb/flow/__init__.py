"""Flows: graphs of operations and fan-out over many inputs, in the kernel or on Ray.

``from lion_nb.flow import Flow, FlowView``. ``FlowView`` (ipywidgets) is imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lion_nb.flow.graph import Flow
from lion_nb.operations.node import Operation, Status

if TYPE_CHECKING:
    from lion_nb.widgets.flow_view import FlowView

__all__ = ["Flow", "FlowView", "Operation", "Status"]


def __getattr__(name: str) -> Any:
    if name == "FlowView":
        from lion_nb.widgets.flow_view import FlowView

        return FlowView
    raise AttributeError(f"module 'lion_nb.flow' has no attribute {name!r}")
