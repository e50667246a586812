"""The delta protocol on the kernel side (``widgets.channel`` + ``widgets.live``), without a
kernel: a page model (``page_model.Page``) applies the messages as ``widgets/lion_nb.js`` does.

Order, sequence gaps healed from the synced state, a late attach, the seal into the recorded
card, throttling, and bytes per update bounded."""

from __future__ import annotations

import html as _html
import json
import re
import uuid

import pytest

from lion_nb import Branch, BranchView, iModel
from lion_nb.messages import AssistantResponse
from lion_nb.render.html import assistant_parts, message_html
from lion_nb.signals import StreamDelta, TextAccumulator
from lion_nb.widgets.channel import Channel, fingerprint
from lion_nb.widgets.live import LiveConfig, LiveMessage
from tests.support.page_model import Page


class ManualTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.timers: list[tuple[float, object]] = []

    def clock(self) -> float:
        return self.now

    def call_later(self, wait: float, fn):
        entry = (self.now + wait, fn)
        self.timers.append(entry)

        class Handle:
            def cancel(_self) -> None:
                if entry in self.timers:
                    self.timers.remove(entry)

        return Handle()

    def advance(self, seconds: float) -> None:
        end = self.now + seconds
        while True:
            due = [t for t in self.timers if t[0] <= end]
            if not due:
                break
            first = min(due, key=lambda t: t[0])
            self.timers.remove(first)
            self.now = first[0]
            first[1]()
        self.now = end


def deltas(branch_id, mid, text: str, size: int = 5):
    acc = TextAccumulator()
    for i in range(0, len(text), size):
        piece = text[i : i + size]
        acc.append(piece)
        yield StreamDelta(
            branch_id=branch_id,
            message_id=mid,
            kind="text",
            delta=piece,
            source=acc,
            length=i + len(piece),
        )


def markdown(words: int) -> str:
    paras, n = [], 0
    while n < words:
        paras.append(" ".join(f"w{n + j}" for j in range(40)) + ".")
        n += 40
        if len(paras) % 4 == 0:
            paras.append("```python\n" + "\n".join(f"x = {j}" for j in range(6)) + "\n```")
    return "\n\n".join(paras)


def stream_into(channel_msgs: list, time_: ManualTime, rate_chars: float, text: str):
    """Stream ``text`` through a LiveMessage at ``rate_chars`` chars/s; returns it."""
    channel = Channel(channel_msgs.append, clock=time_.clock, call_later=time_.call_later)
    mid = uuid.uuid4()
    live = LiveMessage(mid, channel, model="scripted")
    channel.push({"op": "put", "key": live.key, "html": live.shell_html(), "before": None})
    for signal in deltas(uuid.uuid4(), mid, text):
        live.feed(signal)
        time_.advance(5 / rate_chars)
    time_.advance(1.0)
    return channel, live, mid


def test_ops_arrive_in_order_and_rebuild_the_recorded_card() -> None:
    msgs: list = []
    time_ = ManualTime()
    text = markdown(400)
    channel, live, mid = stream_into(msgs, time_, 2000, text)
    assert [m["seq"] for m in msgs] == list(range(1, len(msgs) + 1))
    message = AssistantResponse(id=mid, response=text)
    parts = assistant_parts(message)
    card = parts.html()
    assert card == message_html(message)
    seal = live.seal_op(parts, str(mid))
    assert seal["op"] == "seal" and seal["fp"] == fingerprint(card)
    channel.push(seal)
    page = Page()
    for m in msgs:
        page.receive(m)
    assert page.order == [str(mid)]
    assert page.html() == card  # the page shows exactly the recorded card
    # the seal carried only what the page lacked: not the body again
    assert len(json.dumps(msgs[-1])) < len(card) / 2


def test_a_gap_is_detected_and_healed_from_the_synced_state() -> None:
    branch = Branch(chat_model=iModel(provider="scripted", replies=["x"]))
    view = BranchView(branch)
    sent: list = []
    view.channel._send = sent.append  # what the comm would carry
    view.transcript.show_prompt("one")
    view.transcript.show_prompt("two")
    view.transcript.show_prompt("three")
    page = Page()
    page.receive(sent[0])
    page.receive(sent[2])  # message 2 was lost
    assert page.resyncs == 1 and len(page.order) == 1
    view._on_page(view, {"action": "resync", "have": 1}, [])  # what the page then asks
    page.from_state(view.parts, view.seq)  # the synced state it is sent
    assert len(page.order) == 3 and page.html() == view.rendered_html()
    view.transcript.show_prompt("four")
    page.receive(sent[-1])  # and the stream goes on from there
    assert len(page.order) == 4 and page.resyncs == 1


