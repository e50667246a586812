"""Gemini and the OpenAI Responses API, end to end against loopback servers speaking each
vendor's documented streaming format (tests/servers/vendor_servers.py): text, thinking, tool
calls, structured output, the finish reason, usage, refused requests, mid-stream failures and
options the API does not take."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import BaseModel

from lion_nb import Branch, iModel
from lion_nb.errors import (
    AuthenticationError,
    ConfigurationError,
    ProviderError,
    RateLimitError,
    ServerError,
)
from lion_nb.models.base import ModelRequest
from lion_nb.models.gemini import gemini_schema
from lion_nb.models.openai_responses import OpenAIResponsesProvider
from lion_nb.signals import RunEnd, RunFailed, StreamDelta
from tests.servers import ErrorReply, Reply
from tests.servers.chat_server import ChatServer
from tests.servers.vendor_servers import start_gemini_server, start_responses_server

KEY = "test-key-0123456789abcdefSECRET"


@dataclass
class Vendor:
    name: str
    start: Callable[[], ChatServer]
    provider: str
    model: str
    options: dict[str, Any]
    key_env: str

    def imodel(self, server: ChatServer, **kw: Any) -> iModel:
        kw.setdefault("api_key", KEY)
        kw.setdefault("base_url", server.base_url)
        return iModel(provider=self.provider, model=self.model, **{**self.options, **kw})


GEMINI = Vendor("gemini", start_gemini_server, "gemini", "gemini-2.5-flash", {}, "GEMINI_API_KEY")
RESPONSES = Vendor(
    "responses",
    start_responses_server,
    "openai",
    "gpt-5-mini",
    {"api": "responses"},
    "OPENAI_API_KEY",
)


@pytest.fixture(params=[GEMINI, RESPONSES], ids=lambda v: v.name)
def vendor(request: pytest.FixtureRequest) -> Vendor:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def server(vendor: Vendor) -> Iterator[ChatServer]:
    with vendor.start() as s:
        yield s


def watch(branch: Branch) -> list[Any]:
    seen: list[Any] = []
    branch.observe(StreamDelta, RunEnd, RunFailed, handler=seen.append)
    return seen


async def test_text_streams_and_the_request_is_the_vendors_own(vendor, server) -> None:
    server.script(Reply("Hello there, friend", chunk_size=5))
    model = vendor.imodel(server)
    branch = Branch(system="Be brief.", chat_model=model)
    seen = watch(branch)
    reply = await branch.communicate("Say hello")
    await model.aclose()

    assert reply == "Hello there, friend"
    deltas = [s.delta for s in seen if isinstance(s, StreamDelta) and s.kind == "text"]
    assert deltas == ["Hello", " ther", "e, fr", "iend"]  # as the server sent them
    last = branch.messages[-1]
    assert last.metadata["finish_reason"] == "stop"
    assert last.metadata["model"] == vendor.model
    request = server.requests[-1]
    if vendor is GEMINI:
        assert request.path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        assert request.headers["x-goog-api-key"] == KEY
        assert request.body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
        assert request.body["contents"] == [{"role": "user", "parts": [{"text": "Say hello"}]}]
    else:
        assert request.path == "/v1/responses"
        assert request.headers["authorization"] == f"Bearer {KEY}"
        assert request.body["instructions"] == "Be brief."
        assert request.body["input"] == [{"role": "user", "content": "Say hello"}]
        assert request.body["stream"] is True


async def test_thinking_is_kept_apart_and_streamed_as_thinking(vendor, server) -> None:
    server.script(Reply("42.", reasoning="Six times seven.", chunk_size=4))
    model = vendor.imodel(server)
    branch = Branch(chat_model=model)
    seen = watch(branch)
    assert await branch.communicate("6*7?") == "42."
    await model.aclose()

    thinking = [s for s in seen if isinstance(s, StreamDelta) and s.kind == "thinking"]
    assert [s.delta for s in thinking] == ["Six ", "time", "s se", "ven."]
    assert thinking[-1].snapshot == "Six times seven."
    assert branch.messages[-1].metadata["thinking"] == "Six times seven."
    assert branch.messages[-1].response == "42."
    if vendor is GEMINI:  # a thinking model is asked to include its thoughts
        assert server.requests[-1].body["generationConfig"]["thinkingConfig"] == {
            "includeThoughts": True
        }
    else:  # a reasoning model is asked for its summary
        assert server.requests[-1].body["reasoning"] == {"summary": "auto"}


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def test_tool_calls_become_action_requests_and_results_go_back(vendor, server) -> None:
    server.script(
        Reply(tool_calls=[{"name": "add", "arguments": {"a": 2, "b": 3}, "id": "call_a"}]),
        Reply("The sum is 5."),
    )
    model = vendor.imodel(server)
    branch = Branch(chat_model=model, tools=[add])
    seen = watch(branch)
    await branch.operate(instruction="2+3?", actions=True)
    await branch.communicate("And so?")
    await model.aclose()

    roles = [m.role for m in branch.messages]
    assert roles[:4] == ["user", "assistant", "action_request", "action_response"]
    request, response = branch.messages[2], branch.messages[3]
    assert request.function == "add" and request.arguments == {"a": 2, "b": 3}
    assert response.output == 5
    assert branch.messages[1].metadata["finish_reason"] == "tool_calls"
    args = [s for s in seen if isinstance(s, StreamDelta) and s.kind == "tool_args"]
    assert args and args[-1].name == "add" and json.loads(args[-1].snapshot) == {"a": 2, "b": 3}
    first, second = server.requests[0].body, server.requests[1].body
    if vendor is GEMINI:
        declaration = first["tools"][0]["functionDeclarations"][0]
        assert declaration["name"] == "add" and declaration["description"] == "Add two integers."
        assert declaration["parameters"]["required"] == ["a", "b"]
        model_turn = next(c for c in second["contents"] if c["role"] == "model")
        assert model_turn["parts"] == [
            {
                "functionCall": {"name": "add", "args": {"a": 2, "b": 3}},
                "thoughtSignature": "c2lnbmF0dXJlLWNhbGw=",  # sent back as it came
            }
        ]
        responses = [p for c in second["contents"] for p in c["parts"] if "functionResponse" in p]
        assert responses == [{"functionResponse": {"name": "add", "response": {"result": 5}}}]
    else:
        tool = first["tools"][0]
        assert (tool["type"], tool["name"]) == ("function", "add")
        assert tool["parameters"]["required"] == ["a", "b"]
        call = next(i for i in second["input"] if i.get("type") == "function_call")
        assert (call["call_id"], call["name"], json.loads(call["arguments"])) == (
            "call_a",
            "add",
            {"a": 2, "b": 3},
        )
        output = next(i for i in second["input"] if i.get("type") == "function_call_output")
        assert output == {"type": "function_call_output", "call_id": "call_a", "output": "5"}


class Answer(BaseModel):
    city: str
    population: int | None = None


async def test_structured_output_asks_for_the_schema(vendor, server) -> None:
    server.script(Reply(json.dumps({"city": "Paris", "population": 2})))
    model = vendor.imodel(server)
    branch = Branch(chat_model=model)
    result = await branch.operate(instruction="Capital of France?", response_format=Answer)
    await model.aclose()

    assert result == Answer(city="Paris", population=2)
    body = server.requests[-1].body
    if vendor is GEMINI:
        config = body["generationConfig"]
        assert config["responseMimeType"] == "application/json"
        schema = config["responseSchema"]
        assert schema["properties"]["population"] == {
            "type": "integer",
            "nullable": True,
            "title": "Population",
            "default": None,
        }
        assert "additionalProperties" not in json.dumps(schema)
    else:
        fmt = body["text"]["format"]
        assert fmt["type"] == "json_schema" and fmt["schema"]["properties"]["city"]
        assert fmt["strict"] is False


def test_gemini_schema_inlines_references_and_drops_what_the_api_rejects() -> None:
    schema = {
        "$defs": {"Pet": {"type": "object", "properties": {"kind": {"const": "cat"}}}},
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "pets": {"type": "array", "items": {"$ref": "#/$defs/Pet"}},
            "age": {"type": ["integer", "null"]},
            "size": {"enum": [1, 2]},
        },
    }
    assert gemini_schema(schema) == {
        "type": "object",
        "properties": {
            "pets": {
                "type": "array",
                "items": {"type": "object", "properties": {"kind": {"enum": ["cat"]}}},
            },
            "age": {"type": "integer", "nullable": True},
            "size": {"enum": [1, 2]},
        },
    }
    with pytest.raises(ConfigurationError, match="unresolved"):
        gemini_schema({"$ref": "#/$defs/Nowhere"})


async def test_a_reply_cut_by_the_token_limit_says_length(vendor, server) -> None:
    server.script(Reply("Once upon a", finish_reason="length"))
    model = vendor.imodel(server, max_tokens=3)
    branch = Branch(chat_model=model)
    await branch.communicate("Tell a story")
    await model.aclose()
    assert branch.messages[-1].metadata["finish_reason"] == "length"
    if vendor is GEMINI:
        assert server.requests[-1].body["generationConfig"]["maxOutputTokens"] == 3
    else:
        assert server.requests[-1].body["max_output_tokens"] == 3


async def test_usage_counts_input_output_and_thinking_tokens(vendor, server) -> None:
    if vendor is GEMINI:
        usage = {
            "promptTokenCount": 11,
            "candidatesTokenCount": 4,
            "thoughtsTokenCount": 6,
            "cachedContentTokenCount": 2,
            "totalTokenCount": 21,
        }
    else:
        usage = {
            "input_tokens": 11,
            "input_tokens_details": {"cached_tokens": 2},
            "output_tokens": 10,
            "output_tokens_details": {"reasoning_tokens": 6},
            "total_tokens": 21,
        }
    server.script(Reply("ok", reasoning="hm", usage=usage))
    model = vendor.imodel(server)
    branch = Branch(chat_model=model)
    seen = watch(branch)
    await branch.communicate("hi")
    await model.aclose()
    end = next(s for s in seen if isinstance(s, RunEnd))
    assert (end.input_tokens, end.output_tokens) == (11, 10)
    recorded = branch.messages[-1].metadata["usage"]
    assert recorded["reasoning_tokens"] == 6 and recorded["cache_read_tokens"] == 2


async def test_a_rejected_key_names_the_variable_and_never_the_key(vendor, server) -> None:
    server.script(ErrorReply(401))
    model = vendor.imodel(server)
    with pytest.raises(AuthenticationError) as caught:
        await Branch(chat_model=model).communicate("hi")
    await model.aclose()
    assert KEY not in str(caught.value) and caught.value.status == 401
    server.script(ErrorReply(401))
    keyless = vendor.imodel(server, api_key=None)
    with pytest.raises(AuthenticationError, match="no API key was sent"):
        await Branch(chat_model=keyless).communicate("hi")
    await keyless.aclose()
    assert "x-goog-api-key" not in server.requests[-1].headers
    assert "authorization" not in server.requests[-1].headers


async def test_rate_limits_and_server_errors_are_retried_with_backoff(vendor, server) -> None:
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    server.script(ErrorReply(429, headers={"Retry-After": "3"}), ErrorReply(503), Reply("fine"))
    model = vendor.imodel(server, sleep=sleep, max_retries=2)
    assert await Branch(chat_model=model).communicate("hi") == "fine"
    assert sleeps[0] == 3.0 and len(sleeps) == 2 and len(server.requests) == 3

    server.script(*[ErrorReply(429)] * 3)
    with pytest.raises(RateLimitError) as caught:
        await Branch(chat_model=model).communicate("hi")
    assert caught.value.status == 429 and len(server.requests) == 6
    server.script(*[ErrorReply(500)] * 3)
    with pytest.raises(ServerError):
        await Branch(chat_model=model).communicate("hi")
    await model.aclose()


# Gemini has one mid-stream failure (an error object); the Responses API two.
MID_STREAM = [(GEMINI, "error"), (RESPONSES, "error"), (RESPONSES, "response.failed")]


@pytest.mark.parametrize(
    ("vendor", "event"), MID_STREAM, ids=[f"{v.name}-{e}" for v, e in MID_STREAM]
)
async def test_an_error_mid_stream_is_classified_and_nothing_is_recorded(
    vendor, server, event
) -> None:
    server.script(Reply("Partial answer that", chunk_size=4, fail_after=5, fail_event=event))
    model = vendor.imodel(server)
    branch = Branch(chat_model=model)
    seen = watch(branch)
    with pytest.raises(ServerError) as caught:
        await branch.communicate("hi")
    await model.aclose()
    assert caught.value.retryable is False  # part of the reply was shown: never repeated
    assert caught.value.partial_text  # type: ignore[attr-defined]
    assert len(branch.messages) == 0
    assert any(isinstance(s, RunFailed) for s in seen)
    assert len(server.requests) == 1


async def test_an_option_the_api_does_not_take_is_refused_by_name(vendor, server) -> None:
    with pytest.raises(ConfigurationError, match="'frobnicate'"):
        vendor.imodel(server, frobnicate=1)
    model = vendor.imodel(server)
    request = ModelRequest(messages=[{"role": "user", "content": "hi"}], options={"nope": 2})
    with pytest.raises(ConfigurationError, match="'nope'"):
        await model.complete(request)
    assert server.requests == []  # refused before anything was sent
    await model.aclose()


async def test_a_stream_that_ends_before_its_last_event_is_a_lost_connection(
    vendor, server
) -> None:
    server.script(Reply("Hello there", finish_reason=""))  # no finish / terminal event
    model = vendor.imodel(server)
    with pytest.raises(ProviderError, match="ended before its last event"):
        await Branch(chat_model=model).communicate("hi")
    await model.aclose()


async def test_the_key_comes_from_the_environment(vendor, monkeypatch) -> None:
    monkeypatch.setenv(vendor.key_env, "env-key-0123456789")
    model = iModel(provider=vendor.provider, model=vendor.model, **vendor.options)
    assert model.provider._api_key() == "env-key-0123456789"
    assert "env-key-0123456789" not in repr(model) + json.dumps(model.settings())
    if vendor is GEMINI:
        monkeypatch.delenv("GEMINI_API_KEY")
        monkeypatch.setenv("GOOGLE_API_KEY", "google-key-0123456789")
        assert iModel(provider="gemini", model="m").provider._api_key() == "google-key-0123456789"


async def test_an_environment_key_reaches_a_loopback_gemini_proxy_only(
    vendor, server, monkeypatch
) -> None:
    """Only Google's API and proxies of it speak Gemini's format, so the environment's key
    goes to a loopback Gemini server; a loopback Responses server may be any local software
    (vLLM, Ollama...), and OPENAI_API_KEY is not its key."""
    monkeypatch.setenv(vendor.key_env, "env-key-0123456789")
    server.script(Reply("ok"))
    model = vendor.imodel(server, api_key=None)
    await Branch(chat_model=model).communicate("hi")
    await model.aclose()
    headers = server.requests[-1].headers
    if vendor is GEMINI:
        assert headers["x-goog-api-key"] == "env-key-0123456789"
    else:
        assert "authorization" not in headers


def test_chat_completions_stays_the_default_for_openai() -> None:
    from lion_nb.models.openai import OpenAIProvider
    from lion_nb.models.openai_responses import OpenAIResponsesProvider

    assert type(iModel(provider="openai", model="m", api_key="k").provider) is OpenAIProvider
    responses = iModel(provider="openai", model="m", api_key="k", api="responses")
    assert type(responses.provider) is OpenAIResponsesProvider


async def test_a_missing_key_names_the_vendors_variables(vendor) -> None:
    import httpx

    def refuse(request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, json={"error": {"message": "API key not valid", "code": 401}})

    async with httpx.AsyncClient(transport=httpx.MockTransport(refuse)) as client:
        model = iModel(
            provider=vendor.provider, model=vendor.model, http_client=client, **vendor.options
        )
        with pytest.raises(AuthenticationError) as caught:
            await Branch(chat_model=model).communicate("hi")
    assert f"${vendor.key_env}" in str(caught.value)
    if vendor is GEMINI:
        assert "$GOOGLE_API_KEY" in str(caught.value)


USAGES = {
    "gemini": lambda cached: {
        "promptTokenCount": 1000,
        "cachedContentTokenCount": cached,
        "candidatesTokenCount": 300,
        "thoughtsTokenCount": 200,
        "totalTokenCount": 1500,
    },
    "responses": lambda cached: {
        "input_tokens": 1000,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": 500,
        "output_tokens_details": {"reasoning_tokens": 200},
        "total_tokens": 1500,
    },
}


async def test_the_cost_comes_from_the_price_table_with_cache_reads_cheaper(vendor, server) -> None:
    pytest.importorskip("genai_prices", reason="genai-prices is not installed")
    from lion_nb.models.cost import cost_usd
    from lion_nb.usage import Usage

    costs = []
    for cached in (0, 800):
        server.script(Reply("ok", usage=USAGES[vendor.name](cached)))
        model = vendor.imodel(server)
        branch = Branch(chat_model=model)
        seen = watch(branch)
        await branch.communicate("hi")
        await model.aclose()
        end = next(s for s in seen if isinstance(s, RunEnd))
        assert branch.messages[-1].metadata["usage"]["total_cost_usd"] == end.total_cost_usd
        costs.append(end.total_cost_usd)
    table = "google" if vendor is GEMINI else "openai"
    usage = Usage(input_tokens=1000, output_tokens=500, cache_read_tokens=800)
    assert costs[1] == pytest.approx(cost_usd(table, vendor.model, usage))
    assert 0 < costs[1] < costs[0]  # cached input tokens at their own, lower price


async def test_a_model_without_a_known_price_costs_none_not_a_guess(vendor, server) -> None:
    server.script(Reply("ok", usage=USAGES[vendor.name](0)))
    model = iModel(
        provider=vendor.provider,
        model="no-such-model-7",
        base_url=server.base_url,
        api_key=KEY,
        **vendor.options,
    )
    branch = Branch(chat_model=model)
    seen = watch(branch)
    await branch.communicate("hi")
    await model.aclose()
    end = next(s for s in seen if isinstance(s, RunEnd))
    assert end.input_tokens == 1000 and end.total_cost_usd is None


async def test_gemini_thought_signatures_go_back_on_their_parts_in_a_tool_loop() -> None:
    with start_gemini_server() as server:
        server.require_signatures = True
        server.script(
            Reply(reasoning="Use the tool.", tool_calls=[{"name": "add", "arguments": {"a": 1}}]),
            Reply("It is 1."),
        )
        model = GEMINI.imodel(server)
        branch = Branch(chat_model=model, tools=[add])
        await branch.operate(instruction="1+0?", actions=True)
        assert await branch.communicate("So?") == "It is 1."
        await model.aclose()
        assert branch.messages[1].metadata["thinking_blocks"] == [
            {
                "type": "thought_signature",
                "signature": "c2lnbmF0dXJlLWNhbGw=",
                "on": "functionCall",
                "name": "add",
            }
        ]
        turn = next(c for c in server.requests[1].body["contents"] if c["role"] == "model")
        assert turn["parts"][0]["thoughtSignature"] == "c2lnbmF0dXJlLWNhbGw="

        unsigned = dict(server.requests[1].body)
        unsigned["contents"] = json.loads(
            json.dumps(unsigned["contents"])
            .replace('"thoughtSignature": "c2lnbmF0dXJlLWNhbGw=", ', "")
            .replace(', "thoughtSignature": "c2lnbmF0dXJlLWNhbGw="', "")
        )
        import httpx

        async with httpx.AsyncClient() as client:
            refused = await client.post(
                server.base_url + "/v1beta/models/m:streamGenerateContent?alt=sse", json=unsigned
            )
        assert refused.status_code == 400 and "thought_signature" in refused.text


async def test_a_stopped_call_closes_its_stream(vendor, server) -> None:
    import asyncio

    server.script(Reply("word " * 200, chunk_size=5, delay=0.02))
    model = vendor.imodel(server)
    first = asyncio.Event()

    def on_delta(kind: str, delta: str, **_: Any) -> None:
        first.set()

    request = ModelRequest(messages=[{"role": "user", "content": "talk"}])
    call = asyncio.ensure_future(model.complete(request, on_delta))
    await asyncio.wait_for(first.wait(), 10)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert server.wait_for_disconnects(1, timeout=10)  # the server saw the client go
    await model.aclose()


@pytest.mark.parametrize("step", [1, 2, 3, 7, 64])
async def test_the_reply_is_the_same_however_the_body_is_cut(vendor, step) -> None:
    """The vendor's recorded body, delivered in pieces of ``step`` bytes (splitting CRLFs,
    UTF-8 sequences and events anywhere), gives the same reply as in one piece."""
    import httpx

    from tests.servers.vendor_servers import _GeminiHandler, _ResponsesHandler

    reply = Reply("Grüße, 世界!", reasoning="Ünïcode thoughts", chunk_size=3)
    reply.tool_calls = [{"name": "add", "arguments": {"a": 1, "b": 2}, "id": "call_9"}]
    if vendor is GEMINI:
        from tests.servers.vendor_servers import gemini_events as build

        frame = _GeminiHandler._frame_event
    else:
        from tests.servers.vendor_servers import responses_events as build

        frame = _ResponsesHandler._frame_event
    body = b"".join(frame(None, e) for e in build(reply, vendor.model, {}))  # type: ignore[arg-type]

    async def pieces(size: int) -> Any:
        for at in range(0, len(body), size):
            yield body[at : at + size]

    async def reply_in(size: int) -> Any:
        def answer(request: httpx.Request) -> httpx.Response:
            headers = {"content-type": "text/event-stream"}
            return httpx.Response(200, headers=headers, content=pieces(size))

        async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
            model = vendor.imodel(_Root(), http_client=client)
            request = ModelRequest(messages=[{"role": "user", "content": "hi"}])
            result = await model.complete(request)
        calls = [(c.name, c.arguments) for c in result.tool_calls]  # Gemini's ids are minted
        return (result.text, result.thinking, calls, result.usage, result.finish_reason)

    whole = await reply_in(len(body))
    assert whole[0] == "Grüße, 世界!" and whole[1] == "Ünïcode thoughts"
    assert await reply_in(step) == whole


class _Root:
    base_url = "http://127.0.0.1:9"  # never reached: the mock transport answers


async def test_a_server_answering_with_one_json_body_is_read_too(vendor, server) -> None:
    server.script(Reply("Whole at once.", reasoning="Quick.", json_body=True))
    model = vendor.imodel(server)
    branch = Branch(chat_model=model)
    assert await branch.communicate("hi") == "Whole at once."
    await model.aclose()
    assert branch.messages[-1].metadata["thinking"] == "Quick."
    assert branch.messages[-1].metadata["finish_reason"] == "stop"


async def test_a_gemini_prompt_blocked_by_safety_is_a_content_filter_stop() -> None:
    from tests.servers import RawReply

    blocked = {
        "promptFeedback": {"blockReason": "SAFETY"},
        "usageMetadata": {"promptTokenCount": 7, "totalTokenCount": 7},
        "modelVersion": "gemini-2.5-flash",
    }
    with start_gemini_server() as server:
        body = b"data: " + json.dumps(blocked).encode() + b"\r\n\r\n"
        server.script(RawReply(body, content_type="text/event-stream"))
        model = GEMINI.imodel(server, base_url=server.base_url + "/v1beta")  # a versioned root
        branch = Branch(chat_model=model)
        assert await branch.communicate("something unsafe") == ""
        await model.aclose()
        assert server.requests[-1].path.startswith("/v1beta/models/gemini-2.5-flash:")
    assert branch.messages[-1].metadata["finish_reason"] == "content_filter"
    assert branch.messages[-1].metadata["usage"]["input_tokens"] == 7


def test_settings_travel_without_the_key_and_rebuild_the_same_api(vendor) -> None:
    """What a snapshot or a Ray worker gets: the key stays behind (the worker's environment
    supplies it), the wire API and the options travel."""
    model = iModel(
        provider=vendor.provider,
        model=vendor.model,
        api_key=KEY,
        temperature=0.3,
        **vendor.options,
    )
    settings = model.settings()
    assert KEY not in json.dumps(settings)
    again = iModel.from_settings(settings)
    assert type(again.provider) is type(model.provider)
    assert again.provider.defaults == {"temperature": 0.3}


def test_the_context_gauge_knows_their_windows() -> None:
    assert iModel(provider="gemini", model="gemini-2.5-flash").context_window == 1_048_576
    responses = iModel(provider="openai", model="gpt-5-mini", api="responses")
    assert responses.context_window == 400_000
    assert responses.provider_or_none is None  # known without building the provider


@pytest.mark.parametrize("name", ["gemini-2.5-flash", "gemini-3-pro-preview"])
async def test_react_on_gemini_with_tools_and_a_schema_in_one_request(name) -> None:
    """ReAct offers tools and asks for a schema at once. Before Gemini 3 the API refuses a JSON
    response type next to function declarations (the loopback server refuses it as the API
    does), so the schema is asked for in the system instruction; Gemini 3 gets both."""
    with start_gemini_server() as server:
        server.script(
            Reply(tool_calls=[{"name": "add", "arguments": {"a": 2, "b": 3}}]),
            Reply(json.dumps({"analysis": "2+3 is 5", "extension_needed": False})),
            Reply(json.dumps({"answer": "5"})),
        )
        model = iModel(provider="gemini", model=name, base_url=server.base_url, api_key=KEY)
        branch = Branch(chat_model=model, tools=[add])
        assert await branch.ReAct("2+3?", max_extensions=1) == "5"
        await model.aclose()
        first = server.requests[0].body
        if name.startswith("gemini-2"):
            assert "responseSchema" not in first["generationConfig"]
            ask = first["systemInstruction"]["parts"][0]["text"]
            assert "reply with only a JSON object" in ask and '"extension_needed"' in ask
        else:
            assert "responseSchema" in first["generationConfig"] and first["tools"]
        assert "responseSchema" in server.requests[-1].body["generationConfig"]  # no tools


async def test_the_gemini_server_refuses_json_with_tools_before_gemini_3() -> None:
    import httpx

    body = {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "tools": [{"functionDeclarations": [{"name": "add"}]}],
        "generationConfig": {"responseMimeType": "application/json"},
    }
    with start_gemini_server() as server:
        async with httpx.AsyncClient(base_url=server.base_url) as client:
            path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
            refused = await client.post(path, json=body)
    assert refused.status_code == 400 and "is unsupported" in refused.text


async def test_responses_summary_parts_are_paragraphs_and_a_refusal_is_the_reply() -> None:
    from tests.servers import RawReply

    def event(kind: str, **fields: Any) -> bytes:
        data = json.dumps({"type": kind, "sequence_number": 0, **fields})
        return f"event: {kind}\ndata: {data}\n\n".encode()

    at = {"item_id": "rs_0", "output_index": 0}
    done = {"id": "resp_1", "status": "completed", "model": "gpt-5-mini", "output": []}
    body = b"".join(
        [
            event("response.reasoning_summary_part.added", **at, summary_index=0),
            event("response.reasoning_summary_text.delta", **at, summary_index=0, delta="First."),
            event("response.reasoning_summary_part.added", **at, summary_index=1),
            event("response.reasoning_summary_text.delta", **at, summary_index=1, delta="Then."),
            event("response.refusal.delta", item_id="msg_1", output_index=1, delta="I can't."),
            event("response.completed", response=done),
        ]
    )
    with start_responses_server() as server:
        server.script(RawReply(body, content_type="text/event-stream"))
        model = RESPONSES.imodel(server)
        branch = Branch(chat_model=model)
        assert await branch.communicate("hi") == "I can't."
        await model.aclose()
    assert branch.messages[-1].metadata["thinking"] == "First.\n\nThen."


async def test_a_wrong_gemini_key_is_an_authentication_error_though_the_status_is_400() -> None:
    invalid = {
        "error": {
            "code": 400,
            "message": "API key not valid. Please pass a valid API key.",
            "status": "INVALID_ARGUMENT",
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "API_KEY_INVALID",
                    "domain": "googleapis.com",
                }
            ],
        }
    }
    with start_gemini_server() as server:
        server.script(ErrorReply(400, body=invalid))
        model = GEMINI.imodel(server)
        with pytest.raises(AuthenticationError) as caught:
            await Branch(chat_model=model).communicate("hi")
        await model.aclose()
        assert len(server.requests) == 1  # not retried
    assert caught.value.status == 400 and "API key not valid" in str(caught.value)
    assert "$GEMINI_API_KEY" in str(caught.value) and KEY not in str(caught.value)


async def test_responses_logprobs_become_the_replys_tokens() -> None:
    with start_responses_server() as server:
        server.script(Reply("The answer is 42.", chunk_size=6), Reply("Plain.", chunk_size=6))
        model = RESPONSES.imodel(server, logprobs=3)
        branch = Branch(chat_model=model)
        seen = watch(branch)
        assert await branch.communicate("6*7?") == "The answer is 42."
        body = server.requests[-1].body
        assert body["top_logprobs"] == 3 and body["include"] == ["message.output_text.logprobs"]
        # A loopback server also gets chat completions' logprobs flag (llama-server wants it);
        # OpenAI's API, which refuses it, does not.
        assert body["logprobs"] is True
        hosted = OpenAIResponsesProvider(model="gpt-5-mini", api_key="sk-test-0123456789")
        asked = ModelRequest(messages=[{"role": "user", "content": "q"}], options={"logprobs": 3})
        assert "logprobs" not in hosted.build_body(asked)[0]
        reply = branch.messages[-1]
        assert reply.tokens is not None
        assert [t.text for t in reply.tokens] == ["The an", "swer i", "s 42."]
        assert [round(t.logprob, 6) for t in reply.tokens] == [-0.05, -0.1, -0.15]
        assert reply.tokens[0].top == [("The an", -0.05), (" alt1", -1.05), (" alt2", -2.05)]
        assert any(isinstance(s, StreamDelta) and s.kind == "tokens" for s in seen)
        # without logprobs=K nothing is asked for, and a reply has no tokens
        plain = RESPONSES.imodel(server)
        assert await Branch(chat_model=plain).chat("q") == "Plain."
        assert "top_logprobs" not in server.requests[-1].body
        assert "include" not in server.requests[-1].body
        await model.aclose()
        await plain.aclose()
    with pytest.raises(ConfigurationError, match="cannot give a prefix"):  # only logprobs
        await RESPONSES.imodel(server).complete(ModelRequest(messages=[], prefix="The"), None)
    with pytest.raises(ConfigurationError, match="cannot give log-probabilities"):
        await GEMINI.imodel(server).complete(ModelRequest(messages=[], options={"logprobs": 2}))


async def test_responses_logprobs_asked_and_not_sent_is_an_error(monkeypatch) -> None:
    from tests.servers import vendor_servers

    monkeypatch.setattr(vendor_servers._ResponseBuilder, "_logprobs", lambda *a: [])
    with start_responses_server() as server:
        server.script(Reply("Hi."))
        model = RESPONSES.imodel(server)
        with pytest.raises(ConfigurationError, match="sent none"):
            await model.complete(
                ModelRequest(messages=[{"role": "user", "content": "q"}], options={"logprobs": 2}),
                None,
            )
        await model.aclose()
