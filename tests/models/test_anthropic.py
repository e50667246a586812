"""iModel(provider="anthropic") against a real loopback server speaking the Messages API's
streaming events (tests/servers/anthropic_server.py)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from collections.abc import Iterator

import pytest
from pydantic import BaseModel

from lion_nb import Branch, iModel
from lion_nb.errors import AuthenticationError, ProviderError, RateLimitError, ServerError
from lion_nb.models.base import ModelRequest
from lion_nb.signals import RunEnd, StreamDelta
from tests.servers.anthropic_server import (
    AnthropicServer,
    ErrorReply,
    Message,
    start_anthropic_server,
)

KEY = "sk-ant-api03-loopbackKEY0123456789abcdefghij"
MODEL = "claude-sonnet-4-5"
THINK = {"type": "enabled", "budget_tokens": 2048}


@pytest.fixture
def server() -> Iterator[AnthropicServer]:
    with start_anthropic_server(key=KEY) as s:
        yield s


def claude(server: AnthropicServer, **kw) -> iModel:
    return iModel(provider="anthropic", model=MODEL, base_url=server.base_url, api_key=KEY, **kw)


def ask(text: str = "hi", **kw) -> ModelRequest:
    return ModelRequest(messages=[{"role": "user", "content": text}], **kw)


class Sink:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str | None]] = []

    def __call__(self, kind, delta, *, name=None, call_id=None) -> None:
        self.calls.append((kind, delta, name))

    def joined(self, kind: str) -> str:
        return "".join(d for k, d, _ in self.calls if k == kind)


async def test_text_streams_and_the_request_is_the_messages_api(server) -> None:
    server.script(
        Message(
            "Hello there, friend.",
            usage={
                "input_tokens": 10,
                "cache_creation_input_tokens": 5,
                "cache_read_input_tokens": 100,
                "output_tokens": 1,
            },
            output_tokens=7,
        )
    )
    sink = Sink()
    request = ModelRequest(
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "hi"},
        ],
        options={"temperature": 0.2, "stop": "END"},
    )
    response = await claude(server).complete(request, sink)
    assert response.text == "Hello there, friend." and sink.joined("text") == response.text
    assert len([c for c in sink.calls if c[0] == "text"]) > 1  # streamed in pieces
    assert response.finish_reason == "stop" and response.model == MODEL
    usage = response.usage
    assert (usage.input_tokens, usage.output_tokens) == (115, 7)
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (100, 5)
    sent = server.requests[-1]
    assert sent["headers"]["x-api-key"] == KEY and sent["headers"]["anthropic-version"]
    body = sent["body"]
    assert body["system"] == "Be brief." and body["max_tokens"] == 4096 and body["stream"]
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    assert body["temperature"] == 0.2 and body["stop_sequences"] == ["END"]


async def test_thinking_is_kept_apart_with_its_signature(server) -> None:
    server.script(Message("The answer is 4.", thinking="2 plus 2 is 4.", signature="sig-abc"))
    sink = Sink()
    response = await claude(server, thinking=THINK).complete(ask("2+2?"), sink)
    assert response.text == "The answer is 4." and response.thinking == "2 plus 2 is 4."
    assert sink.joined("thinking") == "2 plus 2 is 4."
    assert response.thinking_blocks == [
        {"type": "thinking", "thinking": "2 plus 2 is 4.", "signature": "sig-abc"}
    ]
    assert server.requests[-1]["body"]["thinking"] == THINK


async def test_max_tokens_is_length_and_through_a_branch_the_metadata_says_so(server) -> None:
    server.script(Message("cut", thinking="hm", stop_reason="max_tokens"))
    branch = Branch(chat_model=claude(server, max_tokens=5))
    seen: list = []
    branch.observe(handler=seen.append)
    assert await branch.communicate("long story") == "cut"
    reply = branch.messages[-1]
    assert reply.metadata["finish_reason"] == "length"
    assert reply.metadata["thinking"] == "hm"
    assert server.requests[-1]["body"]["max_tokens"] == 5
    kinds = {s.kind for s in seen if isinstance(s, StreamDelta)}
    assert kinds == {"text", "thinking"}
    end = next(s for s in seen if isinstance(s, RunEnd))
    assert end.input_tokens == 25 and end.output_tokens == 15


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def test_a_tool_loop_sends_the_signed_thinking_back(server) -> None:
    server.script(
        Message(
            "",
            thinking="I should add.",
            signature="sig-1",
            tool_uses=[{"id": "toolu_1", "name": "add", "input": {"a": 2, "b": 3}}],
        ),
        Message("It is 5."),
    )
    branch = Branch(chat_model=claude(server, thinking=THINK), tools=[add])
    out = await branch.operate(instruction="2+3 with the tool", actions=True)
    assert out.action_responses[0].output == 5
    first = server.requests[-1]["body"]
    assert first["tools"][0]["name"] == "add" and "input_schema" in first["tools"][0]
    assert branch.messages[1].metadata["thinking_blocks"][0]["signature"] == "sig-1"
    assert await branch.communicate("so?") == "It is 5."  # the server refuses it otherwise
    assistant = server.requests[-1]["body"]["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"][0] == {
        "type": "thinking",
        "thinking": "I should add.",
        "signature": "sig-1",
    }
    assert assistant["content"][-1]["type"] == "tool_use"
    result = server.requests[-1]["body"]["messages"][2]["content"]
    assert result[0]["type"] == "tool_result" and result[0]["tool_use_id"] == "toolu_1"
    assert result[-1] == {"type": "text", "text": "so?"}


async def test_streamed_tool_input_becomes_a_tool_call(server) -> None:
    server.script(Message("Let me add.", tool_uses=[{"name": "add", "input": {"a": 1, "b": 2}}]))
    sink = Sink()
    tools = [{"name": "add", "parameters": {"type": "object"}}]
    response = await claude(server).complete(ask(tools=tools, tool_choice="required"), sink)
    assert [(c.name, c.arguments) for c in response.tool_calls] == [("add", {"a": 1, "b": 2})]
    assert response.finish_reason == "tool_calls"
    assert json.loads(sink.joined("tool_args")) == {"a": 1, "b": 2}
    assert server.requests[-1]["body"]["tool_choice"] == {"type": "any"}


class Answer(BaseModel):
    answer: str
    confidence: float


async def test_structured_output_through_a_forced_tool(server) -> None:
    server.script(
        Message(tool_uses=[{"name": "Answer", "input": {"answer": "yes", "confidence": 0.9}}])
    )
    branch = Branch(chat_model=claude(server))
    out = await branch.operate(instruction="sure?", response_format=Answer)
    assert out == Answer(answer="yes", confidence=0.9)
    body = server.requests[-1]["body"]
    assert body["tool_choice"] == {"type": "tool", "name": "Answer"}
    assert body["tools"][-1]["input_schema"]["properties"]["answer"]


async def test_a_server_that_ignores_the_forced_tool_says_to_use_chat_completions(
    server,
) -> None:
    """llama-server's ``/v1/messages`` ignores tools for a model whose template declares none:
    the structured reply's forced call never comes, only prose."""
    server.script(Message(text='{"city": "Paris"}'))
    branch = Branch(chat_model=claude(server))
    with pytest.raises(ProviderError, match="answered without calling the tool 'Answer'") as info:
        await branch.communicate("sure?", response_format=Answer)
    assert 'iModel(provider="openai"' in str(info.value)
    assert info.value.partial_text == '{"city": "Paris"}'  # nothing lost
    assert len(branch.messages) == 0


