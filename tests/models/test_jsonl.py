"""The sans-I/O JSON-lines decoder: framing, bad input, and byte-split invariance."""

from __future__ import annotations

import itertools
import json
import logging
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lion_nb.errors import MalformedResponse
from lion_nb.models.jsonl import JSONLinesDecoder, MalformedLine
from tests.support.fake_cli import CLI_FIXTURES, all_recordings, recording


def decode(*blocks: bytes, **kw) -> list:
    decoder = JSONLinesDecoder(**kw)
    out = []
    for block in blocks:
        out += decoder.feed(block)
    return out + decoder.finish()


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    bounds = [0, *sorted(cuts), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


def test_lines_split_across_feeds_and_crlf() -> None:
    decoder = JSONLinesDecoder()
    assert decoder.feed(b'{"a": 1}\r\n{"b"') == [{"a": 1}]
    assert decoder.feed(b": 2}") == []
    assert decoder.feed(b"\n\n  \r\n") == [{"b": 2}]
    assert decoder.feed(b'{"c": 3}\n') == [{"c": 3}]
    assert decoder.finish() == []
    assert decoder.lines == 5


def test_final_line_without_newline_is_accepted() -> None:
    assert decode(b'{"a": 1}\n{"b": 2}') == [{"a": 1}, {"b": 2}]


def test_truncated_last_line_is_reported() -> None:
    items = decode(b'{"a": 1}\n{"type": "assis')
    assert items[0] == {"a": 1}
    marker = items[1]
    assert isinstance(marker, MalformedLine)
    assert marker.reason == "truncated"
    assert marker.line_no == 2
    assert isinstance(marker.error, MalformedResponse)
    assert "ended in the middle of a line" in str(marker.error)
    assert marker.as_event()["reason"] == "truncated"


def test_malformed_line_is_a_marker_and_neighbours_survive() -> None:
    items = decode(b'{"a": 1}\nnot json\n[1, 2]\n{"b": 2}\n')
    assert items[0] == {"a": 1} and items[3] == {"b": 2}
    assert [(m.reason, m.line_no) for m in items[1:3]] == [("invalid_json", 2), ("not_object", 3)]
    assert "not valid JSON" in items[1].error.message
    assert items[1].preview == "not json"


def test_deeply_nested_line_is_malformed_not_a_crash() -> None:
    items = decode(b"[" * 100_000 + b"]" * 100_000 + b"\n" + b'{"ok": true}\n')
    assert items[0].reason == "invalid_json" and items[1] == {"ok": True}


def test_invalid_utf8_is_replaced_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    decoder = JSONLinesDecoder(source="codex")
    with caplog.at_level(logging.WARNING, logger="lion_nb.models.jsonl"):
        items = decoder.feed(b'{"text": "caf\xc3\xa9 \xff\xfe ok"}\n')
    assert items == [{"text": "café \ufffd\ufffd ok"}]
    assert decoder.replaced_lines == 1
    assert "codex: line 1 is not valid UTF-8" in caplog.text


def test_multibyte_character_split_between_feeds() -> None:
    data = '{"t": "We’re — ok"}\n'.encode()
    cut = data.index("’".encode()) + 1  # inside the 3-byte character
    assert decode(data[:cut], data[cut:]) == [{"t": "We’re — ok"}]


@pytest.mark.parametrize("block", [1, 7, 64, 10_000])
def test_line_length_guard(block: int) -> None:
    long_line = b'{"x": "' + b"y" * 300 + b'"}\n'
    data = b'{"a": 1}\n' + long_line + b'{"b": 2}\n' + long_line[:200]
    decoder = JSONLinesDecoder(max_line_bytes=100)
    items = []
    for i in range(0, len(data), block):
        items += decoder.feed(data[i : i + block])
        assert len(decoder._buffer) <= 100 + block  # memory stays bounded
    items += decoder.finish()
    too_long = [i for i in items if isinstance(i, MalformedLine)]
    assert [i for i in items if isinstance(i, dict)] == [{"a": 1}, {"b": 2}]
    assert [m.reason for m in too_long] == ["too_long", "too_long"]
    assert too_long[0].line_no == 2 and too_long[1].line_no == 4
    assert "exceeds 100 bytes" in too_long[0].error.message


@pytest.mark.parametrize("name", all_recordings())
def test_every_recording_decodes_to_its_lines(name: str) -> None:
    data = recording(name).read_bytes()
    expected = [json.loads(line) for line in data.splitlines() if line.strip()]
    assert decode(data) == expected
    # Random multi-way splits, including inside multi-byte characters.
    rng = random.Random(name)
    for _ in range(30):
        cuts = [rng.randrange(len(data) + 1) for _ in range(rng.randrange(1, 12))]
        assert decode(*split_at(data, cuts)) == expected


def test_every_offset_of_a_small_recording() -> None:
    data = (CLI_FIXTURES / "codex" / "error_500.jsonl").read_bytes()  # has a U+2019
    expected = decode(data)
    for cut in range(len(data) + 1):
        assert decode(data[:cut], data[cut:]) == expected, cut
    assert decode(*[bytes([b]) for b in data]) == expected  # one byte at a time


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=10**6), max_size=20))
def test_split_invariance_property(cuts: list[int]) -> None:
    data = (CLI_FIXTURES / "claude" / "error_429.jsonl").read_bytes()
    cuts = [c % (len(data) + 1) for c in cuts]
    assert decode(*split_at(data, cuts)) == decode(data)
