"""Transcript: the message parts of a chat view, placed in its view model's order and sent
as ordered ops (replayed here on the page model)."""

from __future__ import annotations

import uuid

from lion_nb import Branch
from lion_nb.messages import AssistantResponse, Instruction
from lion_nb.render.html import message_html
from lion_nb.signals import StreamDelta, TextAccumulator
from lion_nb.widgets.channel import Channel
from lion_nb.widgets.transcript import Transcript
from tests.support.page_model import Page


def transcript(branch: Branch, **kw) -> Transcript:
    view = Transcript(branch, Channel(lambda msg: view.sent.append(msg)), **kw)
    view.sent = []  # type: ignore[attr-defined]
    return view


def page_of(view: Transcript) -> Page:
    page = Page()
    for msg in view.sent:  # type: ignore[attr-defined]
        page.receive(msg)
    return page


def test_a_streamed_reply_becomes_its_recorded_card_in_place() -> None:
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
    ((key, _html),) = view.items
    assert key == ("live", mid) and "Hel" in view.html()
    ask = Instruction(instruction="hi")
    branch.add_message(ask)
    view.on_message(ask)  # recorded after the reply began: placed before it
    reply = AssistantResponse(id=mid, response="Hello")
    branch.add_message(reply)
    view.on_message(reply)
    assert [k for k, _ in view.items] == [ask.id, mid]
    page = page_of(view)
    assert page.order == [str(ask.id), str(mid)]
    assert page.html() == message_html(ask) + message_html(reply)  # sealed in place
    assert view.html() == message_html(ask) + message_html(reply)
    assert not view.live
    view.close()


def test_a_pending_prompt_is_replaced_by_its_instruction() -> None:
    branch = Branch()
    view = transcript(branch)
    view.show_prompt("typed")
    ((_pending, _),) = view.items
    ask = Instruction(instruction="typed")
    branch.add_message(ask)
    view.on_message(ask)
    assert view.items == [(ask.id, message_html(ask))]
    assert page_of(view).order == [str(ask.id)]  # replaced in place
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