async def test_401_names_the_variable_never_the_key(server, monkeypatch) -> None:
    wrong = "sk-ant-wrong-0123456789abcdefghij"
    bad = iModel(provider="anthropic", model=MODEL, base_url=server.base_url, api_key=wrong)
    with pytest.raises(AuthenticationError) as info:
        await bad.complete(ask())
    text = str(info.value)
    assert "ANTHROPIC_API_KEY" in text and "invalid x-api-key" in text and info.value.status == 401
    assert wrong not in text and wrong not in (info.value.body or "")
    # the key from the environment, also to a loopback server (a proxy or a test); the
    # server root or ".../v1" alike
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    env = iModel(provider="anthropic", model=MODEL, base_url=server.base_url + "/v1")
    assert (await env.complete(ask())).text
    assert server.requests[-1]["headers"]["x-api-key"] == KEY
    assert server.requests[-1]["path"] == "/v1/messages"
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    unsent = iModel(provider="anthropic", model=MODEL, base_url=server.base_url)
    with pytest.raises(AuthenticationError, match=r"no API key was sent.*ANTHROPIC_API_KEY"):
        await unsent.complete(ask())
    assert "x-api-key" not in server.requests[-1]["headers"]


async def test_429_is_retried_after_retry_after(server) -> None:
    slept: list[float] = []

    async def sleep(delay: float) -> None:
        slept.append(delay)

    server.script(
        ErrorReply(429, "rate_limit_error", "slow down", {"retry-after": "3"}), Message("ok")
    )
    assert (await claude(server, sleep=sleep).complete(ask())).text == "ok"
    assert slept == [3.0]
    server.script(*[ErrorReply(429, "rate_limit_error", "slow", {"retry-after": "1"})] * 2)
    with pytest.raises(RateLimitError) as info:
        await claude(server, sleep=sleep, max_retries=1).complete(ask())
    assert info.value.retry_after == 1.0


async def test_529_overloaded_is_a_server_error(server) -> None:
    server.script(ErrorReply(529, "overloaded_error", "Overloaded"))
    with pytest.raises(ServerError) as info:
        await claude(server, max_retries=0).complete(ask())
    assert info.value.status == 529 and "overloaded" in str(info.value)


