"""ReActRoundsView and RoundsModel: real ReAct runs on the scripted model, no kernel."""

from __future__ import annotations

import asyncio
import json

import pytest

from lion_nb import Branch, iModel
from lion_nb.render.rounds_html import round_html, rounds_html
from lion_nb.signals import RoundEnd, RoundStart, StreamDelta
from lion_nb.viewmodels.rounds import RoundsModel
from lion_nb.widgets.rounds_view import ReActRoundsView
from tests.support.page_model import Page


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def mul(a: int, b: int) -> int:
    """Multiply two numbers."""
    return a * b


def shout(text: str) -> str:
    """Return hostile output."""
    return "<img src=x onerror=alert(1)> " + text


def replies(delay: float = 0.0) -> list:
    usage = {"input_tokens": 100, "output_tokens": 20}
    return [
        {
            "json": {
                "analysis": "I need **two** results",
                "extension_needed": True,
                "action_requests": [
                    {"function": "add", "arguments": {"a": 1, "b": 2}},
                    {"function": "mul", "arguments": {"a": 3, "b": 4}},
                ],
            },
            "usage": usage,
            "delay": delay,
        },
        {
            "json": {"analysis": "Got 3 and 12", "extension_needed": False},
            "usage": {"input_tokens": 150, "output_tokens": 10},
            "delay": delay,
        },
        {
            "json": {"answer": "3 and 12"},
            "usage": {"input_tokens": 170, "output_tokens": 5},
            "delay": delay,
        },
    ]


def react_branch(delay: float = 0.0, extra: list | None = None) -> Branch:
    return Branch(
        system="Use tools.",
        name="calc",
        tools=[add, mul, shout],
        chat_model=iModel(provider="scripted", replies=replies(delay) + (extra or [])),
    )


async def test_a_live_react_run_is_grouped_into_rounds() -> None:
    branch = react_branch()
    view = ReActRoundsView(branch)
    answer = await branch.ReAct("compute 1+2 and 3*4", max_extensions=2)
    assert answer == "3 and 12"
    (group,) = view.model.runs
    assert group.operation == "ReAct" and group.status == "done" and group.duration_ms > 0
    assert group.usage == {"input_tokens": 420, "output_tokens": 35}
    first, second, final = view.rounds
    assert [r.number for r in view.rounds] == [1, 2, 3] and final.final
    assert all(r.status == "done" and r.duration_ms is not None for r in view.rounds)
    assert first.extension_needed is True and second.extension_needed is False
    assert first.usage == {"input_tokens": 100, "output_tokens": 20}
    (step,) = first.steps
    assert [p.request.function for p in step.actions] == ["add", "mul"]
    assert [p.response.output for p in step.actions] == [3, 12]
    assert second.action_count == 0 and len(second.instructions) == 1
    html = round_html(first)
    # parallel calls sit side by side in one row, each with its result
    parallel = html.split('<div class="lion-parallel">')[1]
    assert parallel.count('<div class="lion-action">') == 2
    assert "<strong>two</strong>" in html  # the analysis text, as Markdown
    assert "2 actions" in html and "100 in · 20 out" in html
    assert "Answer" in round_html(final) and "3 and 12" in round_html(final)
    view.close()


async def test_rounds_fill_in_as_they_happen() -> None:
    """At every round boundary the view already shows everything before it."""
    branch = react_branch()
    view = ReActRoundsView(branch)
    snapshots = []

    def snap(signal):  # subscribed after the view: it sees the view's state for this signal
        snapshots.append(
            (
                type(signal).__name__,
                signal.round,
                [(r.number, r.status, r.action_count) for r in view.rounds],
                len([p for p in view.state_parts() if len(p) == 2]) - 1,  # top-level parts
            )
        )

    branch.observe(RoundStart, RoundEnd, handler=snap)
    await branch.ReAct("compute", max_extensions=2)
    assert snapshots == [
        ("RoundStart", 1, [(1, "running", 0)], 2),
        ("RoundEnd", 1, [(1, "done", 2)], 2),
        ("RoundStart", 2, [(1, "done", 2), (2, "running", 0)], 3),
        ("RoundEnd", 2, [(1, "done", 2), (2, "done", 0)], 3),
        ("RoundStart", 3, [(1, "done", 2), (2, "done", 0), (3, "running", 0)], 4),
        ("RoundEnd", 3, [(1, "done", 2), (2, "done", 0), (3, "done", 0)], 4),
    ]
    view.close()


