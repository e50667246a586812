"""ParseView, LiveParse and the parse tree: results, per-field errors, attempts, live JSON."""

from __future__ import annotations

import json
import re

import pytest
from pydantic import BaseModel, ValidationError

from lion_nb import Branch, iModel
from lion_nb.errors import ParseError
from lion_nb.render.parse_tree import attempts_html, errors_html
from lion_nb.widgets.parse_view import ParseView
from tests.support.orders import ORDER, Order, rows_by_path
from tests.support.page_model import Page
from tests.support.recording_comm import page_state

# ----- the tree ------------------------------------------------------------------------------


def tree(view: ParseView) -> str:
    """The tree's rows as a page is given them (nested parts of part "tree")."""
    return "".join(p[1] for p in view.state_parts() if p[2:] == ["tree"])


def test_validation_errors_per_field() -> None:
    bad = {**ORDER, "customer": "A much too long name", "items": [{"name": "tea", "price": -1}]}
    with pytest.raises(ValidationError) as info:
        Order.model_validate(bad)
    view = ParseView(Order.model_validate(ORDER), errors=info.value)
    assert view.status == "invalid"
    assert {tuple(e["loc"]) for e in view.errors} == {("customer",), ("items", 0, "price")}
    html = errors_html(view.errors)
    assert "customer" in html and "items.[0].price" in html and "greater than 0" in html
    # a ParseError caused by a ValidationError works the same
    err = ParseError("could not parse", target=Order, raw="{}")
    err.__cause__ = info.value
    assert ParseView(bad, errors=err).errors == view.errors
    view.set_result(bad, errors=info.value)
    by = rows_by_path(view.rows())
    assert by[("customer",)].status == "invalid" and by[("customer",)].errors
    assert by[("items", 0, "price")].errors == ["Input should be greater than 0"]
    assert "lion-parse-invalid" in tree(view)


# ----- live ----------------------------------------------------------------------------------


async def test_the_view_follows_a_streaming_reply_on_the_branch() -> None:
    chunks = [json.dumps(ORDER)[i : i + 5] for i in range(0, len(json.dumps(ORDER)), 5)]
    branch = Branch(chat_model=iModel(provider="scripted", replies=[{"chunks": chunks}]))
    view = ParseView(Order, branch=branch, refresh_interval=0)
    trees = []
    send = view.channel._send
    view.channel._send = lambda msg: (
        trees.extend(op["html"] for op in msg["ops"] if re.fullmatch(r"t\d+", op.get("key", ""))),
        send(msg),
    )
    result = await branch.communicate("order", response_format=Order)
    assert result == Order.model_validate(ORDER)
    assert view.result == result and view.status == "valid"
    assert any("not received yet" in t for t in trees)  # it filled in progressively
    assert any("lion-parse-partial" in t for t in trees)
    assert [(a["attempt"], a["ok"]) for a in view.attempts] == [(0, True)]
    assert "Attempt 0" in view._shown["attempts"] and "local extraction" in view._shown["attempts"]
    assert "ring twice" in tree(view) and "not received yet" not in tree(view)
    view.close()


async def test_repair_rounds_show_and_the_view_follows_the_repaired_reply() -> None:
    bad = json.dumps({**ORDER, "customer": "A much too long name"})
    branch = Branch(chat_model=iModel(provider="scripted", replies=[bad, json.dumps(ORDER)]))
    view = ParseView(Order, branch=branch, refresh_interval=0)
    result = await branch.communicate("order", response_format=Order)
    assert result == Order.model_validate(ORDER)
    assert [(a["attempt"], a["ok"]) for a in view.attempts] == [(0, False), (1, True)]
    assert view.attempts[0]["errors"][0]["loc"] == ["customer"]
    html = view._shown["attempts"]
    assert "repair turn 1" in html and "1 error" in html and "at most 10 characters" in html
    assert view.status == "valid" and view.result == result
    view.close()