async def test_an_error_event_mid_stream_is_classified_and_nothing_is_recorded(server) -> None:
    server.script(Message("partial reply that breaks", chunk_size=3, error_after=6))
    branch = Branch(chat_model=claude(server))
    with pytest.raises(ServerError) as info:
        await branch.communicate("go")
    error = info.value.__cause__ if not isinstance(info.value, ServerError) else info.value
    assert isinstance(error, ProviderError) and not error.retryable
    assert error.partial_text and "partial reply".startswith(error.partial_text[:7])
    assert len(branch.messages) == 0
    assert len(server.requests) == 1  # not retried


async def test_a_stream_cut_before_message_stop_is_connection_lost(server) -> None:
    from lion_nb.errors import ConnectionLost

    server.script(Message("abc", drop_after=4))
    with pytest.raises(ConnectionLost):
        await claude(server, max_retries=0).complete(ask())


async def test_stopping_mid_stream_closes_the_connection(server) -> None:
    server.script(Message("slow " * 40, chunk_size=5, delay=0.05))
    model = claude(server)
    sink = Sink()
    first = asyncio.Event()

    def on_delta(kind, delta, **kw) -> None:
        sink(kind, delta, **kw)
        first.set()

    task = asyncio.ensure_future(model.complete(ask(), on_delta))
    await first.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    client = model.provider._client
    await model.aclose()
    assert client is not None and client.is_closed


@pytest.mark.skipif(
    importlib.util.find_spec("anthropic") is None, reason="the anthropic SDK (lion_nb[anthropic])"
)
async def test_the_official_sdk_parses_the_loopback_stream(server) -> None:
    """Fidelity: the server speaks the format the vendor's own SDK reads."""
    import anthropic

    server.script(Message("Hi!", thinking="hm", tool_uses=[{"name": "add", "input": {"a": 1}}]))
    async with anthropic.AsyncAnthropic(api_key=KEY, base_url=server.base_url) as client:
        async with client.messages.stream(
            model=MODEL, max_tokens=100, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            message = await stream.get_final_message()
    kinds = [b.type for b in message.content]
    assert kinds == ["thinking", "text", "tool_use"] and message.content[2].input == {"a": 1}
    assert message.stop_reason == "tool_use"


def mul(a: int, b: int) -> int:
    """Multiply two numbers."""
    return a * b


async def test_react_runs_tools_and_reads_structured_rounds(server) -> None:
    server.script(
        Message(
            thinking="Both tools.",
            tool_uses=[
                {"id": "toolu_a", "name": "add", "input": {"a": 2, "b": 3}},
                {"id": "toolu_m", "name": "mul", "input": {"a": 4, "b": 5}},
            ],
        ),
        Message(json.dumps({"analysis": "5 and 20", "extension_needed": False})),
        Message(json.dumps({"answer": "5 and 20."})),
    )
    branch = Branch(system="Use the tools.", chat_model=claude(server, thinking=THINK))
    branch.register_tools([add, mul])
    assert await branch.ReAct("2+3 and 4*5?", max_extensions=2) == "5 and 20."
    outputs = [m.output for m in branch.messages if m.role == "action_response"]
    assert outputs == [5, 20]
    second = server.requests[1]["body"]
    assert [t["name"] for t in second["tools"]][:2] == ["add", "mul"]
    assistant = second["messages"][1]["content"]
    assert [b["type"] for b in assistant] == ["thinking", "tool_use", "tool_use"]
    results = second["messages"][2]["content"]
    assert [(b["type"], b["tool_use_id"]) for b in results[:2]] == [
        ("tool_result", "toolu_a"),
        ("tool_result", "toolu_m"),
    ]


async def test_a_server_that_ignores_stream_answers_with_one_message(server) -> None:
    from tests.servers.anthropic_server import WholeMessage

    server.script(
        WholeMessage(
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": MODEL,
                "content": [
                    {"type": "thinking", "thinking": "hm", "signature": "s1"},
                    {"type": "text", "text": "Whole."},
                    {"type": "tool_use", "id": "toolu_w", "name": "add", "input": {"a": 1}},
                ],
                "stop_reason": "tool_use",
                "stop_sequence": None,
                "usage": {"input_tokens": 3, "output_tokens": 4},
            }
        )
    )
    sink = Sink()
    response = await claude(server).complete(ask(), sink)
    assert (response.text, response.thinking, sink.joined("text")) == ("Whole.", "hm", "Whole.")
    assert response.thinking_blocks == [{"type": "thinking", "thinking": "hm", "signature": "s1"}]
    assert [(c.id, c.arguments) for c in response.tool_calls] == [("toolu_w", {"a": 1})]
    assert response.finish_reason == "tool_calls" and response.usage.output_tokens == 4