async def test_streamed_analysis_shows_while_the_round_runs_and_only_that_round_updates() -> None:
    branch = react_branch(delay=0.002)
    view = ReActRoundsView(branch, refresh_interval=0)
    ops_by_round: dict[str, list[dict]] = {}
    send = view.channel._send

    def record(msg) -> None:  # what the page is sent, by the round (box) each op addresses
        for op in msg["ops"]:
            box = op.get("parent") or str(op.get("key", "")).split(".")[0]
            ops_by_round.setdefault(box, []).append(op)
        send(msg)

    view.channel._send = record
    at_end_of_round_1: dict[str, int] = {}

    def round_ended(signal) -> None:
        if signal.round == 1:
            view.channel.flush()  # what round 1's end queued for the next turn of the loop
            at_end_of_round_1.update({k: len(v) for k, v in ops_by_round.items()})

    branch.observe(RoundEnd, handler=round_ended)
    await branch.ReAct("compute", max_extensions=2)
    first, second, third = (view._key(r) for r in view.rounds)
    ops = ops_by_round[first]
    kinds = [op["op"] for op in ops]
    # its box, then its pieces one by one; the analysis streamed into its own piece, then sealed
    assert kinds[0] == "put" and "data-parts" in ops[0]["html"]
    streamed = [op for op in ops if op["op"] in ("tail", "add")]
    assert any("two" in (op.get("html") or op.get("text") or "") for op in streamed)
    (sealed,) = [op for op in ops if op["op"] == "seal"]
    assert {op["key"] for op in streamed} == {sealed["key"]}
    assert any(op["op"] == "attrs" and "lion-round-done" in op["cls"] for op in ops)
    # no op re-sends the box (its status is an attrs op), nor the recorded analysis
    assert sum(op["op"] == "put" and op["key"] == first for op in ops) == 1
    assert all("I need" not in op.get("html", "") for op in ops if op["op"] == "put")
    # later rounds never touch round 1; they update their own
    assert len(ops_by_round[first]) == at_end_of_round_1[first]
    assert len(ops_by_round[second]) >= 2 and len(ops_by_round[third]) >= 2
    view.close()


async def test_a_long_analysis_streams_in_bytes_linear_in_its_text() -> None:
    """A 1,500-word analysis streamed a word at a time: the page is sent about twice the
    final HTML (re-sending the round per update was ~30x at 3,000 words)."""
    paragraphs = [" ".join(f"word{i}" for i in range(n, n + 50)) + "." for n in range(0, 1500, 50)]
    paragraphs[5::6] = ["```python\n" + "\n".join(f"x = {j}" for j in range(8)) + "\n```"] * 5
    words = "\n\n".join(paragraphs)
    branch = Branch(
        system="Use tools.",
        tools=[add],
        chat_model=iModel(
            provider="scripted",
            replies=[
                {"json": {"analysis": words, "extension_needed": False}, "delay": 0.001},
                {"json": {"answer": "done"}},
            ],
        ),
    )
    view = ReActRoundsView(branch)
    sizes: list[int] = []
    send = view.channel._send

    def record(msg) -> None:
        sizes.append(len(json.dumps(msg, separators=(",", ":"))))
        send(msg)

    view.channel._send = record
    await branch.ReAct("analyse", max_extensions=1)
    view.channel.flush()
    final = len(view.static_html())
    assert len(sizes) >= 10, "it did not stream in many updates"
    assert sum(sizes) <= 2.5 * final, (sum(sizes), final)  # ~2x; margin for a busy machine
    assert "word1449." in view.static_html()
    view.close()


