"""Flows: graphs of operations and fan-out over many inputs, in the kernel or on Ray.

    from lion_nb import FlowView
    from lion_nb.flow import Flow

    flow = Flow()                                  # or Flow(session)
    outline = flow.add("communicate", instruction="Outline a talk on tides", branch=b)
    intro = flow.add("communicate", instruction="Write the introduction", depends_on=[outline])
    FlowView(flow)                                 # live rows; "open" shows a node's transcript
    results = await flow.run(max_concurrent=8)     # {node.id: response}
    results = await flow.run(engine="ray")         # each node a Ray task

    outs = await session.map("communicate", rows, template=b, max_concurrent=16)

Scheduling, forks, skips and cancellation: ``lion_nb.flow.executor``. On Ray
(``pip install 'lion_nb[ray]'``): ``lion_nb.flow.ray_engine``. Without ``ray.init`` first, the
first Ray run starts a local cluster (about 6 s on two cores). For a real cluster, connect
before running - ``ray.init(address="ray://<head>:10001", runtime_env={"pip": ["lion_nb[ray]"]})``
(or ``ray.init(address="auto")`` on a cluster node) - and the same cells run there: workers need
lion_nb installed and read API keys from *their own* environment (nothing secret is sent);
``ray_options={"runtime_env": {"env_vars": {...}}}`` gives a CLI agent its settings, and
``{"num_cpus": 0.25}`` lets API-bound nodes share a CPU.

What differs on Ray, by design: a node's messages land on the notebook's branch live, with the
ids the worker gave them, and those of an attempt whose worker died are taken back
(``MessageRetracted``) when Ray runs the node again; a scripted model's reply list starts from
its first reply on every worker (use ``default_reply`` or a callable reply); a CLI agent's
resume id stays on the worker; ``stream_persist`` writes into the worker's ``$LION_NB_HOME``.

Live updates on Ray: every node's lifecycle signals (``RunStart``, rounds, ``RunEnd``...) and
messages arrive live, in order, and its results and recorded messages are the same whether
anyone watches or not. Per-token ``StreamDelta`` arrive only for a node whose stream something
in the notebook watches - a handler of its branch or session that receives ``StreamDelta``:
``FlowView`` on the node it has open, a chat view of the branch, ``observe()`` of every signal
(``Branch.streams_watched``). A watcher that appears while the node runs receives, within
about a second, the reply so far (one delta whose ``snapshot`` is the text until then), then
each delta. Unwatched, the per-token traffic stays on the worker: on a small machine it was
CPU taken from the models. A stopped node keeps what it streamed either way (its stopped
turn is recorded on the worker and travels as a message).

``FlowView`` is a view: ``lion_nb.FlowView``, with the other views (ipywidgets is imported on
first use). ``from lion_nb.flow import FlowView`` still works for one release, with a
``DeprecationWarning``: the flow engine hands out no widget.
"""

from __future__ import annotations

import warnings
from typing import Any

from lion_nb.flow.graph import Flow
from lion_nb.flow.node import Operation, Status

__all__ = ["Flow", "Operation", "Status"]


def __getattr__(name: str) -> Any:
    if name == "FlowView":  # deprecated old path (one release): the view lives with the views
        warnings.warn(
            "FlowView moved: use `from lion_nb import FlowView` (`lion_nb.flow.FlowView` goes "
            "in the next release)",
            DeprecationWarning,
            stacklevel=2,
        )
        from lion_nb.widgets.flow_view import FlowView  # lazy: ipywidgets costs ~300 ms

        return FlowView
    raise AttributeError(f"module 'lion_nb.flow' has no attribute {name!r}")
