"""``lion_nb.sampling.sample_distribution`` and its port in the page (``widgets/sampling.js``
``sampleDistribution``, what the sampling panel redraws from) agree: on a few hundred random
distributions and settings, in llama.cpp's order and temperature first, to 1e-9, and on which
alternatives are cut. The JS runs in node (skipped where node is not installed)."""

from __future__ import annotations

import json
import math
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from lion_nb.sampling import sample_distribution

ROOT = Path(__file__).resolve().parents[1]
MODULE = ROOT / "widgets" / "sampling.js"

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


def _case(rng: random.Random) -> dict[str, Any]:
    n = rng.randint(1, 20)
    logits = [rng.gauss(0, rng.choice([0.5, 2.0, 5.0])) for _ in range(n)]
    if rng.random() < 0.2:  # ties
        logits[rng.randrange(n)] = logits[0]
    top_lse = max(logits) + math.log(sum(math.exp(x - max(logits)) for x in logits))
    # a token's .top: (text, logprob), most likely first, from a bigger vocabulary (sums < 1)
    spill = rng.choice([0.0, 0.1, 1.0])
    top = sorted(
        ([f"t{i}", x - top_lse - spill] for i, x in enumerate(logits)), key=lambda a: -a[1]
    )
    if rng.random() < 0.1:
        top.append([f"t{n}", None])  # -inf: a probability rounded to 0 (JSON has no -inf)
    settings: dict[str, Any] = {
        "temperature": rng.choice([0.0, 0.05, 0.3, 0.8, 1.0, 1.5, 2.0, rng.uniform(0, 3)]),
        "top_k": rng.choice([None, 0, 1, 2, 3, 5, 40, rng.randint(0, 25)]),
        "top_p": rng.choice([None, 0.0, 0.5, 0.9, 0.95, 1.0, rng.random()]),
        "min_p": rng.choice([None, 0.0, 0.05, 0.1, 0.5, 1.0, rng.random()]),
        "temperature_first": rng.random() < 0.5,
    }
    return {"top": top, "settings": settings}


def _run_js(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    script = (
        f"import {{ sampleDistribution }} from {json.dumps(MODULE.as_uri())};"
        "let data = '';"
        "process.stdin.on('data', (c) => { data += c; });"
        "process.stdin.on('end', () => {"
        "  const cases = JSON.parse(data).map(({ top, settings }) =>"
        "    sampleDistribution(top.map(([t, lp]) => [t, lp === null ? -Infinity : lp]), settings));"
        "  console.log(JSON.stringify(cases));"
        "});"
    )
    out = subprocess.run(
        ["node", "--input-type=module", "-e", script],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def _python(case: dict[str, Any]) -> list[float]:
    top = [(t, -math.inf if lp is None else lp) for t, lp in case["top"]]
    return [p for _, p in sample_distribution(top, **case["settings"])]


def test_the_port_gives_the_same_probabilities_in_both_orders() -> None:
    rng = random.Random(33)
    cases = [_case(rng) for _ in range(400)]
    got = _run_js(cases)
    firsts = {c["settings"]["temperature_first"] for c in cases}
    assert firsts == {True, False}
    for case, js in zip(cases, got, strict=True):
        expected = _python(case)
        assert len(js["probs"]) == len(expected)
        for p_js, p_py in zip(js["probs"], expected, strict=True):
            assert abs(p_js - p_py) <= 1e-9, (case, js, expected)
        # a cut one is at 0 and named by the step that cut it; a survivor is not
        for p_py, cut in zip(expected, js["cutBy"], strict=True):
            if cut:
                assert p_py == 0, (case, js)
        assert math.isclose(sum(js["probs"]), 1.0, abs_tol=1e-9) or not any(expected)


def test_the_port_names_the_step_that_cut() -> None:
    top = [["a", math.log(0.5)], ["b", math.log(0.3)], ["c", math.log(0.15)], ["d", math.log(0.05)]]
    cases = [
        {"top": top, "settings": {"top_k": 3, "temperature": 1}},
        {"top": top, "settings": {"top_p": 0.75, "temperature": 1}},
        {"top": top, "settings": {"min_p": 0.5, "temperature": 1}},
        {"top": top, "settings": {"temperature": 0}},
        # temperature first: a hot temperature flattens, so top-p keeps more
        {"top": top, "settings": {"top_p": 0.75, "temperature": 3, "temperature_first": True}},
    ]
    got = [js["cutBy"] for js in _run_js(cases)]
    assert got == [
        ["", "", "", "top-k"],
        ["", "", "top-p", "top-p"],
        ["", "", "min-p", "min-p"],
        ["", "temperature 0", "temperature 0", "temperature 0"],
        ["", "", "", "top-p"],
    ]
