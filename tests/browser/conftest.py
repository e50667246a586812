"""Fixtures for the real-browser tests (the servers and chromium: tests/support/front_ends.py;
notebooks in Lab and their kernels: tests/support/lab_notebooks.py).

- ``jupyter_lab`` (session): a JupyterLab server started by the tests - a free loopback port,
  a known token, a temporary root directory. ``jupyter_lab.root`` is where notebooks go;
  ``jupyter_lab.url(path)``.
- ``browser`` (module): ``/usr/bin/chromium`` (``apt-get install chromium``; playwright cannot
  download its own browser here) with sandbox, GPU, sync and background networking off.
- ``page`` (function): a fresh page that records dialogs, console errors and every request to a
  host other than 127.0.0.1 / localhost (``page.watched``).
- ``notebook7``, ``voila`` (+ ``voila_root``), ``marimo`` (+ ``marimo_root``) (session): the
  other front ends; ``plain_browser`` and ``front_page``: chromium and a page without Lab.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.front_ends import (
    JupyterLab,
    Server,
    chromium,
    free_port,
    marimo_argv,
    needs_chromium,
    notebook7_argv,
    serve,
    started_jupyter_lab,
    voila_argv,
    watched_page,
)


@pytest.fixture(scope="session")
def jupyter_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterLab]:
    needs_chromium()
    root = tmp_path_factory.mktemp("lab-root")
    home = tmp_path_factory.mktemp("lab-home")
    with started_jupyter_lab(root, home) as lab:
        yield lab


@pytest.fixture(scope="module")  # playwright keeps an event loop running: not past the module
def browser(jupyter_lab: JupyterLab) -> Iterator[Any]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def page(browser: Any, jupyter_lab: JupyterLab) -> Iterator[Any]:
    with watched_page(browser) as pg:
        yield pg


@pytest.fixture(scope="session")
def notebook7(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Jupyter Notebook 7 (``jupyter notebook --no-browser``); ``root`` holds the notebooks."""
    needs_chromium()
    pytest.importorskip("notebook")
    root, home = tmp_path_factory.mktemp("nb7-root"), tmp_path_factory.mktemp("nb7-home")
    port, token = free_port(), secrets.token_hex(16)
    argv = notebook7_argv(root, port, token)
    with serve("notebook7", argv, root, home, port, token, "api/status") as server:
        yield server


@pytest.fixture(scope="session")
def voila_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the Voilà tests write their notebooks (before the first page is asked for)."""
    return tmp_path_factory.mktemp("voila-root")


@pytest.fixture(scope="session")
def voila(voila_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Voilà serving ``voila_root`` as apps (``voila <dir> --no-browser``): each page
    ``voila/render/<name>.ipynb`` runs its notebook in a kernel of its own."""
    needs_chromium()
    pytest.importorskip("voila")
    home = tmp_path_factory.mktemp("voila-home")
    port = free_port()
    with serve("voila", voila_argv(voila_root, port), voila_root, home, port, "", "") as server:
        yield server


@pytest.fixture(scope="session")
def marimo_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("marimo-root")


@pytest.fixture(scope="session")
def marimo(marimo_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``marimo edit <dir> --headless --no-token`` with ``auto_instantiate = true`` (cells run
    when a notebook opens) in a config of its own; pages: ``?file=<name>.py``."""
    needs_chromium()
    pytest.importorskip("marimo")
    home = tmp_path_factory.mktemp("marimo-home")
    port = free_port()
    argv = marimo_argv(marimo_root, home, port)
    with serve("marimo", argv, marimo_root, home, port, "", "") as server:
        yield server


@pytest.fixture(scope="module")
def plain_browser() -> Iterator[Any]:
    """chromium as ``browser`` gives it, without a JupyterLab server (the other front ends)."""
    needs_chromium()
    with chromium() as launched:
        yield launched


@pytest.fixture
def front_page(plain_browser: Any) -> Iterator[Any]:
    """A fresh page as ``page`` gives it (dialogs, console errors and requests off the loopback
    host recorded in ``page.watched``), for a front end other than JupyterLab."""
    with watched_page(plain_browser) as pg:
        yield pg
