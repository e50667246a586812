"""Notebooks in the JupyterLab the browser tests share: write one, open and run it from the Run
menu, and reach its kernel beside the page (run code, interrupt, stop every kernel)."""

from __future__ import annotations

import contextlib
import json
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.support.front_ends import JupyterLab


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
    """Open ``notebook_path`` in Lab, wait until its kernel is idle (the status bar says so:
    the idle dot lies while the kernel starts), then Run > Run All Cells."""
    # ?reset: a fresh workspace, so notebooks opened by earlier tests do not come back
    page.goto(lab.url(f"lab/tree/{notebook_path}?reset"))
    page.locator(".jp-Notebook >> visible=true").first.wait_for(timeout=60_000)
    page.get_by_text("ipykernel) | Idle").wait_for(timeout=60_000)
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()


def shutdown_kernels(lab: JupyterLab) -> None:
    """Stop every kernel of the server (tests leave no work running between them)."""
    with urllib.request.urlopen(lab.url("api/kernels"), timeout=5) as response:
        kernels = json.loads(response.read())
    for k in kernels:
        request = urllib.request.Request(lab.url(f"api/kernels/{k['id']}"), method="DELETE")
        urllib.request.urlopen(request, timeout=10).close()


@contextlib.contextmanager
def kernel_client(lab: JupyterLab) -> Iterator[Any]:
    """A second client of the kernel of the notebook open in Lab (the page is left alone:
    nothing in it is clicked or focused for what this client runs)."""
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


def held_until(release: Path) -> str:
    """The code a notebook cell starts with to wait until the test writes ``release``: with
    Run All the next cell starts as soon as the kernel has shown a view, and a busy page may
    draw the view after a short run has streamed past — the test releases the run once the
    view is on the page (and, while the cell waits, can mark what it wants to see kept)."""
    return (
        "import asyncio as _asyncio, pathlib as _pathlib\n"
        f"while not _pathlib.Path({str(release)!r}).exists():\n"
        "    await _asyncio.sleep(0.05)\n"
    )


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
    with urllib.request.urlopen(lab.url("api/sessions"), timeout=5) as response:
        sessions = json.loads(response.read())
    (kernel,) = [s["kernel"] for s in sessions if s["path"].endswith(".ipynb")]
    request = urllib.request.Request(
        lab.url(f"api/kernels/{kernel['id']}/interrupt"), method="POST", data=b""
    )
    urllib.request.urlopen(request, timeout=10).close()
