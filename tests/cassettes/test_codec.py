"""JSON forms of chunks, responses and errors: only what happened, and equal objects back."""

from __future__ import annotations

import json

import pytest

from lion_nb import errors
from lion_nb.cassettes.codec import (
    decode_chunk,
    decode_error,
    decode_response,
    encode_chunk,
    encode_error,
    encode_response,
)
from lion_nb.models.base import Chunk, ModelResponse, ToolCall
from lion_nb.usage import Usage

CHUNKS = [
    Chunk(type="text", text="Hello"),
    Chunk(type="thinking", text="hmm"),
    Chunk(type="system", session_id="s-1", metadata={"model": "m"}),
    Chunk(type="tool_use", tool_id="t1", name="Read", arguments={"file": "a.txt"}),
    Chunk(type="tool_result", tool_id="t1", output="hi", is_error=False),
    Chunk(type="result", metadata={"usage": {"input_tokens": 3}, "num_turns": 1}),
    Chunk(type="error", text="overloaded", benign_eos=False),
]


@pytest.mark.parametrize("chunk", CHUNKS, ids=lambda c: c.type)
def test_a_chunk_round_trips_through_json_and_shows_only_what_is_set(chunk: Chunk) -> None:
    data = json.loads(json.dumps(encode_chunk(chunk)))
    assert decode_chunk(data) == chunk
    assert "raw" not in data and "replayed" not in data
    assert {k for k, v in data.items() if v in (None, "", {}, [])} == set()


def test_a_decoded_chunk_carries_the_replay_marker_given() -> None:
    marker = {"cassette": "c.jsonl", "call": 2}
    assert decode_chunk({"type": "text", "text": "x"}, marker).replayed == marker


def test_a_response_round_trips_with_tool_calls_usage_and_finish_reason() -> None:
    response = ModelResponse(
        text="done",
        tool_calls=[ToolCall(id="c1", name="add", arguments={"a": 1})],
        thinking="t",
        usage=Usage(input_tokens=5, output_tokens=2, total_cost_usd=0.01),
        model="m",
        finish_reason="length",
        raw={"secret": "never stored"},
    )
    data = json.loads(json.dumps(encode_response(response)))
    assert "raw" not in data and "never stored" not in json.dumps(data)
    back = decode_response(data, {"call": 1})
    assert (back.text, back.tool_calls, back.thinking, back.usage, back.model) == (
        "done",
        response.tool_calls,
        "t",
        response.usage,
        "m",
    )
    assert back.finish_reason == "length" and back.replayed == {"call": 1}


def test_errors_come_back_as_the_same_class_with_their_details() -> None:
    limited = errors.RateLimitError("slow down", provider="openai", status=429, retry_after=7.0)
    back = decode_error(json.loads(json.dumps(encode_error(limited))))
    assert type(back) is errors.RateLimitError
    assert (back.message, back.provider, back.status, back.retry_after) == (
        "slow down",
        "openai",
        429,
        7.0,
    )
    assert back.retryable is True
    cli = errors.CLIError("exit 1", stderr="boom", provider="codex")
    assert decode_error(encode_error(cli)).stderr == "boom"


def test_an_unknown_error_type_decodes_as_a_provider_error() -> None:
    back = decode_error({"type": "SomethingNew", "message": "odd"})
    assert type(back) is errors.ProviderError and back.message == "odd"
    assert type(decode_error({"type": "ValueError", "message": "x"})) is errors.ProviderError