async def test_a_view_attached_afterwards_rebuilds_the_same_rounds() -> None:
    branch = react_branch()
    live = ReActRoundsView(branch)
    await branch.ReAct("compute", max_extensions=2)
    rebuilt = RoundsModel.from_messages(branch.messages)

    def shape(rounds):
        return [
            (
                r.final,
                len(r.instructions),
                [
                    (
                        s.analysis.id if s.analysis else None,
                        [(p.request.id, p.response.id) for p in s.actions],
                    )
                    for s in r.steps
                ],
            )
            for r in rounds
        ]

    assert shape(rebuilt.runs[0].rounds) == shape(live.rounds)
    late = ReActRoundsView(branch)
    assert len(late.rounds) == 3 and "Round 1" in late.static_html()
    assert ReActRoundsView(branch, history=False).rounds == []
    live.close()
    late.close()


async def test_a_failing_round_and_run_are_shown_as_failed() -> None:
    branch = Branch(
        tools=[add],
        chat_model=iModel(
            provider="scripted",
            replies=[
                {"json": {"analysis": "try", "extension_needed": True}},
                RuntimeError("model went away"),
            ],
        ),
    )
    view = ReActRoundsView(branch)
    with pytest.raises(Exception, match="model went away"):
        await branch.ReAct("x", max_extensions=2)
    first, second = view.rounds
    assert first.status == "done"
    assert second.status == "failed" and "model went away" in second.error
    assert view.model.runs[0].status == "failed"
    assert "model went away" in round_html(second)
    view.close()


async def test_a_stopped_run_marks_the_open_round_stopped() -> None:
    slow = {"json": {"analysis": "thinking slowly " * 40, "extension_needed": False}, "delay": 0.01}
    branch = Branch(chat_model=iModel(provider="scripted", replies=[slow]))
    view = ReActRoundsView(branch)
    streaming = asyncio.Event()

    def check(_signal) -> None:  # runs after the view took the delta in
        if view.rounds and "slowly thinking" in view.static_html():
            streaming.set()

    branch.observe(StreamDelta, handler=check)
    task = asyncio.ensure_future(branch.ReAct("x"))
    await asyncio.wait_for(streaming.wait(), 10)
    live = next(iter(view.rounds[0].live.values()))
    assert live.text.startswith('{"analysis": "thinking slowly')
    assert live.display_text().startswith("thinking slowly thinking")  # the analysis, not JSON
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert view.rounds[0].status == "stopped"
    assert view.model.runs[0].status == "stopped"
    key = view._key(view.rounds[0])  # the round's box and the pieces in it, as a page gets them
    html = "".join(p[1] for p in view.state_parts() if p[0] == key or p[2:] == [key])
    assert "lion-stopped-msg" in html and "thinking slowly" in html  # the partial text stays
    assert "{&quot;analysis" not in html
    view.close()


async def test_tool_output_is_escaped_and_the_mimebundle_has_a_static_transcript() -> None:
    branch = Branch(
        tools=[shout],
        chat_model=iModel(
            provider="scripted",
            replies=[
                {
                    "json": {
                        "analysis": "<script>alert(2)</script>",
                        "extension_needed": False,
                        "action_requests": [{"function": "shout", "arguments": {"text": "hi"}}],
                    }
                },
                {"json": {"answer": "done"}},
            ],
        ),
    )
    view = ReActRoundsView(branch)
    await branch.ReAct("x")
    html = rounds_html(view.model)
    assert "<img" not in html and "<script" not in html and "onerror=alert(1)" in html
    bundle = view._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "lion-round" in bundle["text/html"] and "done" in bundle["text/html"]
    assert "Round 1 [done]" in bundle["text/plain"] and "-> shout" in bundle["text/plain"]
    assert "VBox(" not in bundle["text/plain"]
    view.close()


