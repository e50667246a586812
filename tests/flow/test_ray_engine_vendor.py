"""A flow of a vendor API model on Ray: two Anthropic nodes on workers against the loopback
Messages API server, the key read from the workers' own environment (never sent in the
payload), each node priced."""

from __future__ import annotations

import pytest

from lion_nb import Branch, iModel
from lion_nb.flow import Flow, payload
from lion_nb.flow.node import Status
from lion_nb.models.cost import cost_usd
from lion_nb.signals import RunEnd
from lion_nb.usage import Usage
from lion_nb.viewmodels.flow import FlowViewModel
from tests.servers.anthropic_server import Message, start_anthropic_server

pytestmark = pytest.mark.usefixtures("ray_local")

NOTEBOOK_KEY = "sk-ant-NOTEBOOK-own-secret-0123456789"
WORKER_KEY = "sk-ant-WORKER-own-key-9876543210"
MODEL = "claude-sonnet-4-5"


async def test_an_anthropic_flow_runs_on_ray_with_the_workers_key_and_is_priced(monkeypatch):
    pytest.importorskip("genai_prices")
    sent: list[dict] = []
    build = payload.build_payload

    def recording(node, branch):
        parts = build(node, branch)
        sent.append(parts)
        return parts

    monkeypatch.setattr(payload, "build_payload", recording)
    usage = {"input_tokens": 900, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    with start_anthropic_server(key=WORKER_KEY) as server:  # refuses any other key
        server.script(
            Message("An outline.", usage={**usage, "output_tokens": 1}, output_tokens=30),
            Message("An intro.", usage={**usage, "output_tokens": 1}, output_tokens=30),
        )
        model = iModel(
            provider="anthropic", model=MODEL, base_url=server.base_url, api_key=NOTEBOOK_KEY
        )
        branch = Branch(chat_model=model)
        ends: list[RunEnd] = []
        flow = Flow(name="tides")
        flow.session.observe(RunEnd, handler=ends.append)
        outline = flow.add("communicate", instruction="Outline", branch=branch)
        intro = flow.add("communicate", instruction="Intro", depends_on=[outline])
        env = {"env_vars": {"ANTHROPIC_API_KEY": WORKER_KEY}}
        results = await flow.run(engine="ray", ray_options={"runtime_env": env})

    assert [n.status for n in (outline, intro)] == [Status.COMPLETED] * 2, (
        outline.error,
        intro.error,
    )
    assert results == {outline.id: "An outline.", intro.id: "An intro."}
    # the workers sent their own key; the notebook's never left the notebook
    assert [r["headers"].get("x-api-key") for r in server.requests] == [WORKER_KEY] * 2
    assert len(sent) == 2
    for parts in sent:
        for value in parts.values():
            raw = value if isinstance(value, bytes) else value.encode()
            assert NOTEBOOK_KEY.encode() not in raw and WORKER_KEY.encode() not in raw
    # each node priced on its worker: the node, its run's end and the flow view say so
    one = cost_usd("anthropic", MODEL, Usage(900, 30))
    assert one == pytest.approx((900 * 3 + 30 * 15) * 1e-6)
    for node in (outline, intro):
        assert node.usage.total_cost_usd == pytest.approx(one)
        assert node.metadata["ray"]["attempts"][0]["pid"] is not None
    assert sorted(e.total_cost_usd for e in ends) == [pytest.approx(one)] * 2
    assert [(e.usage["input_tokens"], e.usage["output_tokens"]) for e in ends] == [(900, 30)] * 2
    assert intro.branch.messages[-1].metadata["usage"]["total_cost_usd"] == pytest.approx(one)
    snapshot = FlowViewModel(flow).snapshot()
    assert [r.cost_usd for r in snapshot.rows] == [pytest.approx(one)] * 2
    assert snapshot.cost_usd == pytest.approx(2 * one)
