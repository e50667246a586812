"""viewbase: the static fallback every view saves beside its widget, and the live throttle."""

from __future__ import annotations

import asyncio

from lion_nb import Branch
from lion_nb.messages import Instruction
from lion_nb.render.html import css_style_tag
from lion_nb.widgets.chat_view import BranchView
from lion_nb.widgets.viewbase import Throttle


def test_the_bundle_holds_the_stylesheet_and_the_static_html() -> None:
    branch = Branch()
    branch.add_message(Instruction(instruction="saved"))
    view = BranchView(branch)
    bundle = view._repr_mimebundle_()
    assert bundle["text/html"] == css_style_tag() + view.static_html()
    assert bundle["text/plain"] == view.static_text() and "saved" in bundle["text/plain"]
    view.close()
    view.close()  # closing twice is harmless
    assert view.closed


def test_a_view_displayed_nowhere_has_nothing_to_refresh() -> None:
    view = BranchView(Branch())
    assert view.refresh_static() is False and view.flush_static() is False
    view.close()


async def test_the_throttle_runs_at_once_then_coalesces() -> None:
    calls: list[int] = []
    throttle = Throttle(lambda: calls.append(1), interval=0.05)
    throttle.request()
    throttle.request()
    throttle.request()
    assert calls == [1]
    for _ in range(500):  # the timer's call (late on a busy machine)
        if throttle.calls == 2:
            break
        await asyncio.sleep(0.01)
    assert calls == [1, 1] and throttle.calls == 2
    await asyncio.sleep(throttle.interval)  # an interval after it: sleep never returns early
    throttle.request()  # the interval has passed: at once
    assert throttle.calls == 3
    throttle.request()  # within the interval: a timer, cancelled before it fires
    throttle.cancel()
    await asyncio.sleep(0.1)
    assert throttle.calls == 3