def test_static_representations() -> None:
    view = ParseView(Order.model_validate(ORDER))
    bundle = view._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "lion-parse-tree" in bundle["text/html"] and "ring twice" in bundle["text/html"]
    text = bundle["text/plain"]
    assert (
        text.startswith("Order: valid") and "  [0]: Item" in text and "price: float = 2.5" in text
    )
    assert "VBox(" not in text
    attempts = attempts_html(
        [{"attempt": 0, "ok": False, "raw": "<x>", "errors": [], "target": "Order"}]
    )
    assert "&lt;x&gt;" in attempts and "<x>" not in attempts
    with pytest.raises(TypeError):
        view.feed("{}")
    view.close()


# ----- errors for a model type; following one parse; the saved output -------------------------
BAD = {**ORDER, "customer": "A much too long name", "items": [{"name": "tea", "price": -1}]}


async def test_a_model_type_with_errors_is_a_failed_parse_shown_per_field() -> None:
    with pytest.raises(ValidationError) as info:
        Order.model_validate(BAD)
    view = ParseView(Order, errors=info.value)
    assert not view.live and view.status == "invalid"
    assert {tuple(e["loc"]) for e in view.current_errors()} == {
        ("customer",),
        ("items", 0, "price"),
    }
    by = rows_by_path(view.rows())
    assert by[("customer",)].status == "invalid"
    assert by[("customer",)].errors == ["String should have at most 10 characters"]
    assert by[("note",)].status == "" and not by[("note",)].errors
    assert "items.[0].price" in view._shown["errors"] and "greater than 0" in view._shown["errors"]
    assert "not received yet" not in tree(view)  # a finished parse: nothing to wait for
    bundle = view._repr_mimebundle_()
    assert bundle["text/plain"].startswith("Order: invalid")
    assert "error at customer: String should have at most 10" in bundle["text/plain"]
    assert "greater than 0" in bundle["text/html"]
    view.close()
    # the ParseError that branch.parse raises carries the ValidationError
    branch = Branch(chat_model=iModel(provider="scripted", replies=[]))
    with pytest.raises(ParseError) as raised:
        await branch.parse(json.dumps(BAD), Order, max_retries=0, handle_validation="raise")
    from_parse = ParseView(Order, errors=raised.value)
    assert from_parse.status == "invalid" and from_parse.errors == view.errors
    from_parse.close()
    with pytest.raises(ValueError, match="give one of them"):
        ParseView(Order, errors=info.value, branch=branch)


def _settled_state(view: ParseView) -> tuple:
    return (view.status, view.result, [(a["attempt"], a["ok"]) for a in view.attempts])


async def test_a_settled_view_ignores_later_replies_and_parses_on_the_branch() -> None:
    other = {"customer": "Zed", "items": []}
    branch = Branch(
        chat_model=iModel(provider="scripted", replies=[json.dumps(ORDER), json.dumps(other)])
    )
    view = ParseView(Order, branch=branch, refresh_interval=0)
    result = await branch.communicate("order", response_format=Order)
    assert _settled_state(view) == ("valid", result, [(0, True)])
    settled_html = view.static_html()
    await branch.parse(json.dumps(other), Order)  # an unrelated parse ...
    await branch.communicate("another", response_format=Order)  # ... and a later reply
    assert _settled_state(view) == ("valid", result, [(0, True)])
    assert view.static_html() == settled_html and "Zed" not in tree(view)
    assert view.settled
    view.close()


