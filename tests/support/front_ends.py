"""Front-end servers and chromium for the browser tests: JupyterLab, Notebook 7, Voilà and marimo
on 127.0.0.1 (each started by the tests, in its own process group, stopped after), Debian
chromium through playwright, and pages that record what a view must never do (dialogs, console
errors, requests off the loopback host). The fixtures in tests/browser/conftest.py use these."""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

CHROMIUM = "/usr/bin/chromium"
REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}


@dataclass
class Server:
    """A front end's server on 127.0.0.1, started by the tests (``url(path)`` adds the token
    when it has one)."""

    name: str
    port: int
    token: str
    root: Path
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str = "") -> str:
        url = f"{self.base}/{path.lstrip('/')}"
        if not self.token:
            return url
        return url + ("&" if "?" in url else "?") + f"token={self.token}"


class JupyterLab(Server):
    """The JupyterLab server the browser tests share; ``url()`` is Lab itself."""

    def url(self, path: str = "lab") -> str:
        return super().url(path)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def needs_chromium() -> None:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install -y chromium)")


@contextlib.contextmanager
def started_jupyter_lab(root: Path, home: Path) -> Iterator[JupyterLab]:
    """A JupyterLab server - a free loopback port, ``--ServerApp.port_retries=0``, a known
    token, ``root`` as its root directory, no update or news checks - stopped after."""
    log = root.parent / "jupyterlab.log"
    port, token = free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "IPYTHONDIR": str(home / "ipython"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    argv = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--allow-root",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    with open(log, "wb") as out:
        process = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=root, start_new_session=True
        )
    lab = JupyterLab("JupyterLab", port, token, root, process, log)
    try:
        wait_http(lab, "api/status", 60)
        yield lab
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait(timeout=5)


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """Debian's chromium, headless, driven by playwright (which cannot download its own)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--disable-dev-shm-usage",
            ],
        )
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class Watched:
    dialogs: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    external_requests: list[str] = field(default_factory=list)


@contextlib.contextmanager
def watched_page(
    browser: Any, *, width: int = 1280, height: int = 900, zoom: float = 1.0
) -> Iterator[Any]:
    """A fresh page that records dialogs (``page.watched.dialogs``, dismissed), console errors
    (``page.watched.console_errors``) and every request to a host other than 127.0.0.1 /
    localhost (``page.watched.external_requests``, aborted). ``zoom``: the page as the browser
    zoomed to it shows it in a ``width`` × ``height`` window (150 %: a layout 2/3 as wide and
    high, drawn at 1.5 device pixels a CSS pixel)."""
    viewport = {"width": round(width / zoom), "height": round(height / zoom)}
    context = browser.new_context(viewport=viewport, device_scale_factor=zoom)
    pg = context.new_page()
    watched = Watched()

    def on_dialog(dialog: Any) -> None:
        watched.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    def on_console(msg: Any) -> None:
        if msg.type == "error":
            watched.console_errors.append(msg.text)

    def route(route_: Any) -> None:
        host = urlparse(route_.request.url).hostname or ""
        if route_.request.url.startswith(("data:", "blob:", "about:")) or host in LOOPBACK:
            route_.continue_()
        else:
            watched.external_requests.append(route_.request.url)
            route_.abort()

    pg.on("dialog", on_dialog)
    pg.on("console", on_console)
    pg.on("pageerror", lambda exc: watched.console_errors.append(f"pageerror: {exc}"))
    context.route("**/*", route)
    pg.watched = watched
    pg.set_default_timeout(30_000)
    try:
        yield pg
    finally:
        context.close()


def screenshot(page: Any, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)
    return path


# ----- other front ends: Notebook 7, Voilà, marimo ----------------------------------------------


def front_env(home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTER_DATA_DIR": str(home / "data"),
        "IPYTHONDIR": str(home / "ipython"),
        "HOME": str(home),  # marimo's config and caches, nothing of the user's
        "XDG_CONFIG_HOME": str(home / "xdg-config"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }


def wait_http(server: Server, path: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"{server.name} exited early:\n{server.log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(server.url(path), timeout=2) as response:
                if response.status < 500:
                    return
        except urllib.error.HTTPError as exc:
            if exc.code < 500:
                return
            time.sleep(0.3)
        except OSError:
            time.sleep(0.3)
    raise TimeoutError(f"{server.name} did not start:\n{server.log.read_text()[-3000:]}")


@contextlib.contextmanager
def serve(
    name: str, argv: list[str], root: Path, home: Path, port: int, token: str, ready: str
) -> Iterator[Server]:
    """Start ``argv`` in its own process group in ``root``; stop it (the whole group) after."""
    log = root.parent / f"{name}.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=front_env(home),
            cwd=root,
            start_new_session=True,
        )
    server = Server(name, port, token, root, process, log)
    try:
        wait_http(server, ready)
        yield server
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, 15)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, 9)
            process.wait(timeout=5)


def notebook7_argv(root: Path, port: int, token: str) -> list[str]:
    """Jupyter Notebook 7 (``jupyter notebook --no-browser``) serving ``root``."""
    return [
        sys.executable,
        "-m",
        "notebook",
        "--no-browser",
        "--allow-root",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--JupyterNotebookApp.news_url=None",
        "--JupyterNotebookApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]


def voila_argv(root: Path, port: int) -> list[str]:
    """Voilà serving ``root`` as apps: each page ``voila/render/<name>.ipynb`` runs its
    notebook in a kernel of its own."""
    return [
        sys.executable,
        "-m",
        "voila",
        str(root),
        "--no-browser",
        "--Voila.ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        "--VoilaConfiguration.show_tracebacks=True",
    ]


def marimo_argv(root: Path, home: Path, port: int) -> list[str]:
    """``marimo edit <root> --headless --no-token`` with ``auto_instantiate = true`` (cells run
    when a notebook opens), in a config of its own written under ``home``."""
    config = home / "xdg-config" / "marimo" / "marimo.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        '[runtime]\nauto_instantiate = true\n\n[server]\nbrowser = "default"\n\n'
        "[completion]\ncopilot = false\n"
    )
    return [
        sys.executable,
        "-m",
        "marimo",
        "edit",
        str(root),
        "--headless",
        "--no-token",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--skip-update-check",
    ]
