import pytest

from lion_nb.operations.jsonx import extract_json, fuzzy_keys


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('prefix {"a": {"b": [1, 2]}} suffix', {"a": {"b": [1, 2]}}),
        ("```json\n[1, 2,]\n```", [1, 2]),
        ('text with "quotes" then {"s": "brace } inside"}', {"s": "brace } inside"}),
        ('{broken} then {"ok": true}', {"ok": True}),
    ],
)
def test_extract_json(text, expected):
    assert extract_json(text) == expected


def test_extract_json_without_json_raises():
    with pytest.raises(ValueError, match="no JSON"):
        extract_json("just words")


def test_fuzzy_keys_prefers_exact_then_normalised_then_similar():
    out = fuzzy_keys(
        {"first_name": 1, "LastName": 2, "agee": 3, "zzz": 4}, ["first_name", "last_name", "age"]
    )
    assert out == {"first_name": 1, "last_name": 2, "age": 3, "zzz": 4}
