"""BranchView without a kernel: a scripted model drives the branch and the tests read the
view's state (ipywidgets/anywidget work without a comm; nothing is sent anywhere)."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest
from pydantic import BaseModel

from lion_nb import Branch, BranchView, iModel
from lion_nb.errors import ParseError, ServerError
from lion_nb.messages import AssistantResponse, Instruction
from lion_nb.render.html import message_html, transcript_html
from lion_nb.signals import StreamDelta

REPLY = (
    "Hello **there**.\n\nA list:\n\n- one\n- two\n\n```python\nprint('hi')\n```\n\n"
    "| a | b |\n|---|---|\n| 1 | 2 |\n\nDone."
)


def scripted(*replies, **kw) -> iModel:
    return iModel(provider="scripted", replies=list(replies), **kw)


# ----- attaching and rebuilding ------------------------------------------------------------------
def test_attaching_to_a_branch_with_messages_shows_them():
    branch = Branch(system="Be brief.")
    branch.add_message(Instruction(instruction="Hi"))
    branch.add_message(AssistantResponse(response="Hello *you*"))
    view = BranchView(branch)
    assert view.rendered_html() == "".join(message_html(m) for m in branch.messages)
    assert "<em>you</em>" in view.rendered_html()
    assert len(view.parts) == 3 and view.parts == view.transcript.state()
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
    await asyncio.sleep(0)
    assert view.channel.seq >= 1  # the prompt card went out with the next turn of the loop
    assert "<em>here</em>" in view.rendered_html() and "lion-pending" in view.rendered_html()
    await view.wait()
    assert "lion-pending" not in view.rendered_html()
    assert view.rendered_html() == "".join(message_html(m) for m in branch.messages)


async def test_a_view_attached_half_way_through_a_streamed_reply_shows_the_first_half():
    """Views render ``StreamDelta.snapshot``: the deltas streamed before the view existed are
    in the snapshot, so the reply shows from its start."""
    words = [f"w{i} " for i in range(40)]
    branch = Branch(chat_model=scripted({"chunks": words}))
    views: list[BranchView] = []
    shown: list[str] = []

    def on_delta(signal: StreamDelta) -> None:
        if signal.delta == "w20 ":  # half-way: the first half streamed before the view
            views.append(BranchView(branch))
        elif views and signal.delta == "w30 ":
            shown.append(next(iter(views[0].transcript.live.values())).html())

    branch.observe(StreamDelta, handler=on_delta)
    await branch.communicate("go")
    assert shown, "the view saw the reply stream"
    assert "w0 w1 w2" in shown[0] and "w19" in shown[0] and "lion-streaming" in shown[0]
    # once recorded, it is the same card as in a view that saw the whole reply
    assert views[0].rendered_html() == BranchView(branch).rendered_html()
    views[0].close()


async def test_a_run_started_elsewhere_shows_live_and_in_reading_order():
    branch = Branch(chat_model=scripted({"text": REPLY, "delay": 0.001}))
    view = BranchView(branch)
    await branch.communicate("asked in a cell")
    assert [k for k, _ in view.transcript.items] == [m.id for m in branch.messages]
    assert view.rendered_html() == BranchView(branch).rendered_html()


# ----- stop and errors ---------------------------------------------------------------------------
async def test_stop_during_communicate_records_what_the_view_showed():
    words = [f"part{i} " for i in range(200)]
    model = scripted({"chunks": words, "delay": 0.01}, "NEXT")
    branch = Branch(chat_model=model)
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
    assert "part199" not in view.rendered_html()
    assert not view.running and not view.send_button.disabled and view.stop_button.disabled
    # the view records the instruction and the partial reply: the branch holds what it shows
    assert [m.role for m in branch.messages] == ["user", "assistant"]
    ins, reply = branch.messages
    assert ins.text == "long one"
    assert reply.metadata["stopped"] is True and "part3" in reply.response
    assert "part199" not in reply.response
    assert view.rendered_html() == BranchView(branch).rendered_html()
    assert "lion-stopped" in view.rendered_html() and not view.transcript.live
    # the next turn sends them
    await view.asend("go on")
    sent = model.provider.requests[-1].messages
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert "part3" in str(sent[1]["content"]) and "long one" in str(sent[0]["content"])


async def test_communicate_cancelled_from_code_still_records_nothing():
    branch = Branch(chat_model=scripted({"chunks": ["x "] * 200, "delay": 0.01}))
    BranchView(branch)  # a view watching does not record a run it did not start
    task = asyncio.get_running_loop().create_task(branch.communicate("from code"))
    await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(branch.messages) == 0


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
    assert len(branch._observers._handlers) == 1  # the view's own is gone; the turn's remains
    with pytest.raises(asyncio.CancelledError):
        await task
    assert branch._observers._handlers == []  # ... until the cancelled turn has ended
    await branch.communicate("after close")  # nothing reaches the closed view
    assert view.transcript.items == []


async def test_views_stay_attached_when_the_user_removes_their_observers():
    """Views hold their subscriptions (``Branch.subscribe``): ``unobserve_all()`` removes
    only what was added with ``observe``."""
    branch = Branch(chat_model=scripted("kept"))
    seen: list = []
    branch.observe(handler=seen.append)
    view = BranchView(branch)
    branch.unobserve_all()
    await branch.communicate("still shown")
    assert seen == [] and [k for k, _ in view.transcript.items] == list(branch.progression)
    assert "kept" in view.rendered_html()
    view.close()


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


async def test_a_run_that_ends_outside_any_cell_never_redraws_the_view_on_a_timer(outputs):
    """A Send click (or ``%%lion`` without ``--wait``): the run ends when no cell executes, and
    the user may be typing in the view. No update is sent then (JupyterLab would draw the view
    anew: focus and draft lost); the saved output is refreshed at the end of the next cell the
    user runs, or when focus leaves the view (the page's ``leave`` action)."""
    branch = Branch(chat_model=scripted({"text": "LATE-REPLY", "delay": 0.05}, "NEXT-REPLY"))
    view = BranchView(branch)
    view.refresh_delay = 0.05  # ignored by the front-end views
    outputs.show(view)
    with outputs.cell():
        view.send("go")  # returns at once; the cell ends while the reply streams
    await view.wait()
    await asyncio.sleep(0.3)
    assert outputs.updates == 0
    view._on_page(view, {"action": "leave"}, [])
    assert outputs.updates == 1 and "LATE-REPLY" in outputs.of(view)["text/plain"]
    view._on_page(view, {"action": "send", "text": "again"}, [])  # Enter in the page
    await view.wait()
    await asyncio.sleep(0.1)
    assert outputs.updates == 1
    with outputs.cell():
        pass  # the next cell the user runs
    assert outputs.updates == 2 and "NEXT-REPLY" in outputs.of(view)["text/plain"]
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
    # the stopped turn is recorded as the first view showed it, then the second turn
    assert [m.role for m in branch.messages] == ["user", "assistant", "user", "assistant"]
    assert branch.messages[1].metadata["stopped"] is True
    assert branch.messages[2].text == "two"


# ----- the context window --------------------------------------------------------------------------
def long_branch(model: iModel, turns: int = 6, words: int = 200) -> Branch:
    branch = Branch(system="S", chat_model=model)
    for n in range(turns):
        branch.add_message(Instruction(instruction=f"question {n}"))
        branch.add_message(AssistantResponse(response=" ".join(["word"] * words)))
    return branch


async def test_send_from_the_view_is_cut_to_the_window_with_a_notice_and_a_gauge():
    model = scripted("short", context_window=1200, max_tokens=200)
    branch = long_branch(model)
    view = BranchView(branch)
    await asyncio.sleep(0)
    gauge = view.ctx
    assert gauge["w"] == 1200 and gauge["t"] > 0 and gauge.get("next") is True
    assert "cut" not in gauge  # nothing was sent yet
    await view.asend("next?")
    await asyncio.sleep(0)
    sent = model.provider.requests[-1].messages
    assert sent[0]["content"] == "S" and sent[-1]["content"] == "next?"
    assert len(sent) < len(branch.messages) - 1  # older turns left out of the request
    assert len(branch.messages) == 15  # ... but kept by the branch
    first_sent = next(m for m in branch.messages if m.text == sent[1]["content"])
    assert view.ctx["cut"] == str(first_sent.id)
    assert view.ctx["n"] == branch.messages.progression.index(first_sent.id) - 1
    assert view.ctx["t"] <= 1200


async def test_no_gauge_or_notice_when_the_window_is_unknown():
    view = BranchView(long_branch(scripted("x")))
    await view.asend("q")
    await asyncio.sleep(0)
    assert view.ctx == {}


async def test_a_send_and_its_run_start_share_one_message_and_so_do_its_end_and_last_reply():
    branch = Branch(chat_model=scripted({"chunks": ["a ", "b ", "c."], "delay": 0.05}))
    view = BranchView(branch)
    sent: list[dict] = []
    view.channel._send = sent.append
    view.send("go")
    await view.wait()
    await asyncio.sleep(0.05)
    kinds = [[op["op"] for op in m["ops"]] for m in sent]
    assert kinds[0] == ["put", "chrome"], kinds  # the prompt card with Send/Stop and status
    assert sent[0]["ops"][1]["values"]["busy"] is True
    assert "running" in sent[0]["ops"][1]["values"]["status_line"]  # the run's start, merged
    assert kinds[-1] == ["put", "seal", "chrome"], kinds  # the run's end with its last reply
    assert sent[-1]["ops"][2]["values"]["busy"] is False
    assert [m["seq"] for m in sent] == list(range(1, len(sent) + 1))


async def test_a_retracted_message_leaves_the_chat_view():
    branch = Branch(system="s", chat_model=scripted("first", "second"))
    view = BranchView(branch)
    await view.asend("one")
    await view.asend("two")
    gone = branch.messages[3]  # the second instruction
    assert message_html(gone) in view.rendered_html()
    branch.retract_message(gone.id, reason="the worker running it died")
    assert message_html(gone) not in view.rendered_html()
    assert view.rendered_html() == "".join(message_html(m) for m in branch.messages)
    assert view.rendered_html() == BranchView(branch).rendered_html()


def test_a_new_view_warms_the_code_highlighter_in_a_thread():
    # the first code block of the first reply must not wait for pygments to load its lexer
    from lion_nb.render import markdown
    from lion_nb.widgets import front

    markdown._lexer.cache_clear()
    markdown.warm_up.cache_clear()
    front._warm_up_soon.cache_clear()
    BranchView(Branch())
    front._warm_up_soon().join(timeout=30)
    assert markdown._lexer.cache_info().currsize == 1


# ----- the first Send does not wait for imports -----------------------------------------------
FIRST_SEND = """
import sys, threading
import lion_nb
from lion_nb import Branch, iModel
view = lion_nb.view(Branch(chat_model=iModel(provider="scripted", replies=["x"])), verb=VERB)
for thread in threading.enumerate():
    if thread.name.startswith("lion_nb-warm-up"):
        thread.join(timeout=60)
print(" ".join(sorted(m for m in sys.modules if m.startswith("lion_nb."))))
"""


@pytest.mark.parametrize(
    ("verb", "module"),
    [("communicate", "lion_nb.operations.communicate"), ("ReAct", "lion_nb.operations.react")],
)
def test_a_new_view_imports_what_its_first_send_needs_before_it_is_sent(verb, module):
    # B10 measured the first Send's first text ~40 ms later than the next ones' on a busy
    # machine: the verb's modules, the run lifecycle and the provider's module were imported
    # on Enter. A view imports them in a thread while the reader types.
    code = FIRST_SEND.replace("VERB", repr(verb))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    loaded = set(out.stdout.split())
    wanted = {
        module,
        "lion_nb.port.lifecycle",
        "lion_nb.port.branch_port",
        "lion_nb.models.scripted",
    }
    assert wanted <= loaded, wanted - loaded
