"""BranchView and LiveMessage without a kernel: a scripted model drives the branch and the
tests read widget state (ipywidgets works without a comm; nothing is sent anywhere)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from pydantic import BaseModel

from lion_nb import Branch, BranchView, iModel
from lion_nb.errors import ParseError, ServerError
from lion_nb.messages import AssistantResponse, Instruction
from lion_nb.render.html import message_html, transcript_html
from lion_nb.signals import StreamDelta
from lion_nb.widgets.live import LiveConfig, LiveMessage, WidgetKit

REPLY = (
    "Hello **there**.\n\nA list:\n\n- one\n- two\n\n```python\nprint('hi')\n```\n\n"
    "| a | b |\n|---|---|\n| 1 | 2 |\n\nDone."
)


def scripted(*replies, **kw) -> iModel:
    return iModel(provider="scripted", replies=list(replies), **kw)


class CountingKit(WidgetKit):
    """A WidgetKit that adds up what its widgets would send: the state of every new widget and
    every later change of ``value`` / ``children`` (one comm message each)."""

    def __init__(self) -> None:
        super().__init__()
        self.messages = 0
        self.payload = 0

    def _track(self, widget, size: int):
        self.messages += 1
        self.payload += size

        def changed(change) -> None:
            new = change["new"]
            self.messages += 1
            self.payload += len(new) if isinstance(new, str) else 45 * len(new)

        widget.observe(changed, names=["value", "children"])
        return widget

    def html(self, value: str = "", classes=()):
        return self._track(super().html(value, classes), len(value) + 500)

    def vbox(self, children=(), classes=()):
        return self._track(super().vbox(children, classes), 45 * len(children) + 500)


def delta(mid: uuid.UUID, text: str, kind: str = "text", **kw) -> StreamDelta:
    return StreamDelta(branch_id=uuid.uuid4(), message_id=mid, kind=kind, delta=text, **kw)


# ----- attaching and rebuilding ------------------------------------------------------------------
def test_attaching_to_a_branch_with_messages_shows_them():
    branch = Branch(system="Be brief.")
    branch.add_message(Instruction(instruction="Hi"))
    branch.add_message(AssistantResponse(response="Hello *you*"))
    view = BranchView(branch)
    assert view.rendered_html() == "".join(message_html(m) for m in branch.messages)
    assert "<em>you</em>" in view.rendered_html()
    assert len(view.transcript.box.children) == 3
    assert not view.send_button.disabled and view.stop_button.disabled


async def test_live_view_equals_a_view_rebuilt_from_messages():
    branch = Branch(system="Sys", chat_model=scripted(REPLY, "Second *reply*", delay=0.002))
    view = BranchView(branch)
    await view.asend("First {x} <b>question</b>")
    await view.asend("Second")
    assert [m.role for m in branch.messages] == ["system", "user", "assistant", "user", "assistant"]
    rebuilt = BranchView(branch)
    assert view.rendered_html() == rebuilt.rendered_html()
    assert view.rendered_html() == "".join(message_html(m) for m in branch.messages)
    assert "&lt;b&gt;question" in view.rendered_html()  # the prompt is text, not markup
    assert not view.transcript.live  # no streaming widgets left behind


async def test_streaming_updates_the_view_progressively_and_disables_send():
    words = [f"w{i} " for i in range(60)]
    branch = Branch(chat_model=scripted({"chunks": words, "delay": 0.01}))
    view = BranchView(branch)
    view.send("go")
    task = view.task
    assert task is not None and view.running
    assert view.send_button.disabled and not view.stop_button.disabled
    view.send("again")  # Send is refused while a run is active
    assert view.task is task and len(view.transcript.items) == 1
    seen: list[str] = []
    for _ in range(200):
        await asyncio.sleep(0.01)
        if view.transcript.live:
            seen.append(next(iter(view.transcript.live.values())).html())
        if task.done():
            break
    await task
    partial = [s for s in seen if "w5 " in s and "w59" not in s]
    assert partial, "the reply should be visible before it is complete"
    assert "lion-streaming" in partial[0]
    assert not view.send_button.disabled and view.stop_button.disabled
    assert "communicate done" in view.status.value


async def test_the_prompt_shows_at_once_and_becomes_the_recorded_instruction():
    branch = Branch(chat_model=scripted({"text": "ok", "delay": 0.05}))
    view = BranchView(branch)
    view.prompt.value = "typed *here*"
    view.send_button.click()
    assert view.prompt.value == ""
    assert "<em>here</em>" in view.rendered_html() and "lion-pending" in view.rendered_html()
    await view.wait()
    assert "lion-pending" not in view.rendered_html()
    assert view.rendered_html() == "".join(message_html(m) for m in branch.messages)


async def test_a_run_started_elsewhere_shows_live_and_in_reading_order():
    branch = Branch(chat_model=scripted({"text": REPLY, "delay": 0.001}))
    view = BranchView(branch)
    await branch.communicate("asked in a cell")
    assert [k for k, _ in view.transcript.items] == [m.id for m in branch.messages]
    assert view.rendered_html() == BranchView(branch).rendered_html()


# ----- stop and errors ---------------------------------------------------------------------------
async def test_stop_during_communicate_keeps_the_partial_reply_marked_stopped():
    words = [f"part{i} " for i in range(200)]
    branch = Branch(chat_model=scripted({"chunks": words, "delay": 0.01}))
    view = BranchView(branch)
    view.send("long one")
    task = view.task
    for _ in range(300):
        await asyncio.sleep(0.01)
        if view.transcript.live and "part3" in next(iter(view.transcript.live.values())).html():
            break
    view.stop_button.click()
    await task  # the view swallows its own cancellation
    assert "stopped" in view.status.value
    live = next(iter(view.transcript.live.values()))
    assert live.done and "part3" in live.html() and "lion-stopped" in live.html()
    assert "part199" not in view.rendered_html()
    assert not view.running and not view.send_button.disabled and view.stop_button.disabled
    # communicate records nothing when stopped; the prompt stays visible as sent
    assert len(branch.messages) == 0
    assert "long one" in view.rendered_html()


async def test_stop_during_run_records_the_partial_text():
    cli = scripted({"chunks": [f"tok{i} " for i in range(300)], "delay": 0.01}, cli=True)
    branch = Branch(chat_model=cli)
    view = BranchView(branch, verb="run")
    view.send("go")
    task = view.task
    for _ in range(300):
        await asyncio.sleep(0.01)
        if view.transcript.live and "tok5" in next(iter(view.transcript.live.values())).html():
            break
    view.stop()
    await task
    last = branch.messages[-1]
    assert last.role == "assistant" and last.metadata.get("stopped") is True
    assert "tok5" in last.response and "tok299" not in last.response
    assert view.rendered_html() == BranchView(branch).rendered_html()
    assert "lion-stopped" in view.rendered_html()


async def test_errors_show_in_the_view_instead_of_escaping():
    branch = Branch(chat_model=scripted(ServerError("upstream <b>boom</b>", provider="x")))
    view = BranchView(branch)
    assert await view.asend("hi") is None
    assert "ServerError" in view._error.value and "&lt;b&gt;boom" in view._error.value
    assert "failed" in view.status.value
    assert isinstance(view.last_error, ServerError)
    assert not view.running and not view.send_button.disabled
    # an error raised before any run starts (run() needs a CLI model) is shown the same way
    wrong = BranchView(Branch(chat_model=scripted("x")), verb="run")
    await wrong.asend("hi")
    assert "ValueError" in wrong._error.value and "not one" in wrong._error.value
    assert not wrong.running


async def test_send_needs_a_loop_and_a_prompt():
    view = BranchView(Branch(chat_model=scripted("x")))
    view.send("   ")
    assert view.task is None and view.transcript.items == []
    with pytest.raises(ValueError, match="unknown verb"):
        BranchView(Branch(), verb="shout")


def test_send_outside_an_event_loop_explains_what_to_do():
    view = BranchView(Branch(chat_model=scripted("x")))
    with pytest.raises(RuntimeError, match="asend"):
        view.send("hi")


async def test_close_unsubscribes_and_cancels_its_run():
    branch = Branch(chat_model=scripted({"chunks": ["a "] * 100, "delay": 0.01}, "later"))
    view = BranchView(branch)
    assert len(branch._observers._handlers) == 1
    view.send("x")
    task = view.task
    await asyncio.sleep(0.05)
    view.close()
    assert branch._observers._handlers == []
    with pytest.raises(asyncio.CancelledError):
        await task
    await branch.communicate("after close")  # nothing reaches the closed view
    assert view.transcript.items == []


async def test_custom_verb_and_history_false():
    branch = Branch(chat_model=scripted("one", "two", "three"))
    await branch.communicate("before")

    async def twice(b, text):
        await b.communicate(text)
        return await b.communicate(text + " again")

    view = BranchView(branch, verb=twice, history=False)
    assert view.rendered_html() == ""
    assert await view.asend("now") == "three"
    assert [k for k, _ in view.transcript.items] == [m.id for m in branch.messages][2:]


async def test_clear_messages_is_picked_up_at_the_next_run_end():
    branch = Branch(system="S", chat_model=scripted("a", "b"))
    view = BranchView(branch)
    await view.asend("1")
    branch.clear_messages()
    await view.asend("2")
    assert view.rendered_html() == BranchView(branch).rendered_html()
    assert len(view.transcript.items) == 3


def test_static_fallback_has_the_transcript_as_html():
    branch = Branch(system="S")
    branch.add_message(Instruction(instruction="<script>alert(1)</script> hi"))
    bundle = BranchView(branch, title="T")._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    html_ = bundle["text/html"]
    assert transcript_html(list(branch.messages), title="T") in html_
    assert "<script>" not in html_ and "<style" in html_


async def test_the_saved_output_is_refreshed_when_a_run_ends(outputs):
    """A notebook saved after the run holds the final transcript, not the messages shown when
    the view's cell ran: a run end (RunEnd or RunFailed) replaces the saved output, once, at
    the end of the cell."""
    branch = Branch(system="S", chat_model=scripted("FIRST-REPLY", "SECOND <b>reply</b>"))
    view = BranchView(branch, title="T")
    outputs.show(view)
    assert "FIRST-REPLY" not in outputs.of(view)["text/html"]
    with outputs.cell():
        await branch.communicate("one")  # a run started elsewhere (a later cell)
        assert outputs.updates == 0  # sent when the cell ends, not per run
    assert "FIRST-REPLY" in outputs.of(view)["text/html"] and outputs.updates == 1
    with outputs.cell():
        await view.asend("two")  # a run started from the view
    assert outputs.updates == 2
    saved = outputs.of(view)
    assert saved["text/html"].endswith(transcript_html(list(branch.messages), title="T"))
    assert "SECOND &lt;b&gt;reply" in saved["text/html"]
    assert "application/vnd.jupyter.widget-view+json" in saved
    # text/plain is the transcript too (not "VBox(children=...)")
    assert "SECOND <b>reply</b>" in saved["text/plain"] and "VBox(" not in saved["text/plain"]
    branch.chat_model = scripted("THIRD not json")
    with outputs.cell(), pytest.raises(ParseError):  # a failed run that recorded its exchange
        await branch.communicate("three", response_format=Answer, num_parse_retries=0)
    assert "THIRD not json" in outputs.of(view)["text/plain"] and outputs.updates == 3
    with outputs.cell():
        view.refresh()  # nothing changed: the saved output is not sent again
    assert outputs.updates == 3
    view.close()


class Answer(BaseModel):
    n: int


async def test_many_runs_in_one_cell_replace_the_saved_output_once(outputs):
    """JupyterLab renders a widget output anew for each update, so updates are coalesced."""
    branch = Branch(chat_model=scripted(*[f"reply {i}" for i in range(20)]))
    view = BranchView(branch)
    outputs.show(view)
    with outputs.cell():
        for i in range(20):
            await view.asend(f"q{i}")
    assert outputs.updates == 1 and "reply 19" in outputs.of(view)["text/plain"]
    view.close()


async def test_a_run_that_ends_outside_any_cell_is_saved_shortly_after(outputs):
    """A Send click (or ``%%lion`` without ``--wait``): the run ends when no cell executes."""
    branch = Branch(chat_model=scripted({"text": "LATE-REPLY", "delay": 0.05}))
    view = BranchView(branch)
    view.refresh_delay = 0.2
    outputs.show(view)
    with outputs.cell():
        view.send("go")  # returns at once; the cell ends while the reply streams
    await view.wait()
    assert outputs.updates == 0  # not yet: refresh_delay after the run ended
    await asyncio.sleep(0.5)
    assert outputs.updates == 1 and "LATE-REPLY" in outputs.of(view)["text/plain"]
    view.close()


async def test_a_verb_without_a_run_lifecycle_still_refreshes_the_saved_output(outputs):
    async def record(branch, text):  # records the exchange, emits no RunStart/RunEnd
        return await branch.chat_and_record(text)

    view = BranchView(Branch(chat_model=scripted("CUSTOM-REPLY")), verb=record)
    outputs.show(view)
    with outputs.cell():
        await view.asend("hi")
    assert "CUSTOM-REPLY" in outputs.of(view)["text/html"] and outputs.updates == 1
    view.close()


async def test_the_magic_view_saves_its_exchange_when_the_run_ends(outputs):
    from lion_nb.magics import lion

    notes = Branch(chat_model=scripted("MAGIC-REPLY", "MAGIC-REPLY-2"))
    await notes.communicate("earlier")
    view, text, _wait = lion("--branch notes", "Ask {topic}", {"notes": notes, "topic": "TOPIC-9"})
    with outputs.cell():  # what the magic does with --wait
        view._ipython_display_()
        assert "TOPIC-9" not in outputs.of(view)["text/html"]
        await view.asend(text)
    saved = outputs.of(view)
    assert "TOPIC-9" in saved["text/html"] and "MAGIC-REPLY-2" in saved["text/html"]
    assert "earlier" not in saved["text/html"]  # history=False: only this cell's exchange
    view.close()


# ----- LiveMessage: throttle, budget, previews ---------------------------------------------------
async def test_first_token_is_sent_at_once_then_updates_are_throttled():
    live = LiveMessage(uuid.uuid4(), WidgetKit(), config=LiveConfig(max_rate=10))
    live.feed(delta(live.message_id, "first "))
    assert live.updates == 1 and "first" in live.html()
    start = asyncio.get_running_loop().time()
    for i in range(200):  # 200 deltas over ~0.6 s
        live.feed(delta(live.message_id, f"t{i} "))
        await asyncio.sleep(0.003)
    elapsed = asyncio.get_running_loop().time() - start
    assert live.updates <= 1 + elapsed * 10 + 2
    assert live.updates >= 3
    await asyncio.sleep(1.0)  # what is pending goes out once the stream is quiet
    assert "t199" in live.html()


class ManualTime:
    """A clock and ``call_later`` that move only when the test says so."""

    def __init__(self) -> None:
        self.now = 0.0
        self._pending: list[list] = []

    def clock(self) -> float:
        return self.now

    def call_later(self, delay: float, fn):
        entry = [self.now + delay, fn, False]

        class Handle:
            def cancel(self_inner) -> None:
                entry[2] = True

        self._pending.append(entry)
        return Handle()

    def advance(self, seconds: float) -> None:
        end = self.now + seconds
        while True:
            due = [e for e in self._pending if not e[2] and e[0] <= end]
            if not due:
                break
            entry = min(due, key=lambda e: e[0])
            self._pending.remove(entry)
            self.now = max(self.now, entry[0])
            entry[1]()
        self.now = end


def markdown_reply(tokens: int) -> str:
    """Paragraphs of word tokens with a code block every fifth paragraph."""
    paragraphs: list[str] = []
    words = 0
    while words < tokens:
        n = 40 + words % 37
        paragraphs.append(" ".join(f"w{words + j}" for j in range(n)) + ".")
        words += n
        if len(paragraphs) % 5 == 0:
            paragraphs.append("```python\n" + "\n".join(f"x = {j}" for j in range(8)) + "\n```")
    return "\n\n".join(paragraphs)


def stream(live: LiveMessage, time_: ManualTime, text: str, rate: float) -> None:
    for tok in [t + " " for t in text.split(" ")]:
        live.feed(delta(live.message_id, tok))
        time_.advance(1 / rate)


@pytest.mark.parametrize("rate", [50, 2000], ids=["50tok/s", "2000tok/s"])
@pytest.mark.parametrize("tokens", [300, 3000, 30000])
def test_traffic_stays_linear_in_the_final_html(tokens, rate):
    text = markdown_reply(tokens)
    time_, kit = ManualTime(), CountingKit()
    live = LiveMessage(uuid.uuid4(), kit, clock=time_.clock, call_later=time_.call_later)
    live.feed(delta(live.message_id, "w"))
    assert live.updates == 1 and time_.now == 0  # the first token is shown at once
    stream(live, time_, text[1:], rate)
    card = message_html(AssistantResponse(response=text))
    live.adopt(card)
    # everything the message's widgets sent: ~500 bytes of state per new widget, ~700 bytes
    # of envelope per comm message, every value
    sent = kit.payload + kit.messages * 700
    cfg = live.config
    # the guarantee: ratio x the final HTML, plus the final card, plus the start-up allowance
    bound = (cfg.ratio + 1.5) * len(card) + cfg.allowance + cfg.first
    assert sent <= bound, (sent / len(card), kit.messages)
    if tokens >= 3000:  # where the allowance is amortised: the B4 target
        assert sent <= 5 * len(card), (sent / len(card), kit.messages)
    seconds = time_.now
    assert live.updates <= 1 + seconds * 15 + 1
    # the view keeps moving: on average at least one update every 5 s of stream (each comm
    # message costs ~700 bytes of envelope, so a slow stream cannot afford more within 5x)
    assert live.updates >= seconds / 5


def test_a_huge_unfinished_block_updates_less_often_instead_of_costing_more():
    time_, kit = ManualTime(), CountingKit()
    live = LiveMessage(uuid.uuid4(), kit, clock=time_.clock, call_later=time_.call_later)
    live.feed(delta(live.message_id, "```\n"))
    for i in range(4000):
        live.feed(delta(live.message_id, f"line {i}\n"))
        time_.advance(0.01)
    live.finish("done")
    assert "line 3999" in live.html()
    assert kit.payload + kit.messages * 700 <= 5 * len(live.html())


def test_a_quiet_stream_shows_what_it_sent_even_when_the_budget_is_spent():
    time_ = ManualTime()
    live = LiveMessage(uuid.uuid4(), WidgetKit(), clock=time_.clock, call_later=time_.call_later)
    for i in range(200):
        live.feed(delta(live.message_id, f"t{i} "))
        time_.advance(0.001)
    assert "t199" not in live.html()
    time_.advance(live.config.idle + 0.01)  # an agent running a tool: nothing arrives
    assert "t199" in live.html()


def test_thinking_and_tool_arguments_show_as_bounded_escaped_previews():
    live = LiveMessage(uuid.uuid4(), WidgetKit(), config=LiveConfig(preview_chars=100))
    live.feed(delta(live.message_id, "<img src=x onerror=alert(1)>" + "z" * 500, kind="thinking"))
    live.feed(
        delta(
            live.message_id, '{"q": "<svg onload=1>', kind="tool_args", name="search", call_id="c1"
        )
    )
    live.flush()
    shown = live.html()
    assert "<img" not in shown and "<svg" not in shown and "&lt;svg" in shown
    assert "Thinking (528 chars)" in shown
    assert shown.count("z") <= 100
    assert "search" in shown


async def test_finish_marks_the_card_and_renders_the_rest():
    live = LiveMessage(uuid.uuid4(), WidgetKit())
    live.feed(delta(live.message_id, "para one\n\npara *two"))
    live.finish("stopped")
    assert "lion-stopped" in live.html() and "para one" in live.html() and "two" in live.html()
    live.feed(delta(live.message_id, "ignored"))
    assert "ignored" not in live.html()


async def test_two_views_never_run_on_one_branch_at_once():
    branch = Branch(chat_model=scripted({"chunks": ["a "] * 200, "delay": 0.01}, "second"))
    first = BranchView(branch)
    first.send("one")
    await asyncio.sleep(0.05)
    second = BranchView(branch)  # made while the run streams (a re-run %%lion cell)
    second.send("two")  # refused: shown in the second view
    assert second.task is None and "another view is running" in second._error.value
    second.send("two", stop_others=True)  # stops the first, then runs
    assert await second.wait() == "second"
    assert "lion-stopped" in first.rendered_html()  # the first reply, cut short
    assert [m.role for m in branch.messages] == ["user", "assistant"]
    assert branch.messages[0].text == "two"
