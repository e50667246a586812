"""What crosses the model seam: requests, responses, CLI stream chunks, provider protocols.

Requests are provider-neutral: ``messages`` are chat-completions dicts compiled from a
progression (see ``lion_nb.compile``). Each provider file translates them to its wire format.
API providers return one ``ModelResponse`` and report deltas through a callback while streaming;
CLI providers are async generators of ``Chunk``s that must release their process on ``aclose()``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from lion_nb.usage import Usage

if TYPE_CHECKING:
    from lion_nb.messages import TokenChoice

DeltaKind = Literal["text", "thinking", "tool_args", "tokens"]
"""What a delta adds to: the reply's text, its thinking, a tool call's arguments, or (asked for
with ``logprobs=K``) its tokens: a ``"tokens"`` delta is ``lion_nb.tokens.encode_tokens_delta``
of the tokens that arrived, sent besides the ``"text"`` deltas of the same text."""


class DeltaSink(Protocol):
    def __call__(
        self, kind: DeltaKind, delta: str, *, name: str | None = None, call_id: str | None = None
    ) -> None: ...


@dataclass(slots=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(slots=True)
class ModelRequest:
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    tool_choice: Any = None  # None/"auto"/"required"/{"type":"function","function":{"name":..}}
    response_schema: dict[str, Any] | None = None  # JSON schema the reply must match
    response_name: str = "response"
    options: dict[str, Any] = field(default_factory=dict)  # temperature, max_tokens, logprobs..
    # The reply starts with this text, which the model continues (``fork_at_token``); the
    # provider returns only the continuation. A provider that cannot continue a prefix raises
    # ConfigurationError.
    prefix: str | None = None


@dataclass(slots=True)
class ModelResponse:
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    thinking: str | None = None
    # The provider's own thinking blocks with their signatures (Anthropic: ``{"type":
    # "thinking", "thinking", "signature"}`` / ``{"type": "redacted_thinking", "data"}``): what
    # a tool loop must send back; recorded as ``metadata["thinking_blocks"]``.
    thinking_blocks: list[dict[str, Any]] | None = None
    usage: Usage = field(default_factory=Usage)
    model: str | None = None
    finish_reason: str | None = None
    raw: Any = None
    # The reply token by token, when ``logprobs`` was asked for (texts join to ``text``).
    tokens: list[TokenChoice] | None = None
    # Set when the response came from a cassette, not the model: ``{"cassette": path,
    # "call": n, "line": n, "recorded_at": iso}`` (see lion_nb.cassettes). None when live.
    replayed: dict[str, Any] | None = None


ChunkType = Literal["system", "thinking", "text", "tool_use", "tool_result", "result", "error"]


@dataclass(slots=True)
class Chunk:
    """One typed event of a CLI agent stream.

    system: ``session_id`` (and ``metadata`` such as model/tools); thinking/text: ``text`` is a
    delta to append; tool_use: ``tool_id``, ``name``, ``arguments``; tool_result: ``tool_id``,
    ``output``, ``is_error``; result: ``metadata`` (usage, total_cost_usd, num_turns,
    duration_ms, ...); error: ``text`` (message), ``benign_eos`` (a normal end reported as an
    error), ``error`` (the classified exception to raise). ``replayed``: set on every chunk
    replayed from a cassette (the same dict for all chunks of one call).
    """

    type: ChunkType
    text: str = ""
    session_id: str | None = None
    tool_id: str | None = None
    name: str | None = None
    arguments: dict[str, Any] | None = None
    output: Any = None
    is_error: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    benign_eos: bool = False
    error: Exception | None = None
    raw: Any = None  # the decoded provider event, kept for stream persistence
    replayed: dict[str, Any] | None = None  # as ModelResponse.replayed: the cassette call


@dataclass(slots=True)
class CLIRequest:
    prompt: str
    system: str | None = None
    resume: str | None = None
    response_schema: dict[str, Any] | None = None
    options: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class CLIProvider(Protocol):
    name: str
    is_cli: bool  # True
    session_id: str | None

    def stream(self, request: CLIRequest) -> AsyncGenerator[Chunk, None]: ...
