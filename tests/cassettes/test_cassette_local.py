"""Cassettes over the embedded model (llama.cpp + SmolLM2), for real: record in one process,
replay in another where llama_cpp cannot be imported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lion_nb.models.imodel import local_model_available

SIDE = Path(__file__).resolve().parents[1] / "support" / "cassette_local_side.py"

pytestmark = [pytest.mark.local_model, pytest.mark.slow]


def side(mode: str, path: Path) -> dict:
    done = subprocess.run(
        [sys.executable, str(SIDE), mode, str(path)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_embedded_model_replays_without_llama_cpp(tmp_path: Path) -> None:
    assert local_model_available()
    path = tmp_path / "local.jsonl"
    recorded = side("record", path)
    assert recorded["llama_loaded"] and recorded["deltas"]
    replayed = side("replay", path)
    assert not replayed["llama_loaded"]
    for key in ("text", "colour", "messages", "deltas", "signals"):
        assert replayed[key] == recorded[key], key


def test_without_llama_cpp_a_miss_in_replay_mode_is_a_cassette_miss(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(SIDE), "replay", str(tmp_path / "empty.jsonl")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "CassetteMiss" in done.stderr and "'Name one colour.'" in done.stderr
    assert "blocked" not in done.stderr  # it never got as far as loading the model