async def test_a_parse_that_gives_up_settles_the_view_at_its_last_attempt() -> None:
    """No run ends around ``branch.parse``: the attempt marked final settles the view."""
    branch = Branch(chat_model=iModel(provider="scripted", replies=[json.dumps(ORDER)]))
    view = ParseView(Order, branch=branch, refresh_interval=0)
    text = "Here: " + json.dumps(BAD)
    assert await branch.parse(text, Order, max_retries=0) == text  # return_value
    assert view.settled and view.status == "invalid" and view.result is None
    assert [(a["attempt"], a["ok"]) for a in view.attempts] == [(0, False)]
    assert {tuple(e["loc"]) for e in view.current_errors()} == {
        ("customer",),
        ("items", 0, "price"),
    }
    # the text never streamed here: the tree is read from the attempt's raw text
    assert rows_by_path(view.rows())[("note",)].value == "ring twice"
    await branch.communicate("order", response_format=Order)  # a later, valid reply
    assert view.status == "invalid" and view.result is None and len(view.attempts) == 1
    view.close()


async def test_a_parse_of_a_given_text_shows_its_result() -> None:
    branch = Branch()
    view = ParseView(Order, branch=branch, refresh_interval=0)
    # keys in another case: parse fuzzy-matches them, and so does the view
    text = "Sure! " + json.dumps({"Customer": "Alice", "ITEMS": ORDER["items"]})
    result = await branch.parse(text, Order)
    assert result.customer == "Alice"
    assert view.settled and view.status == "valid" and view.result == result
    assert "Alice" in tree(view) and not view.current_errors()
    view.close()


async def test_attempts_of_a_parse_under_way_when_the_view_was_made_are_ignored() -> None:
    from lion_nb.signals import ParseAttempt

    fixed = json.dumps(ORDER)
    branch = Branch(chat_model=iModel(provider="scripted", replies=["still not json", fixed]))
    views: list[ParseView] = []

    def make_view(signal: ParseAttempt) -> None:
        if signal.attempt == 0 and not views:  # a view made while this parse runs
            views.append(ParseView(Order, branch=branch, refresh_interval=0))

    branch.observe(ParseAttempt, handler=make_view)
    seen: list[ParseAttempt] = []
    branch.observe(ParseAttempt, handler=seen.append)
    await branch.parse("no json here", Order, max_retries=2)
    assert [(a.attempt, a.ok, a.final) for a in seen] == [
        (0, False, False),
        (1, False, False),
        (2, True, True),
    ]
    (view,) = views
    assert view.attempts == [] and not view.settled  # not its parse
    second = json.dumps({**ORDER, "customer": "Bob"})
    result = await branch.parse(second, Order)  # the first parse started after it
    assert view.settled and view.result == result
    assert [(a["attempt"], a["ok"]) for a in view.attempts] == [(0, True)]
    view.close()


async def test_the_saved_output_is_refreshed_when_a_parse_settles(outputs) -> None:
    """A notebook saved after ``branch.parse`` holds the parsed result, not the view as it was
    when its cell ran (parse emits no RunEnd)."""
    fixer = iModel(provider="scripted", replies=[json.dumps(ORDER)])
    branch = Branch(parse_model=fixer)
    view = ParseView(Order, branch=branch, refresh_interval=0)
    outputs.show(view)
    assert outputs.of(view)["text/plain"].startswith("Order: waiting")
    with outputs.cell():
        await branch.parse(json.dumps(BAD), Order, max_retries=1)
    saved = outputs.of(view)
    assert saved["text/plain"].startswith("Order: valid"), saved["text/plain"][:80]
    assert "ring twice" in saved["text/html"] and "repair turn 1" in saved["text/html"]
    assert "application/vnd.jupyter.widget-view+json" in saved
    failing = ParseView(Order, branch=Branch(), refresh_interval=0)
    outputs.show(failing)
    with outputs.cell():
        await failing.branch.parse(json.dumps(BAD), Order, max_retries=0)
    assert outputs.of(failing)["text/plain"].startswith("Order: invalid")
    assert "greater than 0" in outputs.of(failing)["text/html"]
    view.close()
    failing.close()


