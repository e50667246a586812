"""``%lion_cassette`` (the notebook-wide switch) and ``%%lion --cassette PATH``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lion_nb import Branch, iModel
from lion_nb.cassettes import Cassette, active
from lion_nb.magics import MagicUsageError, lion_cassette, register

pytestmark = pytest.mark.usefixtures("no_default_cassette")  # tests/conftest.py


def test_the_line_magic_installs_and_removes_the_default(tmp_path: Path) -> None:
    path = tmp_path / "nb.jsonl"
    tape = lion_cassette(f"{path} --mode replay --speed 10")
    assert isinstance(tape, Cassette) and active.current() is tape
    assert (tape.mode, tape.speed, tape.path) == ("replay", 10.0, path)
    assert lion_cassette("") is tape  # no arguments: the one in force
    assert lion_cassette(f"'{path}' --speed none").speed is None
    assert lion_cassette("--off") is None and active.current() is None


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("x.jsonl --speed fast", "--speed must be a number"),
        ("x.jsonl --speed -2", "must not be negative"),
        ("x.jsonl --mode loud", "invalid choice: 'loud'"),
        ("x.jsonl --off", "a PATH or --off"),
    ],
)
def test_the_line_magic_explains_bad_options(line: str, message: str) -> None:
    with pytest.raises(MagicUsageError, match=message):
        lion_cassette(line)
    assert active.current() is None


class Shell:
    def __init__(self, **ns: Any) -> None:
        self.user_ns = ns
        self.magics: dict[str, Any] = {}

    def register_magic_function(self, func: Any, magic_kind: str, magic_name: str) -> None:
        self.magics[(magic_kind, magic_name)] = func


async def test_the_cell_magic_records_then_replays_its_cell(tmp_path: Path, monkeypatch) -> None:
    import IPython.display

    shown: list[Any] = []
    monkeypatch.setattr(IPython.display, "display", shown.append)
    path = tmp_path / "cell.jsonl"
    texts = []
    for model in (
        iModel(provider="scripted", replies=["Taped reply."]),
        iModel(provider="scripted"),  # nothing to say: the second run must replay
    ):
        shell = Shell(lion_branch=Branch(chat_model=model))
        register(shell)
        assert ("line", "lion_cassette") in shell.magics
        shell.magics[("cell", "lion")](f"--cassette {path}", "Say something.")
        await shown[-1].wait()  # the view's task still saw the cassette after the cell returned
        texts.append(shell.user_ns["lion_branch"].messages[-1].text)
        shown[-1].close()
    assert texts == ["Taped reply.", "Taped reply."]
    assert len(path.read_text().splitlines()) == 2
    assert active.current() is None  # the cell's cassette did not become the default


# -- %%lion --grid ------------------------------------------------------------------------------


def echo_model(tag: str) -> iModel:
    return iModel(
        provider="scripted",
        default_reply=lambda request: f"{tag}: {request.messages[-1]['content']}",
    )


class Handle:
    def __init__(self) -> None:
        self.updates: list[str] = []

    def update(self, obj: Any) -> None:
        self.updates.append(repr(obj))


def grid_shell(monkeypatch, **ns: Any) -> tuple[Shell, list[Any], list[Handle]]:
    """A shell with ``%%lion`` registered; ``display`` records what it shows."""
    import IPython.display

    shown: list[Any] = []
    handles: list[Handle] = []

    def display(obj: Any, display_id: Any = None) -> Handle | None:
        shown.append(obj)
        if display_id:
            handles.append(Handle())
            return handles[-1]
        return None

    monkeypatch.setattr(IPython.display, "display", display)
    shell = Shell(**ns)
    register(shell)
    return shell, shown, handles


async def test_the_grid_form_runs_every_line_on_every_model(monkeypatch) -> None:
    from lion_nb.flow.grid import Grid
    from tests.support.waiting import until

    shell, shown, handles = grid_shell(
        monkeypatch, fast=echo_model("fast"), slow=echo_model("slow"), thing="fish"
    )
    magic = shell.magics[("cell", "lion")]
    grid = magic(
        "--grid --model fast --model slow --system 'Be brief.'", "A colour.\n\n A {thing}.\n"
    )
    assert isinstance(grid, Grid)  # the cell's result: ``_`` in the notebook
    assert grid.shape == (2, 2) and grid.labels == ["fast", "slow"]
    assert [grid.prompt_text(i) for i in range(2)] == ["A colour.", "A fish."]
    await until(lambda: all(c.status == "done" for c in grid.cells()))
    assert [c.text for c in grid.row(1)] == ["fast: A fish.", "slow: A fish."]
    assert grid[0, 0].branch.system.system == "Be brief."
    view = shown[0]
    if type(view).__name__ == "GridTable":  # where no grid view is installed: a text table
        table = repr(view).splitlines()
        assert table[0].split() == [
            "prompt",
            "column",
            "status",
            "text",
            "latency",
            "first",
            "token",
            "error",
        ]
        assert "slow: A fish." in table[4] and "done" in table[4]
        assert len(handles[0].updates) == 4  # redrawn as each cell settled
    else:
        assert view.grid is grid
        view.close()


async def test_the_grid_form_names_its_grid_and_waits_when_asked(monkeypatch) -> None:
    shell, shown, _handles = grid_shell(monkeypatch, m=echo_model("m"))
    magic = shell.magics[("cell", "lion")]
    assert magic("--grid --model m --model m --name colours --wait", "Red?\nBlue?") is None
    grid = shell.user_ns["colours"]
    assert grid.labels == ["m", "m (2)"] and not grid.is_running  # --wait: already run
    assert [c.status for c in grid.cells()] == ["done"] * 4
    if hasattr(shown[0], "close"):
        shown[0].close()


@pytest.mark.parametrize(
    ("line", "cell", "message"),
    [
        ("--grid", "a", "give the columns' models with --model"),
        ("--grid --model m", "\n  \n", "the cell is empty"),
        ("--grid --model m --name 2x", "a", "--name must be a variable name"),
        ("--grid --model m --max-concurrent 0", "a", "at least 1"),
        ("--model m --model m", "a", "several need --grid"),
        ("--name g", "a", "use it with --grid"),
    ],
)
def test_the_grid_form_explains_bad_options(line: str, cell: str, message: str) -> None:
    from lion_nb.magics import lion

    with pytest.raises(MagicUsageError, match=message):
        lion(line, cell, {"m": echo_model("m")})
