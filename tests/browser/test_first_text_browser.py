"""Enter -> the reply's first text on screen, the chat view against marimo's own chat
(``mo.ui.chat``) in the same marimo page and kernel, on the same scripted stream (~50 and
~1,000 tok/s: a word every 20 ms or every 1 ms, the first after that wait), the two taking
turns so that both see the same load.

Measured in the page (``tests/support/page_measure.py`` ``arm_enter``): from the Enter keydown (the
page's first sight of it) to the first animation frame that shows a non-space character of
the new reply. Each round sends once to each chat at each rate; the figures (medians) go to
the file the browser benchmark (B10) reads, as ``marimo | chat from Enter | <rate>`` and
``marimo | mo.ui.chat from Enter | <rate>``. The bound asserted is loose (the machine is
shared); the goal (<= 100 ms, ahead of ``mo.ui.chat``) is the benchmark's.
"""

from __future__ import annotations

import statistics
from typing import Any

import pytest

from tests.support.front_ends import screenshot
from tests.support.live_views import MARIMO_APP
from tests.support.page_measure import arm_enter, enter_ms, record

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]

ROUNDS = 5
RATES = {"50 tok/s": ("slow", 40, 0.02), "1000 tok/s": ("fast", 400, 0.001)}
FIRST_SOON_MS = 1500  # loose: the goal (<= 100 ms) is the benchmark's

BOTH = f"""
import asyncio
import marimo as mo
import lion_nb
from lion_nb import Branch, iModel
RATES = {RATES!r}
def stream_for(prompt):
    word, n, delay = next(r for r in RATES.values() if r[0] in prompt)
    return [f"{{word}}{{i}} " for i in range(n)], delay
def reply(request):
    chunks, delay = stream_for(request.messages[-1]["content"])
    return {{"chunks": chunks, "delay": delay}}
branch = Branch(system="You stream.", chat_model=iModel(provider="scripted", default_reply=reply))
async def marimo_model(messages, config):
    chunks, delay = stream_for(messages[-1].content)
    for chunk in chunks:  # as the scripted model: each word after its wait
        await asyncio.sleep(delay)
        yield chunk
lion_view = mo.ui.anywidget(lion_nb.view(branch, title="lion_nb", height=260))
marimo_chat = mo.ui.chat(marimo_model)
mo.vstack([lion_view, marimo_chat])
"""


def notebook() -> str:
    body = "\n".join(f"    {line}" if line.strip() else "" for line in BOTH.splitlines())
    return MARIMO_APP.replace("BODY", body)


def send_lion(page: Any, view: Any, text: str, last: str) -> float:
    send = view.locator("button.lion-send")
    page.wait_for_function("(b) => !b.disabled", arg=send.element_handle(), timeout=60_000)
    prompt = view.locator("textarea.lion-prompt")
    prompt.fill(text)
    arm_enter(page, view, ".lion-assistant .lion-body")
    prompt.press("Enter")
    took = enter_ms(page)
    page.wait_for_function("(b) => !b.disabled", arg=send.element_handle(), timeout=60_000)
    assert last in view.locator(".lion-assistant .lion-body").last.inner_text()
    return took


def send_marimo(page: Any, chat: Any, text: str, last: str) -> float:
    box = chat.locator("[contenteditable=true]")
    ended = chat.locator(f".items-start:has-text('{last}')")
    before = ended.count()
    box.click()
    page.keyboard.type(text)
    arm_enter(page, chat, ".items-start .mo-markdown-renderer")
    page.keyboard.press("Enter")
    took = enter_ms(page)
    for _ in range(600):  # the reply ended (its last word shows)
        if ended.count() > before:
            break
        page.wait_for_timeout(100)
    page.wait_for_timeout(300)  # its stream's end reaches the page
    return took


def test_first_text_from_enter_against_marimo_chat(front_page, marimo_root, marimo):
    page = front_page
    (marimo_root / "first_text.py").write_text(notebook())
    page.goto(marimo.url("?file=first_text.py"))
    view = page.locator(".lion-view.lion-chat").first
    view.locator("textarea.lion-prompt").wait_for(timeout=120_000)
    chat = page.locator("marimo-chatbot").first
    chat.locator("[contenteditable=true]").wait_for(timeout=60_000)
    taken: dict[str, list[float]] = {}
    for k in range(ROUNDS):
        for rate, (word, n, _delay) in RATES.items():
            last = f"{word}{n - 1}"
            # the two take turns; which goes first alternates from round to round
            order = [("chat", send_lion, view), ("mo.ui.chat", send_marimo, chat)]
            for system, send, root in order if k % 2 == 0 else order[::-1]:
                took = send(page, root, f"{word} question {k}", last)
                taken.setdefault(f"marimo | {system} from Enter | {rate}", []).append(took)
    screenshot(page, "first_text_against_marimo_chat")
    for name, samples in taken.items():
        median = statistics.median(samples)
        print(f"{name}: median {median} ms of {samples}")
        # the first send at this rate too (at 50 tok/s: the page's first, its kernel's first)
        record(name, {"enter_ms": median, "enter_first_ms": samples[0], "enter_samples": samples})
        assert median <= FIRST_SOON_MS, (name, samples)
    assert page.watched.dialogs == []