async def test_plain_runs_on_the_branch_are_not_rounds() -> None:
    branch = Branch(
        chat_model=iModel(
            provider="scripted",
            replies=[
                "just chatting",
                {"json": {"analysis": "thinking", "extension_needed": False}},
                {"json": {"answer": "42"}},
            ],
        )
    )
    view = ReActRoundsView(branch, history=False)
    await branch.communicate("hello")
    assert len(view.state_parts()) - 1 == 0 and "No ReAct rounds yet" in view.static_html()
    await branch.ReAct("question")
    assert [g.operation for g in view.model.runs] == ["communicate", "ReAct"]
    top = [p for p in view.state_parts() if len(p) == 2]
    assert len(top) - 1 == 3  # the ReAct run's head and its two rounds
    assert "communicate" not in view.static_text() and "just chatting" not in view.static_html()
    view.close()


def test_a_page_drawing_the_view_gets_its_parts(comms) -> None:
    """As ParseView: the state set after the comm opened reaches a page drawn later."""
    from tests.support.recording_comm import page_state

    view = ReActRoundsView(Branch(name="drawn later"), title="ROUNDS-TITLE-MARK")
    (comm,) = [c for c in comms if c.opened["state"].get("kind") == "rounds"]
    state = page_state(comm)
    assert state["parts"] == view.state_parts() != []
    assert "ROUNDS-TITLE-MARK" in dict(state["parts"])["header"]
    view.close()


async def test_a_page_following_the_ops_shows_what_the_state_holds() -> None:
    """The ops (boxes, nested pieces, a reply streamed then sealed, status as attributes)
    build on a page exactly what the complete state shows, a stopped round included."""
    slow = {"json": {"analysis": "still going " * 60, "extension_needed": False}, "delay": 0.003}
    branch = react_branch(delay=0.003, extra=[slow])
    view = ReActRoundsView(branch, refresh_interval=1 / 30)
    page = Page(view.state_parts(), view.channel.seq)
    send = view.channel._send
    view.channel._send = lambda msg: (page.receive(msg), send(msg))
    await branch.ReAct("compute", max_extensions=2)
    task = asyncio.ensure_future(branch.ReAct("again"))
    await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    view.channel.flush()
    view.sync_state()
    assert page.resyncs == 0
    assert page.html() == Page(view.state_parts()).html()
    assert "3 and 12" in page.html() and "lion-stopped-msg" in page.html()
    view.close()


async def test_a_tool_call_shows_forming_before_the_round_is_sealed() -> None:
    """While the model writes ``action_requests`` the round shows the calls forming (name,
    then each argument as it completes) in a small part of its own, re-sent only when it
    changes; the recorded call cards replace it. A page following the ops shows what the
    complete state holds at every update, the forming calls included."""
    branch = react_branch(delay=0.002)
    view = ReActRoundsView(branch, refresh_interval=0)
    page = Page(view.state_parts(), view.channel.seq)
    sent: list[dict] = []
    mismatches: list[str] = []
    send = view.channel._send

    def record(msg) -> None:
        sent.extend(msg["ops"])
        page.receive(msg)
        send(msg)
        if any(str(op.get("key", "")).endswith("-calls") for op in msg["ops"]):
            if page.html() != Page(view.state_parts()).html():
                mismatches.append(page.html())

    view.channel._send = record
    await branch.ReAct("compute", max_extensions=2)
    view.channel.flush()
    first = view._key(view.rounds[0])
    seal = next(
        i for i, op in enumerate(sent) if op["op"] == "seal" and op["key"].startswith(first)
    )
    forming = [
        op["html"] for op in sent[:seal] if op["op"] == "put" and op["key"].endswith("-calls")
    ]
    lines = [line for html_ in forming for line in html_.split('class="lion-call-line">')[1:]]
    shown = [line.split("<", 1)[0] for line in lines]
    for text in ("→ add(…)", "→ add(a=1, …)", "→ add(a=1, b=2)", "→ mul(a=3, b=4)"):
        assert text in shown
    assert len(forming) == len(set(forming))  # re-sent only when it changed
    assert all('aria-label="Tool call' in h and "aria-live" not in h for h in forming)
    (key,) = {op["key"] for op in sent[:seal] if op["op"] == "put" and "-calls" in op["key"]}
    assert any(op == {"op": "drop", "key": key} for op in sent[seal:])
    assert not mismatches
    assert all("-calls" not in k for k, *_ in view.state_parts())
    assert page.html() == Page(view.state_parts()).html()
    view.close()
