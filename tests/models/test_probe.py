"""What a server can do, learnt once per server (``lion_nb.models.probe``), against loopback
servers that answer as llama-server (``/props``) and llama_cpp.server (its OpenAPI title and
its json_schema refusal) do; the limiter it sets; ``max_concurrent=``."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from lion_nb import iModel
from lion_nb.errors import ConfigurationError, ProviderError
from lion_nb.models import capabilities
from lion_nb.models.base import ModelRequest
from lion_nb.models.probe import props_facts
from tests.servers.chat_server import ErrorReply, Reply
from tests.servers.llama_like import LLAMA_CPP_PYTHON_REFUSAL, PROPS_4, SLACK, LikeServer


@pytest.fixture(autouse=True)
def _forget_servers() -> Iterator[None]:
    yield
    capabilities.forget()  # ports are reused: what a test's server said must not outlive it


@pytest.fixture
def llama_like() -> Iterator[LikeServer]:
    with LikeServer({"/props": PROPS_4}, default=Reply("ok", delay=0.05)).start() as server:
        yield server


@pytest.fixture
def llama_cpp_python_like() -> Iterator[LikeServer]:
    routes = {"/openapi.json": {"openapi": "3.1.0", "info": {"title": "🦙 llama.cpp Python API"}}}
    with LikeServer(routes, {"detail": "Not Found"}, default=Reply("ok", delay=0.05)) as server:
        server.start()
        yield server


def _request(schema: dict[str, Any] | None = None) -> ModelRequest:
    return ModelRequest(messages=[{"role": "user", "content": "hi"}], response_schema=schema)


def test_props_facts_read_slots_window_and_tools() -> None:
    assert props_facts(PROPS_4) == {
        "slots": 4,
        "slot_window": 512,
        "native_tools": False,
        "json_schema": True,
        "probed": True,
    }
    # an older server without default_generation_settings: its window shared by its slots
    older = props_facts({"total_slots": 2, "n_ctx": 4096})
    assert older["slots"] == 2 and older["slot_window"] == 2048 and older["native_tools"] is None
    tools = {"supports_tools": True, "supports_tool_calls": True}
    assert props_facts({"total_slots": 1, "chat_template_caps": tools})["native_tools"] is True


async def test_llama_server_is_asked_once_for_every_model_on_it(llama_like: LikeServer) -> None:
    chat = iModel(provider="openai", model="m", base_url=llama_like.base_url)
    assert chat.context_window is None  # nothing known before the server is asked
    caps = await chat.capabilities()
    assert (caps.slots, caps.slot_window, caps.native_tools, caps.json_schema) == (
        4,
        512,
        False,
        True,
    )
    assert chat.context_window == 512  # the slot's window, not the model's
    # the Anthropic format at the server's root, and the Responses API: the same server
    messages = iModel(provider="anthropic", model="m", base_url=llama_like.root)
    responses = iModel(provider="openai", model="m", base_url=llama_like.base_url, api="responses")
    assert (await messages.capabilities()).slots == 4
    assert (await responses.capabilities()).slot_window == 512
    await asyncio.gather(*(chat.capabilities() for _ in range(5)))
    assert llama_like.gets == ["/props"]


async def test_concurrent_first_calls_share_one_probe(llama_like: LikeServer) -> None:
    model = iModel(provider="openai", model="m", base_url=llama_like.base_url)
    await asyncio.gather(*(model.capabilities() for _ in range(5)))
    assert llama_like.gets == ["/props"]


async def test_a_llama_server_gets_no_more_generations_than_its_slots() -> None:
    one_slot = {**PROPS_4, "total_slots": 1, "default_generation_settings": {"n_ctx": 2048}}
    with LikeServer({"/props": one_slot}, default=Reply("ok", delay=0.05)).start() as server:
        model = iModel(provider="openai", model="m", base_url=server.base_url)
        replies = await asyncio.gather(*(model.complete(_request()) for _ in range(5)))
    assert [r.text for r in replies] == ["ok"] * 5
    assert server.most_in_flight == 1 and len(server.requests) == 5


async def test_an_unknown_server_keeps_todays_concurrency() -> None:
    with LikeServer({}, default=Reply("ok", delay=0.2)).start() as server:
        model = iModel(provider="openai", model="m", base_url=server.base_url)
        await asyncio.gather(*(model.complete(_request()) for _ in range(4)))
        assert server.most_in_flight > 1
        assert (await model.capabilities()).slots is None
        assert server.gets == ["/props", "/openapi.json"]  # asked once, learnt nothing
        await model.aclose()


async def test_max_concurrent_is_kept_for_every_model_on_the_server() -> None:
    with LikeServer({}, default=Reply("ok", delay=0.05)).start() as server:
        one = iModel(provider="openai", model="m", base_url=server.base_url, max_concurrent=1)
        two = iModel(provider="openai", model="m", base_url=server.base_url, max_concurrent=1)
        await asyncio.gather(*(m.complete(_request()) for m in [one, two] * 3))
    assert server.most_in_flight == 1 and len(server.requests) == 6
    assert all("max_concurrent" not in r.body for r in server.requests)  # never sent


def test_max_concurrent_is_an_option_of_every_provider() -> None:
    for provider in ("openai", "anthropic", "gemini", "local", "scripted", "claude_code"):
        iModel(provider=provider, max_concurrent=2)
    iModel(provider="openai", api="responses", max_concurrent=1)
    for wrong in (0, -1, 1.5, "2", True):
        with pytest.raises(ConfigurationError, match="max_concurrent"):
            iModel(provider="openai", max_concurrent=wrong)


async def test_max_concurrent_limits_a_model_without_a_server() -> None:
    """The scripted model (any provider) is limited by hand too: a reply starts only once
    fewer than two are being written."""
    starts: list[float] = []
    ends: list[float] = []

    def reply(request: Any) -> str:
        starts.append(time.monotonic())
        return "one two three four"

    model = iModel(provider="scripted", default_reply=reply, delay=0.02, max_concurrent=2)

    async def one() -> None:
        await model.complete(_request(), lambda *a, **k: None)
        ends.append(time.monotonic())

    await asyncio.gather(*(one() for _ in range(6)))
    spans = list(zip(sorted(starts), sorted(ends), strict=True))
    most = max(sum(1 for s, e in spans if s <= start < e - SLACK) for start, _ in spans)
    assert most == 2


async def test_max_concurrent_limits_cli_streams_until_they_end() -> None:
    from lion_nb.models.base import CLIRequest

    model = iModel(provider="scripted", cli=True, default_reply="a b c d", delay=0.02)
    limited = model.copy(max_concurrent=1)
    spans: list[tuple[float, float]] = []

    async def one(m: iModel) -> None:
        stream = m.stream(CLIRequest(prompt="hi"))
        first = None
        async for _ in stream:
            first = first or time.monotonic()
        assert first is not None
        spans.append((first, time.monotonic()))

    def most() -> int:
        return max(sum(1 for s, e in spans if s <= start < e - SLACK) for start, _ in spans)

    await asyncio.gather(*(one(model) for _ in range(3)))
    assert most() == 3  # unlimited: today's behaviour
    spans.clear()
    await asyncio.gather(*(one(limited) for _ in range(3)))
    assert most() == 1


async def test_llama_cpp_server_is_one_slot_and_gets_json_object(
    llama_cpp_python_like: LikeServer,
) -> None:
    server = llama_cpp_python_like
    model = iModel(provider="openai", model="m", base_url=server.base_url)
    caps = await model.capabilities()
    assert (caps.slots, caps.json_schema, caps.native_tools) == (1, False, False)
    await model.complete(_request({"type": "object"}))
    assert server.last_request.body["response_format"] == {
        "type": "json_object",
        "schema": {"type": "object"},
    }


async def test_a_json_schema_refusal_is_learnt_and_the_request_sent_once_more() -> None:
    """A server unknown to the probe that refuses json_schema (HTTP 500): the one request is
    sent again with json_object at once (not retried as it was), and later requests are
    sent as json_object from the start."""
    with LikeServer({}, default=Reply('{"a": 1}')).start() as server:
        server.script(ErrorReply(500, LLAMA_CPP_PYTHON_REFUSAL))
        model = iModel(provider="openai", model="m", base_url=server.base_url)
        started = time.perf_counter()
        response = await model.complete(_request({"type": "object"}))
        assert time.perf_counter() - started < 5  # no backoff between the two
        assert response.text == '{"a": 1}'
        kinds = [r.body["response_format"]["type"] for r in server.requests]
        assert kinds == ["json_schema", "json_object"]
        assert (await model.capabilities()).json_schema is False
        await model.complete(_request({"type": "object"}))
        assert server.last_request.body["response_format"]["type"] == "json_object"
        assert len(server.requests) == 3


async def test_json_mode_given_by_the_user_wins() -> None:
    with LikeServer({}, default=Reply("{}")).start() as server:
        server.script(ErrorReply(500, LLAMA_CPP_PYTHON_REFUSAL))
        model = iModel(
            provider="openai", model="m", base_url=server.base_url, json_mode="json_schema"
        )
        with pytest.raises(ProviderError, match="json_mode='json_object'"):
            await model.complete(_request({"type": "object"}))
        assert len(server.requests) == 1  # refused once, not resent in another form
        capabilities.remember(server.base_url, json_schema=True)
        forced = model.copy(json_mode="json_object")
        await forced.complete(_request({"type": "object"}))
        assert server.last_request.body["response_format"]["type"] == "json_object"


async def test_a_vendor_cloud_is_never_asked() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise AssertionError(f"nothing may be sent: {request.url}")

    client = httpx.AsyncClient(transport=httpx.MockTransport(refuse))
    for model in (
        iModel(provider="openai", model="gpt-4.1-mini", api_key="k", http_client=client),
        iModel(provider="anthropic", model="claude", api_key="k", http_client=client),
        iModel(provider="openrouter", model="x", api_key="k", http_client=client),
    ):
        assert await model.capabilities() == capabilities.Capabilities()
    await client.aclose()


async def test_a_cassette_in_force_asks_nothing(llama_like: LikeServer, tmp_path: Any) -> None:
    import lion_nb

    model = iModel(provider="openai", model="m", base_url=llama_like.base_url)
    with lion_nb.cassette(tmp_path / "c.jsonl", mode="record"):
        await model.complete(_request())
        assert (await model.capabilities()).probed is False
    assert llama_like.gets == []


async def test_the_embedded_model_is_known_without_asking() -> None:
    model = iModel(provider="local", n_ctx=1024)
    caps = await model.capabilities()
    assert (caps.slots, caps.slot_window, caps.json_schema, caps.native_tools) == (
        1,
        1024,
        True,
        False,
    )
    assert model.provider_or_none is None  # no weights loaded to say so


def test_a_probe_from_another_event_loop_sees_what_was_learnt(llama_like: LikeServer) -> None:
    url = llama_like.base_url
    seen: list[int | None] = []

    def in_thread() -> None:
        seen.append(asyncio.run(iModel(provider="openai", base_url=url).capabilities()).slots)

    asyncio.run(iModel(provider="openai", base_url=url).capabilities())
    thread = threading.Thread(target=in_thread)
    thread.start()
    thread.join(30)
    assert seen == [4] and llama_like.gets == ["/props"]


def test_the_props_fixture_is_llama_servers_shape() -> None:
    """PROPS_4 holds only keys llama-server sends (checked for real in
    tests/conformance/test_capabilities.py)."""
    assert json.loads(json.dumps(PROPS_4))["total_slots"] == 4
