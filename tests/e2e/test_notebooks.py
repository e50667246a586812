"""The tutorial notebooks: stored without outputs and in sync with ``notebooks/_build.py``, and
each one executed top to bottom in a real ipykernel through nbclient. A failing cell fails its
test; so does a traceback printed by a background task, or a key result missing from the
outputs. Executed copies (with outputs and per-cell timings) go to ``test-artifacts/notebooks/``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
ARTIFACTS = ROOT / "test-artifacts" / "notebooks"
NAMES = sorted(p.name for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))

# A few results per notebook that show it did what its prose says (not only that no cell raised).
EXPECTED = {
    "01_quickstart.ipynb": [
        "signals: ['CallStart', 'CallEnd'] (+",
        "signals: ['CallStart', 'CallEnd', 'MessageAdded', 'MessageAdded'] (+",
        "signals: ['RunStart', 'CallStart', 'MessageAdded', 'MessageAdded', 'CallEnd', 'RunEnd'] (+",
        "7 messages; the last one:",
    ],
    "02_streaming_run.ipynb": [
        "action_response  '1\\thello from file",
        "run_and_collect returned:",
        "RunEnd.stopped = True",
        "recorded: ['user', 'assistant', 'action_request']",
        "'stopped': True",
        "child exit code: -9",
        "recovered: True",
    ],
    "03_react_rounds.ipynb": [
        "Rome is warmer: 75.2 F and sunny",
        "round 1  done",
        "round 2  done",
        "answer:   Rome is warmer",
    ],
    "04_structured_output.ipynb": [
        "Recipe — Tomato soup (35 min)",
        "attempt 0: invalid (errors at: minutes, ingredients.1.grams)",
        "attempt 2: valid",
        "return_none   -> None",
        "raise         -> ParseError for Recipe",
        "recorded reply: Sure! Here is the recipe:",
    ],
    "05_progression_and_forks.ipynb": [
        "same as the request the model received: True",
        "in the session: True",
        "shared: 3 messages (fork); differing turns: 4",
        "the original keeps its messages: ['A title for a sourdough book?', '*Crumb by Crumb*.']",
        "alternatives of the first reply: 2; of the question: 2",
        "same messages: True",
        "lineage kept: True",
    ],
    "06_extending_operations.ipynb": [
        "runs: ['RunStart(communicate)', 'RunEnd(communicate)']",
        "is a Middle: True",
        "runs: ['RunStart(operate)', 'RunEnd(operate)']",
        "Tagline(tagline='Warm bread, every morning.', tone='friendly')",
        "summarise    failed",
    ],
    "07_cassettes.ipynb": [
        "streamed as 50 deltas",
        "attempt 0: invalid",
        "attempt 1: valid",
        "the tool ran in this session: ['notebook']",
        "differs in messages[1].content: recorded 'Why is the sky blue?', now 'Why is the sky green?'",
        '{"format": "lion_nb.cassette", "version": 1}',
    ],
    "08_flows.ipynb": [
        "Ray ready in",
        "template untouched: True",
        "each section continued the outline's conversation: True",
        "nodes run in Ray worker processes: True",
        "same answers as in the kernel: True",
    ],
    "09_providers.ipynb": [
        "anthropic  no key: replayed from data/09_providers.cassette.jsonl",
        "gemini     no key: replayed from data/09_providers.cassette.jsonl",
        "openai     no key: replayed from data/09_providers.cassette.jsonl",
        "thinking: The question is about the chemistry",
        "thinking before the call: The user wants Fahrenheit.",
        "tool call: fahrenheit({'celsius': 24})",
        "tool result: 75.2",
        "answer: 24 °C is 75.2 °F",
        "Packing(destination='Rome', items=['comfortable walking shoes'",
        "reasoning summary: **Planning a May weekend in Rome**",
        "finish_reason: length",
        "cost (genai-prices): $0.",
        "anthropic  1 runs, 150 tokens, cost $0.",
        "gemini     2 runs, 297 tokens, cost $0.",
        "openai     2 runs, 384 tokens, cost $0.",
    ],
    "10_tokens.ipynb": [
        "27 tokens, 5 of them special markers: ['<|im_start|>', '<|im_end|>'",
        "the user's question as tokens: ['What', ' is', ' the', ' capital', ' of', ' France', '?']",
        "What the model read: 27 of 2,048 tokens",
        "after 'The capital of France is':",
        "' Paris'        95.1%",
        "' a'             50.4%      68.2%    57.5%",
        "survivors: 3 with llama.cpp's order, 5 with temperature first",
        "T = 1.5: mean surprise",
        "token 12: the sampler took ' sky'; the favourite was ' Mediterranean'",
        "fork:     Tomorrow morning will see a warm and sunny day in the Mediterranean",
        "original untouched: True",
        "5 samples; all share",
        "the tree: 6 replies · merged by tokens",
    ],
    "11_grid.ipynb": [
        "<Grid Five prompts 5×3: 15 done>",
        "   pirate   27 tokens | \"The sea's a cruel mistress",
        "row 3, T 1.0 against T 0.2: The [-ocean's][+sea sings with the wind,] a [-mirror]",
        "  pirate   62%  87%  86%  94%   0%",
        "column pirate  5 of 5 done · mean",
        "the grid: 15 of 15 done · mean",
        "15 records with: row, column, prompt, label, status, text, usage",
        "continued: ['system', 'user', 'assistant', 'user', 'assistant']",
        "the cell still shows its own reply: True",
        "Row 3, T 1.0: run 2, 2 branches",
        "the earlier reply is kept: True",
        "['Row 1, cold: done', 'Row 1, warm: done', 'Row 2, cold: done', 'Row 2, warm: done']",
        "same replies as the big grid: True",
        "Ray ready in",
        "<Grid Five prompts on Ray 5×3: 15 done>",
        "cells run in Ray worker processes: True",
        "same replies as in the kernel: True",
        "the replies came from: the cassette",
    ],
}
# Notebook 01 answers live where the embedded model is installed, from its cassette elsewhere
# (its words then differ from the cassette's: the expectations above are about structure).
LIVE_OR_REPLAYED = {
    "01_quickstart.ipynb": (
        "Live: the embedded model answers.",
        "The answers come from the cassette data/01_quickstart.cassette.jsonl (mode 'replay').",
    ),
}
# Notebooks whose Ray cells join the test run's one local cluster rather than start their own
# (the start itself is what that cluster's fixture does, through the same start_ray).
SHARES_RAY = {"08_flows.ipynb", "11_grid.ipynb"}
# Output that means something went wrong even though every cell finished.
BAD_STDERR = ("Traceback", "Task exception was never retrieved", "Exception ignored", "Error")


def _text_of(output: dict) -> str:
    if output["output_type"] == "stream":
        return output["text"]
    return str(output.get("data", {}).get("text/plain", ""))


def test_the_notebooks_of_binder_readme_are_the_generated_ones():
    sys.path.insert(0, str(NOTEBOOKS))
    try:
        import _build
    finally:
        sys.path.remove(str(NOTEBOOKS))
    assert NAMES == sorted(_build.NOTEBOOKS) == sorted(EXPECTED)


def test_stored_notebooks_are_up_to_date_and_have_no_outputs():
    check = subprocess.run(
        [sys.executable, str(NOTEBOOKS / "_build.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    for name in NAMES:
        nb = nbformat.read(NOTEBOOKS / name, as_version=4)
        nbformat.validate(nb)
        assert nb.metadata.kernelspec.name == "python3"
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, (name, cell.id)


def test_the_recorded_agent_session_is_replayable():
    # Notebook 02 runs data/replay_claude.py as the `claude` executable: it must be executable
    # (git keeps the mode) and its recordings the byte-exact fixtures data/README.md says.
    assert os.access(NOTEBOOKS / "data" / "replay_claude.py", os.X_OK)
    for recording in sorted((NOTEBOOKS / "data" / "claude").glob("*.jsonl")):
        fixture = ROOT / "tests" / "fixtures" / "cli" / "claude" / recording.name
        assert recording.read_bytes() == fixture.read_bytes(), recording.name


@pytest.mark.kernel
@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs_top_to_bottom(name, monkeypatch, tmp_path, request):
    from nbclient import NotebookClient

    if name in SHARES_RAY:  # its Ray cells join the run's shared cluster (tests/conftest.py)
        monkeypatch.setenv("RAY_ADDRESS", request.getfixturevalue("ray_head"))

    # Use the recorded agent session even on a machine where `claude` is installed.
    monkeypatch.setenv("LION_NB_REPLAY", "1")
    # Notebook 07 replays its shipped cassette strictly: a changed prompt is a CassetteMiss, never
    # a silent re-recording into the repository.
    monkeypatch.setenv("LION_NB_CASSETTE_MODE", "replay")
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the notebooks' scratch folders land here
    # Ray's socket paths must stay under 107 bytes: its session folder cannot live in tmp_path
    ray_tmp = tempfile.mkdtemp(prefix="ray", dir="/tmp")
    monkeypatch.setenv("RAY_TMPDIR", ray_tmp)
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = NotebookClient(
        nb,
        timeout=180,  # per cell; the first local-model call loads the model
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS)}},  # cwd, as in JupyterLab
    )
    started = time.perf_counter()
    try:
        client.execute()  # raises CellExecutionError naming the failing cell
    finally:
        elapsed = time.perf_counter() - started
        shutil.rmtree(ray_tmp, ignore_errors=True)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, ARTIFACTS / name)
        timings = ARTIFACTS / "timings.json"
        data = json.loads(timings.read_text()) if timings.is_file() else {}
        data[name] = round(elapsed, 2)
        timings.write_text(json.dumps(data, indent=1, sort_keys=True))

    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    stderr = "".join(o["text"] for o in outputs if o.get("name") == "stderr")
    assert not any(bad in stderr for bad in BAD_STDERR), stderr
    text = "".join(_text_of(o) for o in outputs)
    expected = list(EXPECTED[name])
    if name in LIVE_OR_REPLAYED:
        from lion_nb.models.imodel import local_model_available

        expected.append(LIVE_OR_REPLAYED[name][0 if local_model_available() else 1])
    missing = [s for s in expected if s not in text]
    assert not missing, f"{name}: missing from the outputs: {missing}"
    # Every view carries a static HTML rendering, so the saved notebook reads without a kernel.
    for o in outputs:
        data = o.get("data", {})
        if "application/vnd.jupyter.widget-view+json" in data:
            assert "text/html" in data, (name, data.get("text/plain"))