# ----- what a page is sent -------------------------------------------------------------------
def test_a_page_drawing_a_finished_result_gets_its_parts(comms) -> None:
    """ParseView(result) was an empty box in JupyterLab: its state was set after its comm
    opened, without an update message, and its ops went out before any page drew it."""
    view = ParseView(Order.model_validate(ORDER))
    (comm,) = [c for c in comms if c.opened["state"].get("kind") == "parse"]
    state = page_state(comm)
    assert state["parts"] == view.state_parts() != []
    assert "Alice" in "".join(p[1] for p in state["parts"] if p[2:] == ["tree"])  # its rows
    view.close()


class Line(BaseModel):
    name: str
    price: float


class Order2(BaseModel):
    customer: str
    items: list[Line]


async def test_a_long_reply_streams_in_bytes_linear_in_the_tree() -> None:
    """200 items streamed 6 characters at a time: each row is its own part, sent when it
    changes (live, then validated), never the whole table per update (that was ~16x)."""
    data = {"customer": "Ada", "items": [{"name": f"item-{i}", "price": i} for i in range(200)]}
    text = json.dumps(data)
    chunks = [text[i : i + 6] for i in range(0, len(text), 6)]
    replies = [{"chunks": chunks, "delay": 0.001}]
    branch = Branch(chat_model=iModel(provider="scripted", replies=replies))
    view = ParseView(Order2, branch=branch)
    sizes: list[int] = []
    send = view.channel._send

    def record(msg) -> None:
        sizes.append(len(json.dumps(msg, separators=(",", ":"))))
        send(msg)

    view.channel._send = record
    await branch.communicate("Order", response_format=Order2)
    view.channel.flush()
    final = len(view.static_html())
    assert len(sizes) >= 10, "it did not stream in many updates"
    assert sum(sizes) <= 2.5 * final, (sum(sizes), final)
    assert "item-199" in tree(view)
    view.close()


async def test_a_page_following_the_ops_shows_what_the_state_holds() -> None:
    chunks = [json.dumps(ORDER)[i : i + 5] for i in range(0, len(json.dumps(ORDER)), 5)]
    replies = [{"chunks": chunks, "delay": 0.002}]
    branch = Branch(chat_model=iModel(provider="scripted", replies=replies))
    view = ParseView(Order, branch=branch, refresh_interval=1 / 30)
    page = Page(view.state_parts(), view.channel.seq)
    send = view.channel._send
    view.channel._send = lambda msg: (page.receive(msg), send(msg))
    await branch.communicate("order", response_format=Order)
    view.channel.flush()
    view.sync_state()
    assert page.resyncs == 0 and page.updates >= 2
    assert page.html() == Page(view.state_parts()).html()
    assert "ring twice" in page.html() and "not received yet" not in page.html()
    view.close()


async def test_the_view_is_busy_while_a_reply_streams_and_not_in_its_settling_update() -> None:
    """The page reveals an update's values over the frames until the next while the view is
    busy; the update that settles the parse says it is not (busy false), in the same message,
    so the page shows that update's rows at once, exact."""
    chunks = [json.dumps(ORDER)[i : i + 5] for i in range(0, len(json.dumps(ORDER)), 5)]
    branch = Branch(chat_model=iModel(provider="scripted", replies=[{"chunks": chunks}]))
    view = ParseView(Order, branch=branch, refresh_interval=0)
    messages: list[dict] = []
    send = view.channel._send
    view.channel._send = lambda msg: (messages.append(msg), send(msg))
    assert not view.busy
    await branch.communicate("order", response_format=Order)
    busy = [
        (n, op["values"]["busy"])
        for n, msg in enumerate(messages)
        for op in msg["ops"]
        if op["op"] == "chrome" and "busy" in op["values"]
    ]
    assert [b for _, b in busy] == [True, False], busy
    assert busy[0][0] < busy[1][0] == len(messages) - 1  # the settling update is the last
    last = messages[-1]["ops"]
    assert any(op.get("key") == "header" and "valid" in op["html"] for op in last)
    assert not view.busy and view.settled
    view.close()
