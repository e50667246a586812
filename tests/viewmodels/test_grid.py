"""``viewmodels.grid``: a grid's view state reduced from ``grid.subscribe`` and the running
cells' ``StreamDelta`` snapshots, on a real ``lion_nb.Grid`` over the scripted model."""

from __future__ import annotations

from typing import Any

from lion_nb import Grid, iModel
from lion_nb.viewmodels.grid import (
    CellView,
    GridViewModel,
    cell_key,
    parse_key,
    summarize,
    word_diff,
)

PROMPTS = ["Name a colour.", "Name a fish."]


def answering(tag: str, *, delay: float = 0.0, words: int = 6, **reply: Any) -> iModel:
    """A scripted model answering ``"<tag> says w0 w1 …"`` to every prompt, word by word."""

    def answer(request: Any) -> dict[str, Any]:
        text = f"{tag} says " + " ".join(f"w{k}" for k in range(words))
        return {"text": text, **reply}

    return iModel(provider="scripted", default_reply=answer, delay=delay)


def cell(status: str, *, latency: float | None = None, cost: float | None = None) -> CellView:
    return CellView(0, 0, "a", status, "", None, cost, latency, None, None, None, 0)  # type: ignore[arg-type]


def test_a_word_diff_marks_what_each_side_has_alone_and_rebuilds_the_cell() -> None:
    pieces = word_diff("The cat sat on the mat.", "The dog sat on the red mat.")
    assert pieces == [
        ("same", "The "),
        ("removed", "cat"),
        ("added", "dog"),
        ("same", " sat on the "),
        ("added", "red "),
        ("same", "mat."),
    ]
    assert "".join(t for op, t in pieces if op != "removed") == "The dog sat on the red mat."
    assert "".join(t for op, t in pieces if op != "added") == "The cat sat on the mat."
    assert word_diff("same", "same") == [("same", "same")]
    assert word_diff("", "new words") == [("added", "new words")]


def test_a_summary_averages_the_done_cells_and_counts_failures_and_unpriced_ones() -> None:
    summary = summarize(
        [
            cell("done", latency=1000, cost=0.002),
            cell("done", latency=3000),
            cell("failed", latency=50),
            cell("running"),
        ]
    )
    assert (summary.cells, summary.done, summary.failed, summary.running) == (4, 2, 1, 1)
    assert summary.mean_latency_ms == 2000  # the failed cell's time is not a latency
    assert summary.cost_usd == 0.002 and summary.unpriced == 1
    assert summarize([cell("done")]).cost_usd is None  # none priced: no made-up $0


def test_cell_keys_round_trip() -> None:
    assert parse_key(cell_key(12, 3)) == (12, 3)
    assert parse_key("r1") is None and parse_key("c1-x") is None


async def test_the_view_model_reads_a_finished_grid() -> None:
    grid = Grid(PROMPTS, {"a": answering("A"), "b": answering("B")}, name="Animals")
    model = GridViewModel(grid)
    model.attach()
    await grid.run()
    snap = model.snapshot()
    assert snap.title == "Animals · 2 prompts × 2 columns"
    assert snap.labels == ("a", "b") and snap.prompts == tuple(PROMPTS)
    first = snap.cells[1][1]
    assert (first.status, first.text) == ("done", grid[1, 1].text)
    assert first.output_tokens == grid[1, 1].usage.output_tokens
    assert first.latency_ms == grid[1, 1].latency_ms
    assert [r.done for r in snap.rows] == [2, 2] and [c.done for c in snap.columns] == [2, 2]
    assert snap.total.cells == 4 and not snap.running
    model.detach()


async def test_a_running_cell_shows_its_reply_as_it_is_written() -> None:
    grid = Grid(PROMPTS[:1], {"slow": answering("S", delay=0.01, words=12)})
    model = GridViewModel(grid)
    seen: list[tuple[str, str]] = []
    model.on_change = lambda keys: seen.extend(
        (model.cell(*at).status, model.cell(*at).text) for at in keys
    )
    model.attach()
    await grid.run()
    final = grid[0, 0].text
    assert final is not None
    running = [text for status, text in seen if status == "running" and text]
    assert len(running) >= 5  # word by word, not only the end
    assert all(final.startswith(text) for text in running)
    assert any(len(text) < len(final) for text in running)
    assert seen[-1] == ("done", final)
    model.detach()


async def test_a_rerun_cell_is_followed_on_its_new_branch() -> None:
    grid = Grid(PROMPTS[:1], {"a": answering("A"), "b": answering("B", delay=0.005)})
    model = GridViewModel(grid)
    model.attach()
    await grid.run()
    first_branch = grid[0, 1].branch
    live: list[str] = []
    model.on_change = lambda keys: live.extend(
        model.cell(*at).text for at in keys if model.cell(*at).status == "running"
    )
    await grid.run(cells=[(0, 1)])
    assert grid[0, 1].branch is not first_branch and model.cell(0, 1).attempt == 1
    assert any(text for text in live)  # the new run's text streamed through the view model
    assert model.cell(0, 1).text == grid[0, 1].text
    model.detach()


async def test_the_diff_is_against_the_baseline_column_of_the_row() -> None:
    grid = Grid(PROMPTS[:1], {"a": answering("A"), "b": answering("B")}, baseline=1)
    model = GridViewModel(grid)
    await grid.run()
    assert model.diff(0, 0)[:2] == [("removed", "B"), ("added", "A")]
    assert model.diff(0, 1) == [("same", grid[0, 1].text)]


async def test_after_detach_nothing_is_reported() -> None:
    grid = Grid(PROMPTS[:1], {"a": answering("A")})
    model = GridViewModel(grid)
    calls: list[Any] = []
    model.on_change = calls.append
    model.attach()
    model.detach()
    await grid.run()
    assert calls == []
