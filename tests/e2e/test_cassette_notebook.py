"""The cassette notebook, executed twice by nbclient in a real kernel: first recording a fresh
cassette on the embedded model, then replaying it in a kernel where llama_cpp cannot be
imported, in "replay" mode (any call that reached a model would fail). The text the cells
print must be the same."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "07_cassettes.ipynb"
SHIPPED = ROOT / "notebooks" / "data" / "07_cassettes.cassette.jsonl"

pytestmark = [pytest.mark.kernel, pytest.mark.slow, pytest.mark.timeout(600)]


def execute(monkeypatch, notebook: Path = NOTEBOOK, **env: str) -> list[str]:
    from nbclient import NotebookClient

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    nb = nbformat.read(notebook, as_version=4)
    client = NotebookClient(
        nb,
        timeout=180,
        kernel_name="python3",
        resources={"metadata": {"path": str(notebook.parent)}},
    )
    client.execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.get("name") == "stderr"], outputs
    return [o["text"] for o in outputs if o["output_type"] == "stream"]


def blocked_llama(tmp_path: Path) -> str:
    """A folder that, first on PYTHONPATH, makes ``import llama_cpp`` fail and the embedded
    model look not installed (``local_model_available()`` is False), as on Binder."""
    folder = tmp_path / "no_llama"
    (folder / "llama_cpp").mkdir(parents=True)
    (folder / "llama_cpp" / "__init__.py").write_text(
        "raise ImportError('llama_cpp is blocked: a replay must not load the model')\n"
    )
    # None in sys.modules: the import fails and importlib.util.find_spec says "not installed"
    (folder / "sitecustomize.py").write_text("import sys\n\nsys.modules['llama_cpp'] = None\n")
    return str(folder)


@pytest.mark.local_model
def test_record_then_replay_without_the_model_prints_the_same(tmp_path: Path, monkeypatch) -> None:
    cassette = tmp_path / "lesson.jsonl"
    recorded = execute(monkeypatch, LION_NB_CASSETTE=str(cassette), LION_NB_CASSETTE_MODE="auto")
    assert cassette.is_file() and len(cassette.read_text().splitlines()) >= 5
    replayed = execute(
        monkeypatch,
        LION_NB_CASSETTE=str(cassette),
        LION_NB_CASSETTE_MODE="replay",
        PYTHONPATH=blocked_llama(tmp_path),
    )
    assert replayed == recorded
    text = "".join(replayed)
    assert "attempt 1: valid" in text and "the tool ran in this session: ['notebook']" in text
    assert "closest recording (call 1, line 2) differs in messages[1].content" in text


def test_the_shipped_cassette_replays_without_the_model(tmp_path: Path, monkeypatch) -> None:
    before = SHIPPED.read_bytes()
    printed = execute(
        monkeypatch, LION_NB_CASSETTE_MODE="replay", PYTHONPATH=blocked_llama(tmp_path)
    )
    assert "Rayleigh" in "".join(printed)
    assert SHIPPED.read_bytes() == before  # replaying never rewrites the file


@pytest.mark.parametrize(
    ("name", "recorded_answers"),
    [
        # 01 switches to its cassette because the model is missing (nothing to set)
        (
            "01_quickstart",
            [
                "The answers come from the cassette data/01_quickstart.cassette.jsonl (mode "
                "'replay').",
                "7 messages; the last one:",
            ],
        ),
        ("03_react_rounds", ["action_request"]),
        ("04_structured_output", ["Capital("]),
    ],
)
def test_the_embedded_model_notebooks_replay_their_cassettes_without_the_model(
    name: str, recorded_answers: list[str], tmp_path: Path, monkeypatch
) -> None:
    shipped = ROOT / "notebooks" / "data" / f"{name}.cassette.jsonl"
    before = shipped.read_bytes()
    printed = "".join(
        execute(
            monkeypatch,
            ROOT / "notebooks" / f"{name}.ipynb",
            LION_NB_CASSETTE_MODE="replay",
            LION_NB_REPLAY="1",
            TMPDIR=str(tmp_path),
            PYTHONPATH=blocked_llama(tmp_path),
        )
    )
    assert "The embedded model is not installed" not in printed  # the recorded model answered
    assert [answer for answer in recorded_answers if answer not in printed] == []
    assert shipped.read_bytes() == before  # replaying never rewrites the file


def test_the_grid_notebook_replays_on_ray_workers_without_the_model(tmp_path, monkeypatch):
    # Notebook 11 starts a Ray cluster of its own here: its workers inherit the kernel's
    # PYTHONPATH (llama_cpp blocked, this checkout's lion_nb), so a cell a worker ran on the
    # model instead of the cassette would fail.
    shipped = ROOT / "notebooks" / "data" / "11_grid.cassette.jsonl"
    before = shipped.read_bytes()
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    ray_tmp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # Ray's socket paths stay short
    try:
        printed = "".join(
            execute(
                monkeypatch,
                ROOT / "notebooks" / "11_grid.ipynb",
                LION_NB_CASSETTE_MODE="replay",
                TMPDIR=str(tmp_path),
                RAY_TMPDIR=ray_tmp,
                PYTHONPATH=os.pathsep.join([blocked_llama(tmp_path), str(ROOT)]),
            )
        )
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert "cells run in Ray worker processes: True" in printed
    assert "same replies as in the kernel: True" in printed
    assert "the replies came from: the cassette" in printed
    assert shipped.read_bytes() == before  # replaying never rewrites the file
