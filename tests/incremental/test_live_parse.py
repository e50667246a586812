"""LiveParse: a structured reply validated while it streams, one completed value at a time."""

from __future__ import annotations

import json
import time

from lion_nb.incremental.live_parse import LiveParse
from lion_nb.render.parse_tree import tree_html
from lion_nb.viewmodels.parse import live_rows
from tests.support.orders import ORDER, Order, rows_by_path


def test_fields_validate_as_their_values_complete() -> None:
    live = LiveParse(Order)
    text = json.dumps({**ORDER, "customer": "A much too long name"})
    cut = text.index('"items"')
    live.feed(text[:cut])
    assert live.status == "streaming"
    assert live.field_status == {("customer",): "invalid"}
    assert "at most 10 characters" in live.all_errors()[0]["msg"]
    cut2 = text.index('{"name": "cake"')
    live.feed(text[cut:cut2])
    assert live.field_status[("items", 0)] == "ok"
    assert ("items",) not in live.field_status  # the list is still open
    by = rows_by_path(live_rows(live))
    assert by[("note",)].kind == "pending" and by[("items", 0, "name")].value == "tea"
    live.feed(text[cut2:])
    live.finish()
    assert live.status == "invalid" and live.result is None
    assert [tuple(e["loc"]) for e in live.errors] == [("customer",)]


def test_a_string_still_streaming_shows_as_partial() -> None:
    live = LiveParse(Order)
    live.feed('{"customer": "Al", "note": "ring tw')
    by = rows_by_path(live_rows(live))
    assert by[("note",)].kind == "partial" and by[("note",)].value == "ring tw"
    assert by[("customer",)].status == "ok"
    assert "lion-parse-partial" in tree_html(live_rows(live))


def test_not_json_and_cut_off_replies_are_reported() -> None:
    prose = LiveParse(Order)
    prose.feed("I cannot answer that.")
    prose.finish()
    assert prose.status == "not-json" and "no JSON" in prose.error
    broken = LiveParse(Order)
    broken.feed('{"customer": tru')
    broken.feed("x}")
    assert broken.status == "not-json" and "invalid literal" in broken.error
    cut = LiveParse(Order)
    cut.feed('{"customer": "x", "items": [')
    cut.finish()
    assert cut.status == "not-json" and "ended before" in cut.error


def test_live_validation_work_is_linear_not_per_chunk() -> None:
    """A 42 KB object in 4-character chunks: every character scanned once, every value
    validated a bounded number of times (re-parsing per chunk would be ~10,000 parses)."""
    items = [{"name": f"item {i} " + "x" * 30, "price": i + 1.0} for i in range(700)]
    text = json.dumps({"customer": "Bob", "items": items, "note": "n" * 200})
    assert len(text) > 42_000
    live = LiveParse(Order)
    chunks = [text[i : i + 4] for i in range(0, len(text), 4)]
    started = time.process_time()
    for chunk in chunks:
        live.feed(chunk)
    live.finish()
    cpu = time.process_time() - started
    assert live.status == "valid" and len(live.result.items) == 700
    assert live.scanner.work == len(text)
    # 3 top-level fields (the items list among them) + 700 items + the whole object once
    assert live.validations == 3 + 700 + 1
    assert len(chunks) > 10_000
    assert cpu < 2.0  # generous; the measured per-chunk re-parse costs seconds
