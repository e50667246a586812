"""Transcript: the message widgets of a chat view, placed in its view model's order."""

from __future__ import annotations

import time
import uuid

from lion_nb import Branch
from lion_nb.messages import AssistantResponse, Instruction
from lion_nb.render.html import message_html
from lion_nb.signals import StreamDelta, TextAccumulator
from lion_nb.widgets.live import WidgetKit
from lion_nb.widgets.transcript import Transcript


def transcript(branch: Branch, **kw) -> Transcript:
    return Transcript(branch, WidgetKit(), clock=time.monotonic, **kw)


def test_a_streamed_reply_becomes_its_recorded_card_in_the_same_widget() -> None:
    branch = Branch()
    view = transcript(branch)
    mid = uuid.uuid4()
    acc = TextAccumulator()
    acc.append("Hel")
    view.on_delta(
        StreamDelta(
            branch_id=branch.id, message_id=mid, kind="text", delta="Hel", source=acc, length=3
        )
    )
    ((key, live_widget),) = view.items
    assert key == ("live", mid) and "Hel" in view.html()
    ask = Instruction(instruction="hi")
    branch.add_message(ask)
    view.on_message(ask)  # recorded after the reply began: placed before it
    reply = AssistantResponse(id=mid, response="Hello")
    branch.add_message(reply)
    view.on_message(reply)
    assert [k for k, _ in view.items] == [ask.id, mid]
    assert view.items[1][1] is live_widget  # the live widget now holds the card
    assert view.html() == message_html(ask) + message_html(reply)
    assert not view.live
    view.close()


def test_a_pending_prompt_is_replaced_by_its_instruction() -> None:
    branch = Branch()
    view = transcript(branch)
    view.show_prompt("typed")
    ((_, pending),) = view.items
    ask = Instruction(instruction="typed")
    branch.add_message(ask)
    view.on_message(ask)
    assert view.items == [(ask.id, pending)] and pending.value == message_html(ask)
    view.close()


def test_hidden_history_and_rebuild() -> None:
    branch = Branch(system="S")
    view = transcript(branch, hidden=frozenset(branch.progression))
    view.rebuild()
    assert view.items == [] and view.messages() == []
    ask = Instruction(instruction="later")
    branch.add_message(ask)
    view.check()  # recorded without a signal: rebuilt
    assert [k for k, _ in view.items] == [ask.id] and view.shown_ids() == [ask.id]
    view.close()