def test_a_late_front_end_shows_a_reply_half_way_through() -> None:
    branch = Branch()
    view = BranchView(branch)
    sent: list = []
    view.channel._send = sent.append
    mid = uuid.uuid4()
    signals = list(deltas(branch.id, mid, markdown(200)))
    for s in signals[: len(signals) // 2]:
        view.transcript.on_delta(s)
    view.channel.flush()
    late = Page()  # attaches now: it has the synced state of before the reply ...
    late.from_state(view.parts, view.seq)
    later = len(sent)
    for s in signals[len(signals) // 2 :]:
        view.transcript.on_delta(s)
    view.channel.flush()
    late.receive(sent[later])  # ... so the next update shows a gap
    assert late.resyncs == 1
    view._on_page(view, {"action": "resync"}, [])
    late.from_state(view.parts, view.seq)
    assert "w0 w1 w2" in late.html() and "w199" in late.html()
    assert late.html().count("w100 ") == 1


@pytest.mark.parametrize("rate", [250.0, 5000.0])  # characters per second: ~50 and ~1,000 tok/s
def test_updates_are_throttled_and_bytes_per_update_bounded(rate: float) -> None:
    msgs: list = []
    time_ = ManualTime()
    text = markdown(1500)
    _channel, _live, _mid = stream_into(msgs, time_, rate, text)
    seconds = len(text) / rate
    assert len(msgs) <= 15 * seconds + 3
    assert len(msgs) >= min(10 * seconds, len(text) / 5) * 0.9  # >= 10 updates a second
    sizes = [len(json.dumps(m)) for m in msgs[1:]]
    # an update carries the finished blocks since the last one and a bounded tail
    biggest_block = max(len(b) for b in _live._frozen)
    assert max(sizes) < biggest_block * 2 + 2 * LiveConfig().tail_html_chars + 600
    total = sum(sizes)
    frozen = sum(len(b) for b in _live._frozen)
    assert total < 1.5 * frozen + 6000 * seconds  # payloads; the envelope comes on top


def test_a_long_unfinished_block_is_sent_as_new_text_not_re_rendered() -> None:
    msgs: list = []
    time_ = ManualTime()
    code = "```python\n" + "\n".join(f"value_{i} = {i}" for i in range(400))  # one open fence
    stream_into(msgs, time_, 2000, code)
    tails = [op for m in msgs for op in m["ops"] if op["op"] == "tail"]
    assert any(op.get("add") for op in tails)
    assert sum(len(json.dumps(op)) for op in tails) < 3 * len(code)


def test_thinking_and_tool_arguments_show_as_bounded_escaped_previews() -> None:
    msgs: list = []
    channel = Channel(msgs.append)
    mid = uuid.uuid4()
    live = LiveMessage(mid, channel, config=LiveConfig(preview_chars=100))
    acc = TextAccumulator()
    acc.append("<script>" + "t" * 500)
    live.feed(
        StreamDelta(
            branch_id=uuid.uuid4(),
            message_id=mid,
            kind="thinking",
            delta="x",
            source=acc,
            length=508,
        )
    )
    slot = next(op for m in msgs for op in m["ops"] if op["op"] == "slot")
    assert slot["slot"] == "thinking" and "<script>" not in slot["html"]
    assert len(slot["html"]) < 400


def test_finish_marks_the_card_and_renders_the_rest() -> None:
    msgs: list = []
    time_ = ManualTime()
    _channel, live, _mid = stream_into(msgs, time_, 2000, "Some **bold** text\n\nand a tail")
    live.finish("stopped")
    seal = msgs[-1]["ops"][-1]
    assert seal["op"] == "seal" and "lion-stopped-msg" in seal["cls"]
    assert "stopped" in seal["head"]
    page = Page()
    for m in msgs:
        page.receive(m)
    assert "and a tail" in page.html() and "<strong>bold</strong>" in page.html()


def test_the_seal_sends_blocks_still_waiting_for_the_throttle_once() -> None:
    msgs: list = []
    time_ = ManualTime()
    channel = Channel(msgs.append, clock=time_.clock, call_later=time_.call_later)
    mid = uuid.uuid4()
    live = LiveMessage(mid, channel)
    channel.push({"op": "put", "key": live.key, "html": live.shell_html(), "before": None})
    text = markdown(300)
    for signal in deltas(uuid.uuid4(), mid, text):
        live.feed(signal)  # time stands still: after the first update, all waits
    message = AssistantResponse(id=mid, response=text)
    parts = assistant_parts(message)
    card = parts.html()
    assert card == message_html(message)
    seal = live.seal_op(parts, str(mid))
    assert seal["op"] == "seal"
    channel.push(seal)
    page = Page()
    for m in msgs:
        page.receive(m)
    assert page.html() == card


def test_a_held_prompt_goes_with_the_replys_first_text_or_alone_when_the_hold_ends() -> None:
    for first_text_after in (0.01, 0.5):
        msgs: list = []
        time_ = ManualTime()
        channel = Channel(msgs.append, clock=time_.clock, call_later=time_.call_later)
        channel.push({"op": "put", "key": "P1", "html": "<div>q</div>"}, hold=0.04)
        channel.push({"op": "chrome", "values": {"busy": True}})  # waits with the prompt
        assert msgs == []
        time_.advance(first_text_after)
        live = LiveMessage(uuid.uuid4(), channel, key="L2")
        channel.queue({"op": "put", "key": "L2", "html": live.shell_html()})  # as Transcript
        live.feed(next(deltas(uuid.uuid4(), live.message_id, "Hello there")))
        kinds = [[op["op"] for op in m["ops"]] for m in msgs]
        if first_text_after < 0.04:  # one message: prompt, chrome, the reply's card and text
            assert kinds == [["put", "chrome", "put", "tail"]], kinds
        else:  # the prompt did not wait for a slow first token longer than the hold
            assert kinds == [["put", "chrome"], ["put", "tail"]], kinds
            assert msgs[0]["seq"] == 1 and msgs[1]["seq"] == 2


def test_a_put_of_a_template_names_it_and_the_page_draws_the_same_card() -> None:
    msgs: list = []
    channel = Channel(msgs.append)
    live = LiveMessage(uuid.uuid4(), channel, key="L1", model="scripted")
    channel.templates = {live.shell_html(): "live"}
    channel.push({"op": "put", "key": "L1", "html": live.shell_html(), "before": None})
    other = LiveMessage(uuid.uuid4(), channel, key="L2", model="another")  # no template
    channel.push({"op": "put", "key": "L2", "html": other.shell_html(), "before": None})
    first, second = msgs[0]["ops"][0], msgs[1]["ops"][0]
    assert first == {"op": "put", "key": "L1", "before": None, "tpl": "live"}
    assert second["html"] == other.shell_html() and "tpl" not in second
    page = Page(templates={"live": live.shell_html()})
    for m in msgs:
        page.receive(m)
    sent_whole = Page()
    whole = {"op": "put", "key": "L1", "before": None, "html": live.shell_html()}
    sent_whole.receive({"seq": 1, "ops": [whole]})
    sent_whole.receive(msgs[1])
    assert page.html() == sent_whole.html()


async def test_a_fast_reply_and_its_prompt_share_the_first_message_which_names_the_template():
    branch = Branch(
        chat_model=iModel(provider="scripted", replies=[{"chunks": ["a ", "b."], "delay": 0}])
    )
    view = BranchView(branch)
    sent: list[dict] = []
    view.channel._send = sent.append
    view.send("go")
    await view.wait()
    first = sent[0]["ops"]
    assert [op["op"] for op in first][:3] == ["put", "chrome", "put"], first
    assert first[2].get("tpl") == "live" and "html" not in first[2]
    page = Page(templates=view.templates)
    for m in sent:
        page.receive(m)
    assert page.html() == view.rendered_html()


def _visible(html_: str) -> int:
    """The characters of the reply's text a reader sees (its head, tags, whitespace aside)."""
    body = re.sub(r'<div class="lion-head">.*?</div>', "", html_)
    return len(re.sub(r"\s+", "", _html.unescape(re.sub(r"<[^>]+>", "", body))))


@pytest.mark.parametrize("rate", [300, 2000, 20000])
def test_the_visible_text_never_shrinks_while_it_streams(rate: int) -> None:
    # long one-line paragraphs, some with an emoji: a paragraph is finished only when the
    # line after it is, so the next one has grown long by then (the text-shrink glitch)
    text = "\n\n".join(
        " ".join(f"p{p}w{i}" + ("🦁" if i % 17 == 0 else "") for i in range(50)) for p in range(6)
    )
    msgs: list = []
    time_ = ManualTime()
    channel, live, mid = stream_into(msgs, time_, rate, text)
    message = AssistantResponse(id=mid, response=text)
    channel.push(live.seal_op(assistant_parts(message), str(mid)))
    page, shown = Page(), []
    for m in msgs:
        page.receive(m)
        shown.append(_visible(page.html()))
    assert page.html() == message_html(message)
    assert shown == sorted(shown), shown  # never shrank
    if rate <= 2000:  # the page showed the next paragraph's start: kept, not sent again
        assert any("keep" in op for m in msgs for op in m["ops"])


@pytest.mark.parametrize("rate", [300, 2000])
def test_an_update_that_finishes_blocks_the_page_showed_shows_new_text_too(rate: int) -> None:
    # a paragraph is finished once the next one has grown long: the page showed its text (and
    # the next one's start) already, so an update with only the finished block showed nothing
    # new, and the reply stood still for a whole interval at every paragraph's end (the longest
    # gaps of B10, longer when a busy kernel sends late). It carries what the next block grew by.
    text = "\n\n".join(" ".join(f"p{p}w{i}" for i in range(50)) for p in range(6))
    msgs: list = []
    time_ = ManualTime()
    stream_into(msgs, time_, rate, text)
    page, shown, still = Page(), 0, []
    for m in msgs:
        page.receive(m)
        now = _visible(page.html())
        if any(op["op"] == "add" and "keep" in op for op in m["ops"]) and now <= shown:
            still.append((shown, now))
        shown = now
    assert any("keep" in op for m in msgs for op in m["ops"])
    assert still == [], still
