"""What lion_nb does against each real server, per wire API and feature: the one table the
conformance tests check and the README shows (``readme_table()``; a test keeps them equal).

A cell either works, is refused with a clear error (its class, and words of the fix its
message names), or says what the server does instead (no usage sent, tools ignored).
``pending`` names the capability (``models/capabilities.py``, worked on in parallel) that
turns a refusal into "works": such a cell's "works" test is an ``xfail(strict=False)``.
"""

from __future__ import annotations

from dataclasses import dataclass

from lion_nb.errors import (
    ConfigurationError,
    ProviderError,
)

__all__ = ["APIS", "FEATURES", "MATRIX", "SERVERS", "Cell", "cell", "readme_table"]

SERVERS = {
    # fixture name -> what the README calls it
    "llama_server_1": "`llama-server --jinja` (1 slot)",
    "llama_server_4": "`llama-server --parallel 4 -c 2048` (4 slots of 512 tokens)",
    "llama_cpp_server": "`python -m llama_cpp.server`",
}
APIS = {
    "chat": '`provider="openai"` (chat completions)',
    "responses": '`api="responses"`',
    "messages": '`provider="anthropic"` (`/v1/messages`)',
}
FEATURES = {
    "stream": "streaming text",
    "usage": "usage",
    "structured": "structured output",
    "tools": "native tools (forced)",
    "logprobs": "`logprobs=K`",
    "stop": "stop mid-stream",
    "samples": "`asample(5)`",
}


@dataclass(frozen=True)
class Cell:
    """``outcome``: "works"; "refused" (raises ``error``, whose message holds ``fix``); "cut"
    (some replies arrive, the others fail with ``error``, each shown failed); "none" (the
    server sends none of it); "ignored" (the server ignores it: a text reply); "called" (a tool
    call came back); "untested" (not run: the same software as another row). ``pending``: the
    capability that will make it work (an xfail until it lands). ``note``: the README's
    footnote."""

    outcome: str
    error: type[BaseException] | None = None
    fix: str = ""
    pending: str = ""
    note: str = ""

    def short(self) -> str:
        words = {
            "works": "works",
            "refused": f"`{getattr(self.error, '__name__', '')}`",
            "cut": "some cut",
            "none": "none sent",
            "ignored": "ignored",
            "called": "called",
            "untested": "as 1 slot",
        }
        return words[self.outcome]


WORKS = Cell("works")
_TOOLS_IGNORED = Cell(
    "ignored",
    note="SmolLM2's chat template declares no tools, so llama-server ignores native `tools` and "
    "`tool_choice` (the reply is text, no call); lion_nb learns it from `/props` "
    "(`capabilities().native_tools is False`), and `operate` and `ReAct` then ask for their own "
    "JSON action requests, constrained by the schema, so the tools are called "
    "(`tests/conformance/test_react_real.py`).",
)
_NO_RESPONSES = Cell(
    "refused",
    ProviderError,
    'without api="responses"',
    note="HTTP 404: the error says the server has no `/v1/responses` and to drop "
    '`api="responses"`.',
)
_NO_MESSAGES = Cell(
    "refused",
    ProviderError,
    'provider="openai"',
    note="HTTP 404: the error says the server has no `/v1/messages` and to use "
    '`provider="openai"`.',
)
_NO_LOGPROBS_MESSAGES = Cell(
    "refused",
    ConfigurationError,
    "OpenAI-compatible server",
    note="Before sending: Anthropic's format has no log-probabilities; the error names "
    "the providers that give them.",
)

MATRIX: dict[tuple[str, str, str], Cell] = {}


def _row(server: str, api: str, **cells: Cell) -> None:
    for feature in FEATURES:
        MATRIX[server, api, feature] = cells.get(feature, WORKS)


_row("llama_server_1", "chat", tools=_TOOLS_IGNORED)
_row(
    "llama_server_1",
    "responses",
    tools=_TOOLS_IGNORED,
    logprobs=Cell(
        "refused",
        ConfigurationError,
        'leave out api="responses"',
        note="llama-server's Responses API sends no log-probabilities; the error says so and "
        "that chat completions may.",
    ),
)
_row(
    "llama_server_1",
    "messages",
    tools=_TOOLS_IGNORED,
    logprobs=_NO_LOGPROBS_MESSAGES,
    structured=Cell(
        "refused",
        ProviderError,
        'iModel(provider="openai"',
        note="Over Anthropic's format the structured reply is a forced tool call, which "
        "llama-server ignores for SmolLM2, and `/v1/messages` takes no schema: the reply is "
        "prose, and the error says to use chat completions.",
    ),
)
for _feature in FEATURES:  # the same software as one slot: only what slots change is run
    MATRIX["llama_server_4", "chat", _feature] = Cell("untested")
MATRIX["llama_server_4", "chat", "stream"] = WORKS
MATRIX["llama_server_4", "chat", "samples"] = Cell("works", note="Four run at once.")
_row(
    "llama_cpp_server",
    "chat",
    usage=Cell("none"),
    structured=Cell(
        "works",
        note="The server refuses `json_schema` (HTTP 500); lion_nb sends `json_object` with the "
        "schema instead, remembered for that server (the refused request is resent once).",
    ),
    tools=Cell("called"),
    samples=Cell(
        "works",
        note="One at a time: the server ends a running reply when the next request arrives, so "
        "lion_nb sends it one generation at a time. Given `max_concurrent=5` by hand, the cut "
        'samples fail with `ConnectionLost` ("the server closed the stream before the reply '
        'began", naming `max_concurrent=1`) and are shown failed, never as empty replies.',
    ),
)
for _api, _cell in (("responses", _NO_RESPONSES), ("messages", _NO_MESSAGES)):
    for _feature in FEATURES:
        MATRIX["llama_cpp_server", _api, _feature] = _cell
MATRIX["llama_cpp_server", "messages", "logprobs"] = _NO_LOGPROBS_MESSAGES


def cell(server: str, api: str, feature: str) -> Cell:
    return MATRIX[server, api, feature]


def readme_table() -> str:
    """The matrix as the README's Markdown table (one row per server and wire API), with the
    notes as numbered footnotes under it."""
    notes: list[str] = []

    def shown(c: Cell) -> str:
        text = c.short()
        note = c.note + (f" Works once {c.pending} lands." if c.pending else "")
        if note:
            if note not in notes:
                notes.append(note)
            text += f" ({notes.index(note) + 1})"
        return text

    head = "| server | wire API | " + " | ".join(FEATURES.values()) + " |"
    rule = "| --- | --- | " + " | ".join("---" for _ in FEATURES) + " |"
    rows = [
        f"| {SERVERS[s]} | {APIS[a]} | "
        + " | ".join(shown(MATRIX[s, a, f]) for f in FEATURES)
        + " |"
        for s in SERVERS
        for a in APIS
        if (s, a, "stream") in MATRIX
    ]
    return "\n".join([head, rule, *rows, "", *(f"({i}) {n}  " for i, n in enumerate(notes, 1))])
