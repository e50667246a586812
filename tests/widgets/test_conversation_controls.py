"""The chat view's conversation controls: regenerate, edit, switch, clear, from Python and
from the page's ``{"action", "key"}`` messages; the view follows the branch it shows."""

from __future__ import annotations

import asyncio

from lion_nb import BranchView, Session, iModel


def view_on(*replies: object) -> BranchView:
    session = Session()
    branch = session.new_branch(
        system="S", chat_model=iModel(provider="scripted", replies=list(replies))
    )
    return BranchView(branch)


async def test_regenerate_shows_a_fork_and_the_switcher_goes_back() -> None:
    view = view_on("FIRST", {"chunks": ["SEC", "OND"], "delay": 0.01})
    first = view.branch
    await view.asend("hello")
    fork = await view.aregenerate()
    assert view.branch is fork and fork is not first
    assert "SECOND" in view.rendered_html() and "FIRST" not in view.rendered_html()
    reply = fork.messages[-1]
    await asyncio.sleep(0)
    assert view.alt_marks[str(reply.id)] == [2, 2]
    view._on_page(view, {"action": "switch", "key": str(reply.id), "step": -1}, [])
    assert view.branch is first and "FIRST" in view.rendered_html()
    assert [[k, h] for k, h in view.parts] == view.transcript.state()
    view.close()


async def test_edit_from_the_page_and_clear() -> None:
    view = view_on("ONE", "TWO")
    await view.asend("original")
    user = view.branch.messages[1]
    view._on_page(view, {"action": "edit", "key": str(user.id), "text": "edited"}, [])
    for _ in range(100):
        await asyncio.sleep(0.01)
        if "TWO" in view.rendered_html() and not view.running:
            break
    assert "edited" in view.rendered_html() and "original" not in view.rendered_html()
    shown = view.branch
    view._on_page(view, {"action": "clear"}, [])
    assert view.branch is not shown and len(view.branch.messages) == 1  # the system message
    await asyncio.sleep(0)
    assert "cleared" in view.status_line and "done" not in view.status_line
    view.close()


async def test_stop_reaches_a_regenerate_while_it_streams() -> None:
    view = view_on("FIRST", {"chunks": ["x "] * 300, "delay": 0.01})
    await view.asend("hello")
    task = asyncio.get_running_loop().create_task(view.aregenerate())
    await asyncio.sleep(0.2)
    assert view.running
    view._on_page(view, {"action": "stop"}, [])
    try:
        await task
    except asyncio.CancelledError:
        pass
    assert not view.running and "lion-stopped" in view.rendered_html()
    view.close()


async def test_compare_opens_on_the_previous_alternative_under_the_view() -> None:
    view = view_on("FIRST", "SECOND", "THIRD")
    first = view.branch
    await view.asend("hello")
    reply_index = len(first.messages) - 1
    fork = await view.aregenerate()
    reply = fork.messages[-1]
    view._on_page(view, {"action": "compare", "key": str(reply.id)}, [])
    await asyncio.sleep(0)
    compare = view.compare_view
    assert compare is not None
    assert compare.branch_a is first and compare.branch_b is fork  # previous, then shown
    assert "FIRST" in view.compare_html and "SECOND" in view.compare_html
    # it follows both branches: a turn on the shown one reaches the page's panel
    await view.asend("more")
    compare.channel.flush()
    await asyncio.sleep(0)
    assert "THIRD" in view.compare_html
    view._on_page(view, {"action": "compare_close"}, [])
    await asyncio.sleep(0)
    assert view.compare_html == "" and view.compare_view is None and compare.closed
    # from code: the last turn with alternatives by default; none: it says so
    assert view.compare().branch_a is first
    view.close_compare()
    assert view.conversation.previous_alternative(reply_index) is first
    alone = view_on("x")
    await alone.asend("q")
    try:
        alone.compare()
    except ValueError as exc:
        assert "no alternative" in str(exc)
    else:
        raise AssertionError("compare without alternatives")
    view.close()
    alone.close()


async def test_a_truncated_reply_is_marked_before_any_turn_from_the_view() -> None:
    from lion_nb.messages import AssistantResponse, Instruction

    view = view_on("THE-REST")
    view.branch.add_message(Instruction(instruction="Tell a story"))
    cut = AssistantResponse(response="Once upon a", metadata={"finish_reason": "length"})
    view.branch.add_message(cut)  # recorded after the view was made, outside any run
    await asyncio.sleep(0)
    assert view.cut_marks == [str(cut.id)]
    attached = BranchView(view.branch)  # a view made on a branch that holds one
    await asyncio.sleep(0)
    assert attached.cut_marks == [str(cut.id)]
    view._on_page(view, {"action": "continue", "key": str(cut.id)}, [])
    for _ in range(100):
        await asyncio.sleep(0.01)
        if "THE-REST" in view.rendered_html() and not view.running:
            break
    assert view.branch.messages[-1].text == "THE-REST"
    view.close()
    attached.close()


