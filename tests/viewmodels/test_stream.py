"""StreamText: one streamed part read from StreamDelta snapshots, never from added-up deltas."""

from __future__ import annotations

import uuid

from lion_nb.signals import StreamDelta
from lion_nb.viewmodels.stream import StreamText


def test_the_first_take_is_everything_streamed_so_far(part) -> None:
    mid = uuid.uuid4()
    for word in ("one ", "two ", "three "):
        last = part(mid, word)
    text = StreamText()
    text.update(last)
    assert text.length == len("one two three ") and text.pending == text.length
    assert text.take() == "one two three "
    assert text.pending == 0 and text.take() == ""


def test_later_takes_are_what_arrived_since(part) -> None:
    mid = uuid.uuid4()
    text = StreamText(part(mid, "a"))
    assert text.take() == "a"
    text.update(part(mid, "b"))  # one delta since the last take
    assert text.take() == "b"
    part(mid, "c")  # a delta this reader never saw
    text.update(part(mid, "d"))
    assert text.take() == "cd"  # from the snapshot, not from the deltas it was given
    assert text.text() == "abcd" and text.read == 4


def test_a_snapshot_is_cut_at_its_own_length(part) -> None:
    """A signal's snapshot is the part as it was when the signal was made."""
    mid = uuid.uuid4()
    early = part(mid, "early ")
    part(mid, "later")
    text = StreamText(early)
    assert text.take() == "early "


def test_a_signal_with_a_plain_string_source() -> None:
    signal = StreamDelta(
        branch_id=uuid.uuid4(), message_id=uuid.uuid4(), kind="text", delta="lo", source="hello"
    )
    text = StreamText(signal)
    assert text.length == 5 and text.take() == "hello"


def test_nothing_streamed() -> None:
    text = StreamText()
    assert text.length == 0 and text.take() == "" and text.text() == ""
