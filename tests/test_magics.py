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
