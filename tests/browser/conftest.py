"""JupyterLab on 127.0.0.1 and Debian chromium through playwright, for real-browser tests.

Fixtures (reusable by any browser test module):

- ``jupyter_lab`` (session): a JupyterLab server started by the tests - a free loopback port,
  ``--ServerApp.port_retries=0``, a known token, a temporary root directory, no update or news
  checks. ``jupyter_lab.root`` is where notebooks go; ``jupyter_lab.url(path)``.
- ``browser`` (session): ``/usr/bin/chromium`` (``apt-get install chromium``; playwright cannot
  download its own browser here) with sandbox, GPU, sync and background networking off.
- ``page`` (function): a fresh page that records dialogs (``page.dialogs``, dismissed),
  console errors (``page.console_errors``) and every request to a host other than 127.0.0.1 /
  localhost (``page.external_requests``, aborted).

Helpers: ``write_notebook(lab, name, cells)`` and ``run_notebook_in_lab(page, lab, path)``,
which opens the notebook, waits for the status bar to say the kernel is idle (the idle dot lies
while the kernel starts) and runs it from the Run menu.
"""

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
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
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


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def jupyter_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterLab]:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install -y chromium)")
    root = tmp_path_factory.mktemp("lab-root")
    home = tmp_path_factory.mktemp("lab-home")
    log = root.parent / "jupyterlab.log"
    port, token = _free_port(), secrets.token_hex(16)
    repo = Path(__file__).resolve().parents[2]
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "IPYTHONDIR": str(home / "ipython"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(repo), os.environ.get("PYTHONPATH")])),
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
        _wait_http(lab, "api/status", 60)
        yield lab
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait(timeout=5)


@contextlib.contextmanager
def _chromium() -> Iterator[Any]:
    """Debian's chromium, headless, driven by playwright (which cannot download its own)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(
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
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="module")  # playwright keeps an event loop running: not past the module
def browser(jupyter_lab: JupyterLab) -> Iterator[Any]:
    with _chromium() as chromium:
        yield chromium


@dataclass
class Watched:
    dialogs: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    external_requests: list[str] = field(default_factory=list)


@pytest.fixture
def page(browser: Any, jupyter_lab: JupyterLab) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
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


def write_notebook(lab: JupyterLab, name: str, cells: list[str]) -> str:
    """Write a notebook of code cells into the Lab root; returns its path relative to it."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in cells]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    nbformat.write(nb, lab.root / name)
    return name


def run_notebook_in_lab(page: Any, lab: JupyterLab, notebook_path: str) -> None:
    """Open ``notebook_path`` in Lab, wait until its kernel is idle, then Run > Run All Cells."""
    # ?reset: a fresh workspace, so notebooks opened by earlier tests do not come back
    page.goto(lab.url(f"lab/tree/{notebook_path}?reset"))
    page.locator(".jp-Notebook >> visible=true").first.wait_for(timeout=60_000)
    page.get_by_text("ipykernel) | Idle").wait_for(timeout=60_000)
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()


def screenshot(page: Any, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)
    return path


def shutdown_kernels(lab: JupyterLab) -> None:
    """Stop every kernel of the server (tests leave no work running between them)."""
    import json

    with urllib.request.urlopen(lab.url("api/kernels"), timeout=5) as response:
        kernels = json.loads(response.read())
    for k in kernels:
        request = urllib.request.Request(lab.url(f"api/kernels/{k['id']}"), method="DELETE")
        urllib.request.urlopen(request, timeout=10).close()


@contextlib.contextmanager
def kernel_client(lab: JupyterLab) -> Iterator[Any]:
    """A second client of the kernel of the notebook open in Lab (the page is left alone:
    nothing in it is clicked or focused for what this client runs)."""
    import json

    from jupyter_client import BlockingKernelClient

    with urllib.request.urlopen(lab.url("api/sessions"), timeout=5) as response:
        sessions = json.loads(response.read())
    (kernel,) = [s["kernel"] for s in sessions if s["path"].endswith(".ipynb")]
    found = lab.root.parent.glob(f"lab-home*/runtime/kernel-{kernel['id']}.json")
    (path,) = {p.resolve() for p in found}  # lab-homeN and its lab-homecurrent link
    client = BlockingKernelClient(connection_file=str(path))
    client.load_connection_file()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=30)
        yield client
    finally:
        client.stop_channels()


def kernel_reply(client: Any, msg_id: str, timeout: float = 60) -> dict[str, Any]:
    """The execute reply to ``msg_id`` (what a cell ended with)."""
    deadline = time.monotonic() + timeout
    while True:
        reply = client.get_shell_msg(timeout=max(0.1, deadline - time.monotonic()))
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply["content"]  # type: ignore[no-any-return]


def kernel_execute(lab: JupyterLab, code: str, timeout: float = 60) -> str:
    """Run ``code`` in the notebook's kernel as a cell would (top-level ``await`` works);
    returns what it printed."""
    out: list[str] = []
    with kernel_client(lab) as client:
        reply = client.execute_interactive(
            code,
            timeout=timeout,
            output_hook=lambda msg: (
                out.append(msg["content"].get("text", "")) if msg["msg_type"] == "stream" else None
            ),
        )
    assert reply["content"]["status"] == "ok", reply["content"]
    return "".join(out)


