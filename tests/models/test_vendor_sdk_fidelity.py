"""The vendors' official SDKs against our loopback servers and our requests: the test servers
speak the format the SDKs parse (so the provider tests test the real thing), our providers
read those streams as the SDKs do, and the requests they build are ones the SDKs' own request
types accept (google-genai's models refuse unknown fields).

Needs ``openai`` and ``google-genai`` (the ``[dev]`` extra); each half is skipped, saying so,
where its SDK is not installed. The SDKs are test tools only: lion_nb speaks both APIs over
httpx (see the provider modules for why).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from pydantic import TypeAdapter

from lion_nb.models.base import ModelRequest, ModelResponse
from lion_nb.models.gemini import GeminiProvider
from lion_nb.models.openai_responses import OpenAIResponsesProvider
from tests.servers.chat_server import ChatServer, Reply
from tests.servers.vendor_servers import start_gemini_server, start_responses_server

KEY = "sdk-test-key"
TURN = Reply(
    "Paris is the capital.",
    reasoning="The user asks for a capital.",
    tool_calls=[{"name": "lookup", "arguments": {"city": "Paris", "limit": 2}, "id": "call_7"}],
    chunk_size=6,
)
TOOL = {
    "name": "lookup",
    "description": "Look a city up.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "limit": {"type": ["integer", "null"]}},
        "required": ["city"],
    },
}
HISTORY = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Capital of France?"},
    {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "lookup", "arguments": '{"city": "Paris"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": '{"country": "France"}'},
    {"role": "user", "content": [{"type": "text", "text": "And this?"}, IMAGE := {
        "type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}
    }]},
]  # fmt: skip
RESPONSES_USAGE = {
    "input_tokens": 26,
    "input_tokens_details": {"cached_tokens": 4},
    "output_tokens": 10,
    "output_tokens_details": {"reasoning_tokens": 5},
    "total_tokens": 36,
}
GEMINI_USAGE = {
    "promptTokenCount": 26,
    "cachedContentTokenCount": 4,
    "candidatesTokenCount": 5,
    "thoughtsTokenCount": 5,
    "totalTokenCount": 36,
}
SCHEMA = {
    "$defs": {"City": {"type": "object", "properties": {"name": {"type": "string"}}}},
    "type": "object",
    "properties": {"cities": {"type": "array", "items": {"$ref": "#/$defs/City"}}},
    "required": ["cities"],
    "additionalProperties": False,
}


def request(**kw: Any) -> ModelRequest:
    return ModelRequest(messages=HISTORY, tools=[TOOL], **kw)


async def ours(provider: Any, server: ChatServer, reply: Reply, **kw: Any) -> ModelResponse:
    server.script(reply)
    try:
        return await provider.complete(request(**kw))  # type: ignore[no-any-return]
    finally:
        await provider.aclose()


# -- OpenAI Responses --------------------------------------------------------------------------


@pytest.fixture
def responses_server() -> Iterator[ChatServer]:
    with start_responses_server() as server:
        yield server


@pytest.fixture
def openai_sdk() -> Any:
    return pytest.importorskip(
        "openai", reason="the openai SDK is not installed (pip install 'lion_nb[dev]')"
    )


def responses_provider(server: ChatServer) -> OpenAIResponsesProvider:
    return OpenAIResponsesProvider(model="gpt-5-mini", api_key=KEY, base_url=server.base_url)


async def test_the_openai_sdk_reads_the_responses_stream_as_we_do(
    openai_sdk, responses_server
) -> None:
    client = openai_sdk.OpenAI(api_key=KEY, base_url=responses_server.base_url, max_retries=0)
    turn = replace(TURN, usage=RESPONSES_USAGE)
    responses_server.script(turn)
    with client.responses.stream(model="gpt-5-mini", input="Capital of France?") as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()  # the SDK's own accumulator checks every event
    mine = await ours(responses_provider(responses_server), responses_server, turn)

    assert "response.reasoning_summary_text.delta" in kinds and kinds[-1] == "response.completed"
    assert final.output_text == mine.text == "Paris is the capital."
    summary = [s.text for item in final.output if item.type == "reasoning" for s in item.summary]
    assert summary == [mine.thinking]
    calls = [item for item in final.output if item.type == "function_call"]
    assert [(c.call_id, c.name, json.loads(c.arguments)) for c in calls] == [
        (t.id, t.name, t.arguments) for t in mine.tool_calls
    ]
    assert final.usage is not None
    assert (final.usage.input_tokens, final.usage.output_tokens) == (
        mine.usage.input_tokens,
        mine.usage.output_tokens,
    )
    assert final.usage.output_tokens_details.reasoning_tokens == mine.usage.reasoning_tokens
    details = final.usage.input_tokens_details
    assert (details.cached_tokens, mine.usage.cache_read_tokens) == (4, 4)


async def test_the_openai_sdk_reads_an_incomplete_response_as_we_do(
    openai_sdk, responses_server
) -> None:
    client = openai_sdk.OpenAI(api_key=KEY, base_url=responses_server.base_url, max_retries=0)
    cut = Reply("Once upon", finish_reason="length")
    responses_server.script(cut)
    events = list(client.responses.create(model="gpt-5-mini", input="story", stream=True))
    mine = await ours(responses_provider(responses_server), responses_server, cut)
    assert events[-1].type == "response.incomplete"
    assert events[-1].response.incomplete_details.reason == "max_output_tokens"
    assert mine.finish_reason == "length" and mine.text == "Once upon"


@pytest.mark.parametrize("event", ["error", "response.failed"])
async def test_the_openai_sdk_types_the_failure_events_we_raise_on(
    openai_sdk, responses_server, event
) -> None:
    from lion_nb.errors import ServerError

    client = openai_sdk.OpenAI(api_key=KEY, base_url=responses_server.base_url, max_retries=0)
    failing = Reply("Half", fail_after=4, fail_event=event)
    responses_server.script(failing)
    events = list(client.responses.create(model="gpt-5-mini", input="hi", stream=True))
    assert type(events[-1]).__name__ in ("ResponseErrorEvent", "ResponseFailedEvent")
    with pytest.raises(ServerError):
        await ours(responses_provider(responses_server), responses_server, failing)


def test_our_responses_request_is_one_the_sdk_types_accept(openai_sdk) -> None:
    from openai.types.responses.response_create_params import ResponseCreateParamsStreaming

    provider = OpenAIResponsesProvider(model="gpt-5-mini", api_key=KEY, max_output_tokens=50)
    body, _ = provider.build_body(request(response_schema=SCHEMA, tool_choice="lookup"))
    TypeAdapter(ResponseCreateParamsStreaming).validate_python(body)
    assert set(body) <= set(ResponseCreateParamsStreaming.__annotations__)
    kinds = [item.get("type", "message") for item in body["input"]]
    assert kinds == ["message", "message", "function_call", "function_call_output", "message"]
    assert body["input"][-1]["content"][1] == {
        "type": "input_image",
        "image_url": IMAGE["image_url"]["url"],
        "detail": "auto",
    }
    assert body["tool_choice"] == {"type": "function", "name": "lookup"}


# -- Gemini ------------------------------------------------------------------------------------


@pytest.fixture
def gemini_server() -> Iterator[ChatServer]:
    with start_gemini_server() as server:
        yield server


@pytest.fixture
def genai() -> Any:
    pytest.importorskip(
        "google.genai", reason="the google-genai SDK is not installed (pip install 'lion_nb[dev]')"
    )
    from google import genai

    return genai


def gemini_provider(server: ChatServer) -> GeminiProvider:
    return GeminiProvider(model="gemini-2.5-flash", api_key=KEY, base_url=server.base_url)


async def test_the_genai_sdk_reads_the_gemini_stream_as_we_do(genai, gemini_server) -> None:
    from google.genai import types

    client = genai.Client(
        api_key=KEY, http_options=types.HttpOptions(base_url=gemini_server.base_url)
    )
    turn = replace(TURN, usage=GEMINI_USAGE)
    gemini_server.script(turn)
    chunks = list(client.models.generate_content_stream(model="gemini-2.5-flash", contents="hi"))
    mine = await ours(gemini_provider(gemini_server), gemini_server, turn)

    parts = [p for c in chunks for p in c.candidates[0].content.parts]
    assert "".join(p.text for p in parts if p.text and not p.thought) == mine.text
    assert "".join(p.text for p in parts if p.thought) == mine.thinking
    calls = [p.function_call for p in parts if p.function_call]
    assert [(c.name, c.args) for c in calls] == [(t.name, t.arguments) for t in mine.tool_calls]
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP
    usage = chunks[-1].usage_metadata
    assert usage.prompt_token_count == mine.usage.input_tokens
    assert usage.candidates_token_count + usage.thoughts_token_count == mine.usage.output_tokens
    assert usage.thoughts_token_count == mine.usage.reasoning_tokens
    assert usage.cached_content_token_count == mine.usage.cache_read_tokens == 4
    signed = [p.thought_signature for p in parts if p.thought_signature]
    assert len(signed) == 2 and all(isinstance(s, bytes) for s in signed)


async def test_the_genai_sdk_reads_max_tokens_and_errors_as_we_do(genai, gemini_server) -> None:
    from google.genai import errors, types

    from lion_nb.errors import RateLimitError, ServerError
    from tests.servers.chat_server import ErrorReply

    client = genai.Client(
        api_key=KEY, http_options=types.HttpOptions(base_url=gemini_server.base_url)
    )
    cut = Reply("Once upon", finish_reason="length")
    gemini_server.script(cut)
    chunks = list(client.models.generate_content_stream(model="gemini-2.5-flash", contents="x"))
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.MAX_TOKENS
    assert (
        await ours(gemini_provider(gemini_server), gemini_server, cut)
    ).finish_reason == "length"

    gemini_server.script(ErrorReply(429))
    with pytest.raises(errors.ClientError) as sdk_error:
        list(client.models.generate_content_stream(model="gemini-2.5-flash", contents="x"))
    assert sdk_error.value.code == 429 and sdk_error.value.status == "RESOURCE_EXHAUSTED"
    provider = GeminiProvider(
        model="gemini-2.5-flash", api_key=KEY, base_url=gemini_server.base_url, max_retries=0
    )
    with pytest.raises(RateLimitError):
        await ours(provider, gemini_server, ErrorReply(429))  # type: ignore[arg-type]

    failing = Reply("Half an answer", fail_after=2)
    gemini_server.script(failing)
    with pytest.raises(errors.ServerError):
        list(client.models.generate_content_stream(model="gemini-2.5-flash", contents="x"))
    with pytest.raises(ServerError):
        await ours(gemini_provider(gemini_server), gemini_server, failing)


def test_our_gemini_request_is_one_the_sdk_types_accept(genai) -> None:
    from google.genai import types

    provider = GeminiProvider(
        model="gemini-3-pro-preview", api_key=KEY, temperature=0.2, max_tokens=64, stop="END"
    )
    body, _ = provider.build_body(request(response_schema=SCHEMA, tool_choice="lookup"))
    # google-genai's models forbid fields they do not know: each part is checked by name.
    contents = [types.Content.model_validate(c) for c in body["contents"]]
    # the tool's result and the next user turn are one user turn, as the API wants them
    assert [c.role for c in contents] == ["user", "model", "user"]
    assert contents[2].parts[0].function_response.response == {"country": "France"}
    types.Content.model_validate(body["systemInstruction"])
    tools = [types.Tool.model_validate(t) for t in body["tools"]]
    assert tools[0].function_declarations[0].parameters.properties["limit"].nullable is True
    types.ToolConfig.model_validate(body["toolConfig"])
    config = types.GenerationConfig.model_validate(body["generationConfig"])
    assert config.response_schema.properties["cities"].items.properties["name"].type == "STRING"
    assert (config.max_output_tokens, config.stop_sequences) == (64, ["END"])
    assert config.thinking_config.include_thoughts is True
    assert set(body) <= {"contents", "systemInstruction", "tools", "toolConfig", "generationConfig"}
    image = next(p for c in contents for p in c.parts if p.inline_data)
    assert image.inline_data.mime_type == "image/png"
