"""A Send that fails before anything is recorded (a paste too long for the model's window):
the view gives the text back to the prompt box and says what to do from the view."""

from __future__ import annotations

import asyncio

from lion_nb import Branch, BranchView, iModel
from lion_nb.errors import ContextWindowError
from lion_nb.widgets.send_failure import view_advice


async def _until(predicate, seconds: float = 10.0) -> None:
    for _ in range(int(seconds / 0.01)):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached")


async def test_a_paste_too_long_for_the_window_comes_back_to_the_prompt_box() -> None:
    model = iModel(provider="scripted", replies=["never"], context_window=900, max_tokens=100)
    branch = Branch(system="S", chat_model=model)
    view = BranchView(branch)
    pushed: list[dict] = []
    push = view.channel.push
    view.channel.push = lambda op: (pushed.append(op), push(op))[1]  # type: ignore[method-assign]
    paste = "word " * 4000
    view._on_page(view, {"action": "send", "text": paste}, [])  # the page's Enter
    await _until(lambda: not view.running and view.chrome_value("error_box"))
    assert len(branch.messages) == 1  # the system message only: nothing recorded
    assert {"op": "draft", "text": paste, "restore": True} in pushed
    assert view.prompt.value == paste
    box = view.chrome_value("error_box")
    assert "Too long for the model" in box and "back in the box" in box
    assert "max_tokens" not in box.split("title=")[0]  # the advice is the view's, not code's
    assert "Shorten it" in box
    view.close()


async def test_a_failed_send_from_code_does_not_fill_the_box() -> None:
    model = iModel(provider="scripted", replies=["never"], context_window=900, max_tokens=100)
    view = BranchView(Branch(system="S", chat_model=model))
    view.send("word " * 4000)  # view.send(text): the box never held it
    await _until(lambda: not view.running and view.chrome_value("error_box"))
    assert view.prompt.value == ""
    assert "back in the box" not in view.chrome_value("error_box")
    view.close()


def test_the_advice_for_a_conversation_that_still_does_not_fit_names_clear() -> None:
    error = ContextWindowError("still did not fit", window=2048, tokens=1900)
    heading, advice = view_advice(error, given_back=False) or ("", "")
    assert "conversation" in heading and "Clear" in advice and "max_tokens" not in advice
    assert view_advice(ValueError("x"), given_back=True) is None
