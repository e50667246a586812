"""widgets.shown_branch: what the chat view says about the alternative it shows."""

from __future__ import annotations

from lion_nb import Session, iModel
from lion_nb.session.conversation import Conversation
from lion_nb.widgets.shown_branch import greedy, same_reply_note, sampling, shown_words


def test_greedy_is_temperature_0_from_the_verb_options_or_else_the_model() -> None:
    branch = Session().new_branch(chat_model=iModel(provider="scripted", temperature=0))
    assert greedy({}, branch)
    assert not greedy({"temperature": 0.7}, branch)  # the view's own options win
    other = Session().new_branch(chat_model=iModel(provider="scripted"))
    assert not greedy({}, other) and greedy({"temperature": 0}, other)
    assert not greedy({"temperature": False}, other)


async def test_the_words_count_as_the_switcher_and_say_why_a_reply_is_the_same() -> None:
    model = iModel(provider="scripted", replies=["SAME", "SAME"], temperature=0)
    conv = Conversation(Session().new_branch(system="S", chat_model=model))
    assert shown_words(conv, "demo", None) == ("demo", None)  # nothing to switch between
    await conv.asend("hello")
    fork = await conv.aregenerate()
    title, line = shown_words(conv, "demo", ("done", "done in 0.1 s"))
    assert title == "demo · Alternative 2 of 2" and line is not None
    assert line.startswith('<div class="lion-view-status lion-view-done" title="view.branch:')
    assert "done in 0.1 s · Alternative 2 of 2 · <code>view.branch</code> now points" in line
    assert str(fork.id)[:8] not in line.split(">", 1)[1]
    assert same_reply_note(conv, True).startswith("the same reply as alternative 1: at temp")
    assert same_reply_note(conv, False) == "the same words as alternative 1"
    assert sampling(fork) == ""
    fork.metadata["sample"] = {"n": 2, "of": 5, "temperature": 0.8, "top_p": None}
    assert sampling(fork) == "sample 2/5 · temperature 0.8"
