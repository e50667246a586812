"""The sans-I/O SSE decoder: spec behaviour, and the same events however the bytes are split."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lion_nb.models.sse import SSEDecoder, SSEError, SSEEvent

# An OpenAI-style chat-completions stream (as api.openai.com sends it: LF, usage chunk, [DONE]).
OPENAI_BODY = (
    b"".join(
        b"data: " + json.dumps(chunk, ensure_ascii=False).encode() + b"\n\n"
        for chunk in [
            {
                "id": "c1",
                "object": "chat.completion.chunk",
                "model": "gpt-x",
                "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}],
            },
            {"id": "c1", "choices": [{"index": 0, "delta": {"content": "Grüße, "}}]},
            {"id": "c1", "choices": [{"index": 0, "delta": {"content": "世界 🌍"}}]},
            {
                "id": "c1",
                "choices": [
                    {
                        "index": 0,
                        "delta": {
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": "call_a",
                                    "function": {"name": "f", "arguments": '{"x"'},
                                }
                            ]
                        },
                    }
                ],
            },
            {"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            {"id": "c1", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4}},
        ]
    )
    + b"data: [DONE]\n\n"
)

# Every spec feature at once: BOM, CRLF / CR / LF, comments, multi-line data, a field without a
# colon, id and retry, unknown fields, an event name, a block without data (not dispatched).
SPEC_BODY = (
    "\ufeff: a comment first\r\n"
    "event: add\r\n"
    "data: line one\r\n"
    "data:line two\r\n"
    "id: 7\r\n"
    "retry: 1500\r\n"
    "\r\n"
    "data\r"
    "\r"
    "event: only-an-event\n"
    "\n"
    "unknown: field\n"
    "data:  two spaces\n"
    "retry: soon\n"
    "\n"
    ": keep-alive\n"
    "id\n"
    "data: ünïcødé ✓\n"
    "\n"
).encode()

SPEC_EVENTS = [
    SSEEvent(event="add", data="line one\nline two", id="7", retry=1500),
    SSEEvent(event="message", data="", id="7"),
    SSEEvent(event="message", data=" two spaces", id="7"),
    SSEEvent(event="message", data="ünïcødé ✓", id=""),
]


def decode(parts: list[bytes]) -> list[SSEEvent]:
    decoder = SSEDecoder()
    events: list[SSEEvent] = []
    for part in parts:
        events += decoder.feed(part)
    return events + decoder.finish()


def test_spec_features() -> None:
    assert decode([SPEC_BODY]) == SPEC_EVENTS


def test_whatwg_examples() -> None:
    # The examples of the HTML standard, section "Event stream interpretation".
    assert decode([b"data: YHOO\ndata: +2\ndata: 10\n\n"]) == [SSEEvent(data="YHOO\n+2\n10")]
    body = b": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n"
    assert decode([body]) == [
        SSEEvent(data="first event", id="1"),
        SSEEvent(data="second event", id=""),
        SSEEvent(data=" third event", id=""),
    ]
    assert decode([b"data:test\n\ndata: test\n\n"]) == [SSEEvent(data="test")] * 2
    # The last "data:" is never terminated: the spec drops it; we report it as incomplete.
    assert decode([b"data\n\ndata\ndata\n\ndata:"]) == [
        SSEEvent(data=""),
        SSEEvent(data="\n"),
        SSEEvent(data="", complete=False),
    ]


@pytest.mark.parametrize("body", [OPENAI_BODY, SPEC_BODY], ids=["openai", "spec"])
def test_every_split_offset_gives_the_same_events(body: bytes) -> None:
    whole = decode([body])
    assert whole and all(event.complete for event in whole)
    for offset in range(len(body) + 1):
        assert decode([body[:offset], body[offset:]]) == whole, offset


@pytest.mark.parametrize("body", [OPENAI_BODY, SPEC_BODY], ids=["openai", "spec"])
def test_byte_by_byte(body: bytes) -> None:
    assert decode([body[i : i + 1] for i in range(len(body))]) == decode([body])


def test_openai_body_decodes_to_its_chunks() -> None:
    events = decode([OPENAI_BODY])
    assert events[-1].data == "[DONE]"
    chunks = [json.loads(e.data) for e in events[:-1]]
    assert chunks[1]["choices"][0]["delta"]["content"] == "Grüße, "
    assert chunks[2]["choices"][0]["delta"]["content"] == "世界 🌍"


def test_crlf_split_between_feeds_is_one_line_ending() -> None:
    # "\r" ends a feed and "\n" starts the next: one line ending, not an empty line (which
    # would dispatch a premature event).
    assert decode([b"data: a\r", b"\ndata: b\r\n\r\n"]) == [SSEEvent(data="a\nb")]
    # A lone "\r" followed by other text is a line ending by itself.
    assert decode([b"data: a\r", b"data: b\r\r"]) == [SSEEvent(data="a\nb")]


def test_bom_only_at_the_start_and_split() -> None:
    bom = "\ufeff".encode()
    assert decode([bom[:1], bom[1:2], bom[2:] + b"data: x\n\n"]) == [SSEEvent(data="x")]
    # A second BOM is data (the field name becomes "\ufeffdata", an unknown field).
    assert decode([bom + bom + b"data: x\n\n"]) == []


def test_invalid_utf8_is_replaced_not_raised() -> None:
    assert decode([b"data: \xff\xfeok\n\n"]) == [SSEEvent(data="\ufffd\ufffdok")]
    # A multi-byte character cut by the end of the stream.
    assert decode([b"data: \xe4\xb8"]) == [SSEEvent(data="\ufffd", complete=False)]


def test_cut_mid_event_is_reported_incomplete() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b'data: {"a": 1}\n\ndata: {"b"') == [SSEEvent(data='{"a": 1}')]
    assert decoder.finish() == [SSEEvent(data='{"b"', complete=False)]
    # Fields seen but no blank line yet.
    assert decode([b"event: x\ndata: y\n"]) == [SSEEvent(event="x", data="y", complete=False)]
    # Only a comment pending, or nothing: a clean end.
    assert decode([b"data: y\n\n: bye"]) == [SSEEvent(data="y")]
    assert decode([b""]) == []


def test_finish_resets_the_decoder() -> None:
    decoder = SSEDecoder()
    decoder.feed(b"data: half")
    assert decoder.finish() == [SSEEvent(data="half", complete=False)]
    assert decoder.feed(b"data: next\n\n") == [SSEEvent(data="next")]
    assert decoder.finish() == []


def test_retry_and_id_rules() -> None:
    decoder = SSEDecoder()
    events = decoder.feed(b"retry: 10x\nid: a\0b\ndata: 1\n\nretry: 20\nid: z\ndata: 2\n\n")
    assert events == [SSEEvent(data="1"), SSEEvent(data="2", id="z", retry=20)]
    assert decoder.retry == 20 and decoder.last_event_id == "z"


def test_a_line_without_end_beyond_the_limit_raises() -> None:
    decoder = SSEDecoder(max_line_chars=100)
    decoder.feed(b"data: " + b"x" * 90)
    with pytest.raises(SSEError):
        decoder.feed(b"x" * 20)
    # Long lines that do end are fine.
    assert SSEDecoder(max_line_chars=100).feed(b"data: " + b"y" * 50 + b"\n\n") == [
        SSEEvent(data="y" * 50)
    ]


# -- properties ------------------------------------------------------------------------------

_line_text = st.text(
    alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\r\n"), max_size=20
)
_eol = st.sampled_from(["\n", "\r\n", "\r"])


@st.composite
def _bodies(draw: st.DrawFn) -> tuple[bytes, list[list[str]]]:
    """A body of events built from data lines (one random line ending per event), plus the
    data lines each event must decode to."""
    events = draw(st.lists(st.lists(_line_text, min_size=1, max_size=4), max_size=6))
    out = []
    for lines in events:
        eol = draw(_eol)  # mixed within an event, "\r" + "\n" would merge into one ending
        if draw(st.booleans()):
            out.append(":" + draw(_line_text) + eol)
        for line in lines:
            # One space after the colon is removed by the decoder: add it when the line itself
            # starts with a space, and sometimes otherwise.
            space = " " if line.startswith(" ") or draw(st.booleans()) else ""
            out.append("data:" + space + line + eol)
        out.append(eol)
    return "".join(out).encode(), events


@settings(max_examples=200, deadline=None)
@given(_bodies(), st.data())
def test_random_splits_give_the_same_events(body_events, data) -> None:
    body, events = body_events
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=8)))
    parts = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    decoded = decode(parts)
    assert decoded == decode([body])
    assert [event.data for event in decoded] == ["\n".join(lines) for lines in events]
    assert all(event.complete for event in decoded)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300), st.lists(st.integers(0, 300), max_size=6))
def test_arbitrary_bytes_never_raise_and_split_invariant(body: bytes, cuts: list[int]) -> None:
    cuts = sorted(min(c, len(body)) for c in cuts)
    parts = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    assert decode(parts) == decode([body])