async def test_clear_while_a_reply_streams_stops_it_then_clears_and_says_so() -> None:
    view = view_on("FIRST", {"chunks": ["tok "] * 400, "delay": 0.01})
    await view.asend("hello")
    first = view.branch
    view.send("a long one")
    for _ in range(200):  # until the reply streams
        await asyncio.sleep(0.01)
        if view.transcript.live:
            break
    assert view.running
    view._on_page(view, {"action": "clear"}, [])
    assert "then clearing" in view.chrome_value("status_line")
    for _ in range(500):  # a busy machine: bounds, not timings
        await asyncio.sleep(0.01)
        if view.branch is not first and not view.running:
            break
    await asyncio.sleep(0.05)
    assert view.branch is not first and not view.running
    assert "stopped the reply, then cleared" in view.status_line
    assert "tok tok" not in view.rendered_html()  # the fresh branch: nothing of the old turn
    view.close()


# ----- words for people: which alternative, counted as the switcher counts ---------------------
async def test_after_regenerate_and_edit_the_title_counts_as_the_switcher_does() -> None:
    view = view_on("FIRST", "SECOND", "EDITED")
    await view.asend("original")
    await view.aregenerate()  # three branches in all after the edit below
    user = view.branch.messages[1]
    await view.aedit(1, "edited")
    await asyncio.sleep(0)
    edited = view.branch.messages[1]
    assert len(view.conversation.branches) == 3
    assert view.alt_marks[str(edited.id)] == [2, 2] and user.id != edited.id
    assert view.title == "Alternative 2 of 2"  # not "alternative 3 of 3"
    status = view.chrome_value("status_line")
    assert "Alternative 2 of 2 · <code>view.branch</code> now points to it" in status
    assert str(view.branch.id)[:8] in status.split(">", 1)[0]  # the id: in the tooltip only
    assert str(view.branch.id)[:8] not in status.split(">", 1)[1]
    view.close()


async def test_a_cleared_view_keeps_its_name_without_a_count() -> None:
    session = Session()
    branch = session.new_branch(
        system="S", chat_model=iModel(provider="scripted", replies=["A", "B"]), name="demo"
    )
    view = BranchView(branch)
    await view.asend("hello")
    await view.aregenerate()
    assert view.title == "demo · Alternative 2 of 2"
    view.clear()
    assert view.title == "demo"  # nothing to switch between yet: no count
    view.close()


async def test_regenerate_at_temperature_0_says_why_the_reply_is_the_same_and_offers_another():
    model = iModel(provider="scripted", replies=["SAME", "SAME", "OTHER"], temperature=0)
    branch = Session().new_branch(system="S", chat_model=model)
    view = BranchView(branch)
    await view.asend("hello")
    await asyncio.sleep(0)
    assert view.sampling == {"t": 0, "warm": 0.8}  # the page offers a sampling temperature
    await view.aregenerate()
    await asyncio.sleep(0)
    status = view.chrome_value("status_line")
    assert "the same reply as alternative 1: at temperature 0" in status, status
    assert "Regenerate at temperature 0.8" in status
    # the page's "Regenerate at temperature 0.8": sampled, with a seed of its own
    reply = view.branch.messages[-1]
    view._on_page(view, {"action": "regenerate", "key": str(reply.id), "temperature": 0.8}, [])
    for _ in range(200):
        await asyncio.sleep(0.01)
        if "OTHER" in view.rendered_html() and not view.running:
            break
    options = model.provider.requests[-1].options
    assert options["temperature"] == 0.8 and options["seed"] == 2, options
    assert view.branch.metadata["regenerated"] == {"temperature": 0.8, "seed": 2}
    assert view.title == "Alternative 3 of 3 · temperature 0.8"
    assert "the same" not in view.chrome_value("status_line")
    # Compare names its columns as the switcher counts them, not by branch ids
    assert view.compare().titles == ("Alternative 2", "Alternative 3")
    view.close()


async def test_a_model_that_samples_is_offered_no_other_temperature() -> None:
    view = view_on("A")
    await view.asend("hello")
    await asyncio.sleep(0)
    assert view.sampling == {}
    view.close()


async def test_clear_during_a_reply_a_cell_started_clears_and_says_it_goes_on() -> None:
    words = {"chunks": ["x "] * 300, "delay": 0.01}
    view = view_on("FIRST", words, "AFTER")
    first = view.branch
    await view.asend("hello")
    cell = asyncio.ensure_future(first.communicate("from a cell"))  # not the view's to stop
    await asyncio.sleep(0.2)
    assert view.running and view.stop_button.disabled  # Stop: only its cell can
    view._on_page(view, {"action": "clear"}, [])
    await asyncio.sleep(0)
    assert view.branch is not first and len(view.branch.messages) == 1  # cleared at once
    assert "the reply a cell is running goes on" in view.chrome_value("status_line")
    assert not view.running and view.chrome_value("busy") is False  # Send works again
    await view.asend("next")
    assert [m.text for m in view.branch.messages] == ["S", "next", "AFTER"]
    cell.cancel()
    view.close()
