"""``FlowView``: a flow's nodes, live. One row per node (status, run time, tokens, cost); a row's
button opens that node's transcript (its branch, with the reply being written); a time strip
shows which node ran when, where and for how long; **Stop** cancels the flow's ``run()``
wherever it was started (``flow.cancel()``): running nodes settle as "stopped" (keeping what
they streamed), unstarted ones as "cancelled". Stop is enabled only while something can stop.

    view = FlowView(flow)
    view                                   # then, in this or another cell:
    await flow.run()                       # or flow.run(engine="ray")

The state is ``lion_nb.flow.view_model.FlowViewModel``; every piece of HTML comes from
``lion_nb.render.flow``. A row is re-rendered only when its node changed, at most
``1 / refresh_interval`` times a second; run times of running nodes (and the strip) tick every
``tick`` seconds while the flow runs.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import ipywidgets

from lion_nb.flow.view_model import FlowViewModel
from lion_nb.render.flow import (
    flow_header_html,
    flow_html,
    flow_text,
    node_detail_html,
    row_cells_html,
    strip_html,
)
from lion_nb.widgets.live import WidgetKit
from lion_nb.widgets.viewbase import StaticFallback, Throttle

if TYPE_CHECKING:
    from lion_nb.flow.graph import Flow

__all__ = ["FlowView"]


class _Row:
    """The widgets of one node's row."""

    def __init__(self, kit: WidgetKit, node_id: uuid.UUID, on_open: Any) -> None:
        self.node_id = node_id
        self.button = ipywidgets.Button(
            description="open",
            tooltip="show this node's transcript",
            layout=ipywidgets.Layout(width="4.5em"),
        )
        self.button.on_click(lambda _: on_open(node_id))
        self.cells = kit.html("", classes=("lion-flow-cells",))
        self.box = ipywidgets.HBox((self.button, self.cells), _dom_classes=("lion-flow-row",))

    def widgets(self) -> tuple[Any, ...]:
        return (self.button, self.cells, self.box)


class FlowView(StaticFallback, ipywidgets.VBox):
    def __init__(self, flow: Flow, *, refresh_interval: float = 0.1, tick: float = 0.5) -> None:
        self.flow = flow
        self.model = FlowViewModel(flow)
        self.closed = False
        self.tick = tick
        self._kit = WidgetKit()
        self._style = self._kit.html(self.style_html())
        self._header = self._kit.html("", classes=("lion-flow-head-box",))
        self._stop = ipywidgets.Button(
            description="Stop",
            tooltip="cancel the flow's run()",
            disabled=True,
            layout=ipywidgets.Layout(width="auto", flex="0 0 auto"),
            _dom_classes=("lion-flow-stop",),
        )
        self._stop.on_click(lambda _: self.stop())
        self._stopping = False  # Stop was clicked; the run has not settled yet
        self._top = ipywidgets.HBox((self._header, self._stop), _dom_classes=("lion-flow-top",))
        self._list = ipywidgets.VBox(_dom_classes=("lion-flow-list",))
        self._strip = self._kit.html("", classes=("lion-flow-strip-box",))
        self._detail = self._kit.html("", classes=("lion-flow-detail-box",))
        self._rows: dict[uuid.UUID, _Row] = {}
        self._dirty: set[uuid.UUID] = set()
        self._detail_dirty = True
        self._ticker: asyncio.TimerHandle | None = None
        super().__init__(
            children=(self._style, self._top, self._list, self._strip, self._detail),
            _dom_classes=("lion-view", "lion-flow-view"),
        )
        self._refresh = Throttle(self._flush, refresh_interval)
        self.model.on_change = self._on_change
        self.model.attach()
        self._dirty.update(n.id for n in flow.nodes)
        self._refresh.flush()
        self._ready = True

    # ----- live --------------------------------------------------------------------------
    def _on_change(self, node_id: uuid.UUID | None) -> None:
        if self.closed:
            return
        if node_id is not None:
            self._dirty.add(node_id)
        if node_id is None or node_id == self.model.selected:
            self._detail_dirty = True
        self._refresh.request()
        node = next((n for n in self.flow.nodes if n.id == node_id), None)
        # the saved output follows the end of the run, not each pause between nodes (each
        # refresh makes Lab draw the view anew)
        if node is not None and node.status.settled and not self.model.stoppable:
            self.refresh_static()

    def _open(self, node_id: uuid.UUID) -> None:
        self.model.select(node_id)

    def stop(self) -> bool:
        """Cancel the flow's run in progress; False if it is not running."""
        stopped = self.flow.cancel()
        if stopped:
            self._stopping = True
            self._stop.disabled = True
            self._stop.description = "Stopping…"
        return stopped

    def _flush(self) -> None:
        if self.closed:
            return
        snapshot = self.model.snapshot()
        rows = {r.id: r for r in snapshot.rows}
        new = [i for i in rows if i not in self._rows]
        for node_id in new:
            self._rows[node_id] = _Row(self._kit, node_id, self._open)
            self._dirty.add(node_id)
        dirty, self._dirty = self._dirty, set()
        if self.model.running:
            dirty.update(r.id for r in snapshot.rows if r.status == "running")  # run time ticks
        if not snapshot.stoppable:
            self._stopping = False
        with self.hold_sync():
            self._stop.disabled = self._stopping or not snapshot.stoppable
            self._stop.description = "Stopping…" if self._stopping else "Stop"
            for node_id in dirty:
                row = rows.get(node_id)
                if row is not None:
                    widget = self._rows[node_id]
                    widget.cells.value = row_cells_html(row)
                    widget.button.description = "close" if row.id == snapshot.selected else "open"
            if new:
                self._list.children = tuple(self._rows[r.id].box for r in snapshot.rows)
            self._header.value = flow_header_html(snapshot)
            self._strip.value = strip_html(snapshot)
            if self._detail_dirty:
                self._detail_dirty = False
                for widget in self._rows.values():
                    widget.button.description = (
                        "close" if widget.node_id == snapshot.selected else "open"
                    )
                selected = rows.get(snapshot.selected) if snapshot.selected else None
                messages, live = self.model.transcript()
                self._detail.value = node_detail_html(selected, messages, live)
        self._schedule_tick()

    def _schedule_tick(self) -> None:
        # while the flow runs (not only while a node runs): Stop is disabled once run() ends
        if self._ticker is not None or not (self.model.running or self.flow.is_running):
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._ticker = loop.call_later(self.tick, self._on_tick)

    def _on_tick(self) -> None:
        self._ticker = None
        self._refresh.request()

    # ----- reading -----------------------------------------------------------------------
    def static_html(self) -> str:
        return flow_html(self.model.snapshot())

    def static_text(self) -> str:
        return flow_text(self.model.snapshot())

    def _release(self) -> None:
        self.model.detach()
        self._refresh.cancel()
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None

    def _owned_widgets(self) -> Iterable[Any]:
        for row in self._rows.values():
            yield from row.widgets()
        yield from (self._style, self._header, self._stop, self._top, self._list)
        yield from (self._strip, self._detail)
        yield from (self._kit.layout, self._kit.style)

    def __repr__(self) -> str:
        return f"<FlowView of {self.flow!r}>"
