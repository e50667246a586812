"""``lion_nb.Grid``: prompts x models, each cell a conversation, on the scripted model, over
loopback HTTP and through a cassette."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import lion_nb
from lion_nb import Branch, iModel
from lion_nb.errors import ConfigurationError, ExecutionError, ServerError
from lion_nb.flow.errors import GridFailed, GridIndexError, GridShapeError
from lion_nb.flow.grid import Grid
from lion_nb.session.session import Session
from lion_nb.signals import StreamDelta
from tests.servers.chat_server import Reply
from tests.support.waiting import until

PROMPTS = ["Name a colour.", "Name a fish.", "Name a tree."]


def echo(tag: str, **reply: Any) -> iModel:
    """A scripted model answering every request with ``"<tag>: <the prompt>"``."""

    def answer(request: Any) -> dict[str, Any]:
        return {"text": f"{tag}: {request.messages[-1]['content']}", **reply}

    return iModel(provider="scripted", default_reply=answer)


def sent_prompts(model: iModel) -> list[list[str]]:
    """What each request to a scripted model sent: the contents of its messages."""
    return [[m["content"] for m in r.messages] for r in model.provider.requests]


# -- shape, fields, statuses, records -----------------------------------------------------------


async def test_every_cell_runs_on_its_own_branch_with_its_column_model() -> None:
    cold, warm = echo("cold"), echo("warm")
    grid = Grid(PROMPTS, {"cold": cold, "warm": (warm, "Be warm.")}, system="Be brief.")
    assert grid.shape == (3, 2) and grid.labels == ["cold", "warm"] and grid.baseline == 0
    assert [c.status for c in grid.cells()] == ["pending"] * 6
    assert await grid.run() is grid
    assert not grid.is_running
    cell = grid[1, 1]
    assert cell is grid.cell(1, 1) and (cell.row, cell.column, cell.label) == (1, 1, "warm")
    assert cell.prompt == grid.prompt_text(1) == "Name a fish."
    assert cell.status == "done" and cell.text == "warm: Name a fish." and cell.error is None
    assert cell.branch is not None and cell.branch.session is grid.session
    assert cell.branch.chat_model is warm and cell.branch.system.system == "Be warm."
    assert grid[1, 0].branch.system.system == "Be brief."  # the grid's system where none given
    assert [m.role for m in cell.branch.messages] == ["system", "user", "assistant"]
    assert len({c.branch.id for c in grid.cells()}) == 6
    assert cell.usage.output_tokens > 0 and cell.cost_usd is None  # scripted: no price
    assert 0 <= cell.first_token_ms <= cell.latency_ms and cell.tokens_per_s > 0
    assert cell.parsed is None and cell.attempt == 0 and cell.attempts == [cell.branch]
    assert sorted(p[-1] for p in sent_prompts(cold)) == sorted(PROMPTS)


async def test_records_are_one_flat_dict_per_cell_row_by_row() -> None:
    grid = Grid(["a", {"instruction": "b", "context": {"x": 1}}], [echo("m"), echo("m")])
    assert grid.labels == ["scripted", "scripted (2)"]  # the same model twice, told apart
    await grid.run()
    records = grid.to_records()
    assert [(r["row"], r["column"]) for r in records] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    first = records[0]
    assert {
        "prompt",
        "label",
        "text",
        "usage",
        "cost_usd",
        "latency_ms",
        "first_token_ms",
        "tokens_per_s",
        "error",
        "status",
    } <= set(first)
    assert first["prompt"] == "a" and first["label"] == "scripted" and first["text"] == "m: a"
    assert first["usage"]["output_tokens"] == first["output_tokens"] > 0
    assert records[2]["prompt"] == "b"  # a dict's instruction
    assert (
        '{"x": 1}' in grid[1, 0].branch.messages[0].text
        or "x" in grid[1, 0].branch.messages[0].text
    )  # the row's context went with its instruction
    json.dumps(records)  # plain values: a DataFrame, a CSV or JSON is one call away


async def test_subscribers_hear_each_status_change_and_a_failing_one_changes_nothing() -> None:
    grid = Grid(["p"], [echo("m", delay=0.01)])
    heard: list[tuple[str, int]] = []
    stop = grid.subscribe(lambda c: heard.append((c.status, c.attempt)))
    grid.subscribe(lambda c: 1 / 0)
    await grid.run()
    assert heard == [("pending", 0), ("running", 0), ("done", 0)]  # its branch, then its run
    await grid.run(cells=[(0, 0)])
    assert heard[3:] == [("pending", 1), ("running", 1), ("done", 1)]  # a new fork, its run
    stop()
    await grid.run(rows=[0])
    assert len(heard) == 6


async def test_response_format_gives_parsed_objects() -> None:
    class Colour(BaseModel):
        name: str

    model = iModel(provider="scripted", default_reply={"json": {"name": "teal"}})
    grid = Grid(["Name a colour."], [model], response_format=Colour)
    await grid.run()
    assert grid[0, 0].parsed == Colour(name="teal") and grid[0, 0].text == '{"name": "teal"}'


async def test_a_template_is_forked_for_every_cell_and_left_as_it_was() -> None:
    session = Session()
    model = echo("t")
    template = session.new_branch(system="You know trees.", chat_model=model)
    grid = Grid(PROMPTS[:2], {"a": model, "b": echo("other")}, template=template)
    assert grid.session is session
    await grid.run()
    assert len(template.messages) == 1
    assert grid[0, 1].branch.system.system == "You know trees."
    assert grid[0, 1].text == "other: Name a colour."
    assert all(
        c.branch.metadata["forked_from"]["branch_id"] == str(template.id) for c in grid.cells()
    )


# -- stop -----------------------------------------------------------------------------------


async def test_stop_keeps_what_each_running_cell_streamed_and_run_finishes_the_rest() -> None:
    slow = echo("slow", chunks=["one ", "two ", "three ", "four ", "five"], delay=0.2)
    grid = Grid(["a", "b", "c"], [slow])
    streamed: list[Any] = []
    grid.session.observe(StreamDelta, handler=streamed.append)
    task = asyncio.create_task(grid.run(max_concurrent=2))
    await until(lambda: len({s.branch_id for s in streamed}) == 2)  # two cells streamed
    assert grid.is_running and grid.stop()
    assert await task is grid  # a stop is an outcome: run() returns the grid
    assert not grid.is_running and not grid.stop()
    for cell in grid.row(0) + grid.row(1):
        assert cell.status == "stopped" and cell.error is None
        assert cell.text and "five" not in cell.text  # the partial reply, kept on the branch
        assert cell.branch.messages[-1].metadata.get("stopped") is True
    waiting = grid[2, 0]
    assert waiting.status == "stopped" and waiting.text is None and not waiting.ran
    await grid.run()  # runs what the stop caught before it started, and nothing else
    assert (
        waiting.status == "done"
        and waiting.text == "one two three four five"
        and waiting.attempt == 0
    )
    assert grid[0, 0].status == "stopped"


async def test_cancelling_the_caller_stops_the_cells_and_propagates() -> None:
    grid = Grid(["a"], [echo("slow", chunks=["x "] * 50, delay=0.05)])
    task = asyncio.create_task(grid.run())
    await until(lambda: grid[0, 0].status == "running")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert grid[0, 0].status == "stopped" and not grid.is_running


# -- re-runs --------------------------------------------------------------------------------


async def test_rerunning_a_cell_row_or_column_forks_anew_and_keeps_the_earlier_reply() -> None:
    replies = iter(f"reply {n}" for n in range(100))
    model = iModel(provider="scripted", default_reply=lambda request: next(replies))
    grid = Grid(["p0", "p1"], {"x": model, "y": echo("y")}, system="Sys.")
    await grid.run()
    first = grid[0, 0]
    before_branch, before_text = first.branch, first.text
    await grid.run(cells=[(0, 0)])
    assert first.attempt == 1 and first.branch is not before_branch
    assert first.attempts == [before_branch, first.branch] and first.text != before_text
    assert before_branch.messages[-1].text == before_text  # the earlier reply is kept...
    assert before_branch.id in grid.session.branches  # ...in the session
    assert sent_prompts(model)[-1] == ["Sys.", "p0"]  # ...and not sent again
    assert first.branch.messages[0].id == before_branch.messages[0].id  # the shared system
    conversation = first.conversation()
    replies_at = conversation.alternatives(first.base_length + 1)
    assert replies_at == [before_branch, first.branch]  # the earlier reply: an alternative
    assert conversation.branch is first.branch
    await grid.run(rows=[1])
    assert [c.attempt for c in grid.row(1)] == [1, 1] and grid[0, 1].attempt == 0
    await grid.run(columns=["y"], cells=[(0, 0)])
    assert [c.attempt for c in grid.column(1)] == [1, 2] and first.attempt == 2
    assert all(c.status == "done" for c in grid.cells())


async def test_a_rerun_without_a_system_starts_from_an_empty_fork() -> None:
    model = echo("m")
    grid = Grid(["hello"], [model])
    await grid.run()
    await grid.run(cells=[(0, 0)])
    cell = grid[0, 0]
    assert [m.role for m in cell.branch.messages] == ["user", "assistant"]
    assert sent_prompts(model) == [["hello"], ["hello"]]
    assert cell.conversation().alternatives(1) == cell.attempts


async def test_a_running_cell_cannot_be_run_again_until_it_settles() -> None:
    grid = Grid(["a"], [echo("m", chunks=["x "] * 40, delay=0.05)])
    task = asyncio.create_task(grid.run())
    await until(lambda: grid[0, 0].status == "running")
    with pytest.raises(ValueError, match="Row 1, scripted: running now"):
        await grid.run(cells=[(0, 0)])
    assert await grid.run() is grid  # nothing that has not run is left out of the run
    grid.stop()
    await task


async def test_a_second_run_leaves_the_cells_of_the_first_alone_and_stop_ends_both() -> None:
    slow = echo("m", chunks=["x "] * 40, delay=0.05)
    grid = Grid(["a", "b", "c"], [slow])
    first = asyncio.create_task(grid.run(max_concurrent=1))  # a and b wait their turn
    await until(lambda: grid[0, 0].status == "running")
    assert await grid.run() is grid  # b and c are the first run's: nothing to run here
    with pytest.raises(ValueError, match="Row 3, scripted: running now"):
        await grid.run(rows=[2])
    assert len(slow.provider.requests) == 1
    assert grid.stop()
    await first
    assert [c.status for c in grid.column(0)] == ["stopped"] * 3
    again = asyncio.create_task(grid.run(rows=[0]))
    await until(lambda: grid[0, 0].status == "running")
    other = asyncio.create_task(grid.run(rows=[1]))  # two runs at once, on other cells
    await until(lambda: grid[1, 0].status == "running")
    assert grid.is_running and grid.stop()
    assert await again is grid and await other is grid and not grid.is_running
    assert [c.status for c in grid.column(0)] == ["stopped", "stopped", "stopped"]
    assert grid[0, 0].attempt == 1 and grid[1, 0].attempt == 0  # b had never started


# -- failures -------------------------------------------------------------------------------


async def test_a_failed_cell_never_fails_the_others_and_says_what_happened() -> None:
    broken = iModel(provider="scripted", default_reply=ServerError("The server is overloaded."))
    grid = Grid(["a", "b"], {"ok": echo("ok"), "broken": broken})
    await grid.run()
    assert [c.status for c in grid.column("ok")] == ["done", "done"]
    cell = grid[0, 1]
    assert cell.status == "failed" and cell.text is None
    assert "The server is overloaded." in cell.error and "Traceback" not in cell.error
    assert isinstance(cell.failure, ServerError)
    assert grid.to_records()[1]["error"] == cell.error


async def test_a_grid_whose_every_cell_fails_says_so() -> None:
    empty = iModel(provider="scripted")  # no reply to give
    grid = Grid(["a", "b"], [empty])
    with pytest.raises(GridFailed, match=r"every cell of the grid failed \(2\): 2 × .*no reply"):
        await grid.run()
    assert [c.status for c in grid.cells()] == ["failed", "failed"]
    assert isinstance(grid[0, 0].failure, ExecutionError)


# -- shapes refused before anything runs -----------------------------------------------------


@pytest.mark.parametrize(
    ("prompts", "models", "options", "message"),
    [
        ([], None, {}, "at least one prompt"),
        ("Name a colour.", None, {}, "a list of prompts"),
        (["a"], [], {}, "at least one model"),
        (["a"], "model", {}, "list of iModels"),
        (["a"], ["not a model"], {}, "each column is an iModel"),
        (["a"], {"x": ("m", "s")}, {}, "column 'x' is a str"),
        (["a", 3], None, {}, "prompt 1 is a int"),
        ([{"instrction": "a"}], None, {}, "'instrction', which communicate does not take"),
        ([{"instruction": "a", "chat_model": 1}], None, {}, "the column's model decides"),
        ([{"instruction": "a", "temperature": 1}], None, {}, "belong to a column's iModel"),
        (["a"], None, {"baseline": 2}, "baseline=2 is out of range"),
        (["a"], None, {"baseline": "z"}, "baseline='z' is not a column"),
        (["a"], None, {"verb": "shout"}, "verb='shout'"),
        (["a"], None, {"template": "b"}, "template= takes a Branch"),
        (["a"], None, {"template": Branch(), "system": "s"}, "both give a system prompt"),
    ],
)
def test_bad_shapes_are_refused_in_words(prompts, models, options, message) -> None:
    models = models if models is not None else {"x": echo("x"), "y": echo("y")}
    with pytest.raises(GridShapeError, match=message) as caught:
        Grid(prompts, models, **options)
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, ConfigurationError)


async def test_cells_out_of_range_are_refused_and_nothing_runs() -> None:
    model = echo("m")
    grid = Grid(["a", "b"], {"x": model}, baseline="x")
    assert grid.baseline == 0
    for bad in ((2, 0), (0, 1), (-1, 0)):
        with pytest.raises(GridIndexError, match=r"no (row|column)"):
            grid[bad]
    with pytest.raises(IndexError):
        grid.cell(0, 5)
    with pytest.raises(ValueError, match="no row 7"):
        await grid.run(rows=[0, 7])
    with pytest.raises(ValueError, match=r"\(row, column\) pairs"):
        await grid.run(cells=[0])
    with pytest.raises(ValueError, match="engine='gpu'"):
        await grid.run(engine="gpu")
    with pytest.raises(ValueError, match="at least 1"):
        await grid.run(0)
    assert model.provider.requests == [] and all(c.branch is None for c in grid.cells())


async def test_other_verbs_take_their_own_arguments() -> None:
    grid = Grid([{"instruction": "a", "max_extensions": 1}], [echo("m")], verb="ReAct")
    assert grid.verb == "ReAct" and grid.prompt_text(0) == "a"
    with pytest.raises(GridShapeError, match="which operate does not take"):
        Grid([{"instruction": "a", "max_extensions": 1}], [echo("m")], verb="operate")


# -- over loopback HTTP ---------------------------------------------------------------------


async def test_the_figures_over_loopback_http_are_what_the_server_did(chat_server) -> None:
    deltas, pause = 10, 0.03  # each event waits 30 ms: first token >= 30 ms, then ~33 tok/s
    chat_server.default = lambda body: Reply(["tok "] * deltas, delay=pause)
    model = iModel(
        provider="openai", model="gpt-4o-mini", base_url=chat_server.base_url, api_key_env=None
    )
    async with model:
        grid = Grid(["a", "b"], {"mini": model, "again": model})
        started = time.perf_counter()
        await grid.run(max_concurrent=4)
        wall_ms = (time.perf_counter() - started) * 1000
    for cell in grid.cells():
        assert cell.status == "done" and cell.text == "tok " * deltas
        assert cell.usage.output_tokens == deltas
        assert pause * 1000 <= cell.first_token_ms < cell.latency_ms <= wall_ms
        assert cell.latency_ms >= deltas * pause * 1000
        # the generation rate: 10 tokens over the 9 gaps of 30 ms after the first (~37/s);
        # generous both ways for a busy machine, far from an instant reply's thousands
        assert 5 < cell.tokens_per_s < deltas / ((deltas - 1) * pause) * 3
        assert cell.cost_usd is not None and cell.cost_usd > 0  # priced from the table
    assert len(chat_server.requests) == 4


# -- cassettes ------------------------------------------------------------------------------


@pytest.mark.usefixtures("no_default_cassette")
async def test_a_grid_records_then_replays_strictly_from_a_cassette(tmp_path: Path) -> None:
    path = tmp_path / "grid.cassette.jsonl"

    def grid_of(a: iModel, b: iModel) -> Grid:
        return Grid(PROMPTS, {"a": a, "b": (b, "Be terse.")})

    with lion_nb.cassette(path, mode="record"):
        recorded = await grid_of(echo("a", delay=0.001), echo("b")).run()
    absent = iModel(provider="scripted")  # any call reaching a model would fail
    with lion_nb.cassette(path, mode="replay", speed=None):
        replayed = await grid_of(absent, iModel(provider="scripted")).run()
    assert [c.text for c in replayed.cells()] == [c.text for c in recorded.cells()]
    assert all(c.status == "done" for c in replayed.cells()) and absent.provider.requests == []
    assert sum('"call"' in line for line in path.read_text().splitlines()) == 6
    assert replayed[2, 1].branch.messages[-1].metadata["replayed"]
