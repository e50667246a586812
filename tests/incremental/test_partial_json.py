"""PartialJSON: incremental JSON scanning, equal to json.loads at every chunking, linear work."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lion_nb.incremental.partial_json import Completed, PartialJSON, PartialJSONError

DOC = {
    "name": 'A "quoted" \\ name é 😀 \u0007',
    "n": -12.5e3,
    "int": 42,
    "ok": True,
    "no": False,
    "none": None,
    "items": [{"a": 1, "b": [1, 2, 3]}, {"a": 2, "b": []}],
    "empty": {},
    "s": "line\nbreak\ttab",
}


def feed_all(text: str, size: int) -> tuple[PartialJSON, list[Completed]]:
    parser = PartialJSON()
    events: list[Completed] = []
    for i in range(0, len(text), size):
        events += parser.feed(text[i : i + size])
    events += parser.finish()
    return parser, events


def big_document(target: int = 42_000) -> str:
    rows = []
    i = 0
    while len(json.dumps({"rows": rows})) < target:
        rows.append(
            {
                "id": i,
                "title": f'row {i} with "quotes" and \\u00e9 é',
                "score": i * 0.5,
                "tags": ["x", "y"],
                "ok": i % 2 == 0,
                "note": None,
            }
        )
        i += 1
    return json.dumps({"rows": rows, "total": i})


def test_every_split_offset_gives_the_same_value_and_events() -> None:
    text = json.dumps(DOC)
    whole, whole_events = feed_all(text, len(text))
    assert whole.value == DOC and whole.done
    for cut in range(1, len(text)):
        parser = PartialJSON()
        events = parser.feed(text[:cut]) + parser.feed(text[cut:]) + parser.finish()
        assert parser.value == DOC, cut
        assert events == whole_events, cut


def test_one_character_at_a_time() -> None:
    text = json.dumps(DOC, indent=2)
    parser, events = feed_all(text, 1)
    assert parser.value == DOC
    assert events[-1] == Completed((), DOC)


def test_events_name_paths_innermost_first_and_root_last() -> None:
    _, events = feed_all('{"a": [1, {"b": "x"}], "c": {}}', 3)
    assert [e.path for e in events] == [
        ("a", 0),
        ("a", 1, "b"),
        ("a", 1),
        ("a",),
        ("c",),
        (),
    ]
    assert events[1].value == "x"
    assert events[2].value == {"b": "x"}


def test_prose_and_fences_around_the_json_are_skipped() -> None:
    text = 'Sure! Here it is:\n```json\n{"answer": 42, "list": [true]}\n```\nAnything else?'
    parser, _ = feed_all(text, 5)
    assert parser.value == {"answer": 42, "list": [True]}
    assert parser.done
    assert parser.work < len(text)  # the trailing prose is not even looked at


def test_open_containers_are_visible_while_streaming() -> None:
    parser = PartialJSON()
    parser.feed('{"items": [{"a": 1}, {"a": ')
    assert parser.value == {"items": [{"a": 1}, {}]}
    assert parser.path == ("items", 1, "a")
    assert not parser.done


def test_partial_string_shows_the_text_so_far_even_mid_escape() -> None:
    parser = PartialJSON()
    parser.feed('{"text": "caf\\u00e9 and \\')
    assert parser.partial_string() == (("text",), "café and ")
    parser.feed('"quoted\\u00')
    assert parser.partial_string() == (("text",), 'café and "quoted')
    parser.feed('e9 tail"}')
    assert parser.partial_string() is None
    assert parser.value == {"text": 'café and "quotedé tail'}


def test_numbers_split_across_chunks_complete_only_at_their_end() -> None:
    parser = PartialJSON()
    assert parser.feed('{"x": 12') == []
    assert parser.feed("34") == []
    events = parser.feed(".5e1}")
    assert events[0] == Completed(("x",), 12345.0)
    assert parser.value == {"x": 12345.0}


@pytest.mark.parametrize(
    "bad, offset",
    [
        ('{"a": tru}', 6),
        ('{"a" 1}', 5),
        ('{"a": 1,, }', 8),
        ("[1, 2}", 5),
        ('{"a": 1.2.3}', 6),
        ("{'a': 1}", 1),
        ('{"a": [1 2]}', 9),
    ],
)
def test_malformed_json_is_a_classified_error_with_the_offset(bad: str, offset: int) -> None:
    parser = PartialJSON()
    with pytest.raises(PartialJSONError) as info:
        for ch in bad:
            parser.feed(ch)
        parser.finish()
    assert isinstance(info.value, ValueError)
    assert info.value.offset == offset
    with pytest.raises(PartialJSONError):  # it stays failed
        parser.feed("{}")


def test_a_reply_cut_off_mid_object_fails_on_finish() -> None:
    parser = PartialJSON()
    parser.feed('{"a": [1, 2')
    with pytest.raises(PartialJSONError, match="ended before"):
        parser.finish()


def test_text_without_json_is_not_an_error() -> None:
    parser, events = feed_all("no json here", 3)
    assert parser.value is None and events == [] and not parser.done


def test_work_is_linear_in_the_text_at_any_chunk_size() -> None:
    """Each character is examined once, however the reply is chunked; re-parsing the
    accumulated text per chunk would examine sum(prefix lengths) characters."""
    text = big_document()
    assert len(text) >= 42_000
    expected = json.loads(text)
    for size in (1, 4, 25, 1000):
        parser = PartialJSON()
        per_chunk = []
        for i in range(0, len(text), size):
            before = parser.work
            parser.feed(text[i : i + size])
            per_chunk.append(parser.work - before)
        assert parser.value == expected
        assert parser.work == len(text)
        assert max(per_chunk) <= size  # no chunk costs more than its own length
    quadratic = sum(range(4, len(text) + 4, 4))  # what per-chunk re-parsing would scan
    assert quadratic > 2000 * len(text)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=25,
)


@settings(max_examples=150, deadline=None)
@given(
    value=st.one_of(
        st.lists(json_values, max_size=5),
        st.dictionaries(st.text(max_size=8), json_values, max_size=5),
    ),
    cuts=st.lists(st.integers(min_value=1, max_value=12), min_size=1, max_size=40),
    indent=st.sampled_from([None, 1]),
    ascii_only=st.booleans(),
)
def test_any_json_value_at_any_chunking_equals_json_loads(value, cuts, indent, ascii_only):
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    parser = PartialJSON()
    pos = 0
    i = 0
    while pos < len(text):
        step = cuts[i % len(cuts)]
        parser.feed(text[pos : pos + step])
        pos += step
        i += 1
    parser.finish()
    assert parser.done
    assert parser.value == json.loads(text)
    assert parser.work == len(text)