def interrupt_kernel(lab: JupyterLab) -> None:
    """Kernel -> Interrupt, through the server's API (what the menu item sends)."""
    import json

    with urllib.request.urlopen(lab.url("api/sessions"), timeout=5) as response:
        sessions = json.loads(response.read())
    (kernel,) = [s["kernel"] for s in sessions if s["path"].endswith(".ipynb")]
    request = urllib.request.Request(
        lab.url(f"api/kernels/{kernel['id']}/interrupt"), method="POST", data=b""
    )
    urllib.request.urlopen(request, timeout=10).close()


# ----- other front ends: Notebook 7, Voilà, marimo ----------------------------------------------


def _front_env(home: Path) -> dict[str, str]:
    repo = Path(__file__).resolve().parents[2]
    return {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTER_DATA_DIR": str(home / "data"),
        "IPYTHONDIR": str(home / "ipython"),
        "HOME": str(home),  # marimo's config and caches, nothing of the user's
        "XDG_CONFIG_HOME": str(home / "xdg-config"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(repo), os.environ.get("PYTHONPATH")])),
    }


def _wait_http(server: Server, path: str, timeout: float = 90) -> None:
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
def _serve(
    name: str, argv: list[str], root: Path, home: Path, port: int, token: str, ready: str
) -> Iterator[Server]:
    """Start ``argv`` in its own process group in ``root``; stop it (the whole group) after."""
    log = root.parent / f"{name}.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=_front_env(home),
            cwd=root,
            start_new_session=True,
        )
    server = Server(name, port, token, root, process, log)
    try:
        _wait_http(server, ready)
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


def _needs_chromium() -> None:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install -y chromium)")


@pytest.fixture(scope="session")
def notebook7(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Jupyter Notebook 7 (``jupyter notebook --no-browser``); ``root`` holds the notebooks."""
    _needs_chromium()
    pytest.importorskip("notebook")
    root, home = tmp_path_factory.mktemp("nb7-root"), tmp_path_factory.mktemp("nb7-home")
    port, token = _free_port(), secrets.token_hex(16)
    argv = [
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
    with _serve("notebook7", argv, root, home, port, token, "api/status") as server:
        yield server


@pytest.fixture(scope="session")
def voila_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the Voilà tests write their notebooks (before the first page is asked for)."""
    return tmp_path_factory.mktemp("voila-root")


@pytest.fixture(scope="session")
def voila(voila_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Voilà serving ``voila_root`` as apps (``voila <dir> --no-browser``): each page
    ``voila/render/<name>.ipynb`` runs its notebook in a kernel of its own."""
    _needs_chromium()
    pytest.importorskip("voila")
    home = tmp_path_factory.mktemp("voila-home")
    port = _free_port()
    argv = [
        sys.executable,
        "-m",
        "voila",
        str(voila_root),
        "--no-browser",
        "--Voila.ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        "--VoilaConfiguration.show_tracebacks=True",
    ]
    with _serve("voila", argv, voila_root, home, port, "", "") as server:
        yield server


@pytest.fixture(scope="session")
def marimo_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("marimo-root")


@pytest.fixture(scope="session")
def marimo(marimo_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``marimo edit <dir> --headless --no-token`` with ``auto_instantiate = true`` (cells run
    when a notebook opens) in a config of its own; pages: ``?file=<name>.py``."""
    _needs_chromium()
    pytest.importorskip("marimo")
    home = tmp_path_factory.mktemp("marimo-home")
    config = home / "xdg-config" / "marimo" / "marimo.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        '[runtime]\nauto_instantiate = true\n\n[server]\nbrowser = "default"\n\n'
        "[completion]\ncopilot = false\n"
    )
    port = _free_port()
    argv = [
        sys.executable,
        "-m",
        "marimo",
        "edit",
        str(marimo_root),
        "--headless",
        "--no-token",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--skip-update-check",
    ]
    with _serve("marimo", argv, marimo_root, home, port, "", "") as server:
        yield server


@pytest.fixture(scope="module")
def plain_browser() -> Iterator[Any]:
    """chromium as ``browser`` gives it, without a JupyterLab server (the other front ends)."""
    _needs_chromium()
    with _chromium() as chromium:
        yield chromium


@pytest.fixture
def front_page(plain_browser: Any) -> Iterator[Any]:
    """A fresh page as ``page`` gives it (dialogs, console errors and requests off the loopback
    host recorded in ``page.watched``), for a front end other than JupyterLab."""
    context = plain_browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    watched = Watched()

    def route(route_: Any) -> None:
        host = urlparse(route_.request.url).hostname or ""
        if route_.request.url.startswith(("data:", "blob:", "about:")) or host in LOOPBACK:
            route_.continue_()
        else:
            watched.external_requests.append(route_.request.url)
            route_.abort()

    def on_dialog(dialog: Any) -> None:
        watched.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    pg.on("dialog", on_dialog)
    pg.on("console", lambda m: watched.console_errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda exc: watched.console_errors.append(f"pageerror: {exc}"))
    context.route("**/*", route)
    pg.watched = watched
    pg.set_default_timeout(30_000)
    try:
        yield pg
    finally:
        context.close()
