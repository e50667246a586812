"""What a person sees when a lion_nb call fails or is stopped in a notebook: a notebook run
through nbclient in a real ipykernel (7, and 6 where installed), counting the lines each error
prints in its cell's output.

A ``ContextWindowError``, an ``AuthenticationError`` (a real 401 from a loopback server) and a
``response_format="Person"`` (a ``ResponseFormatError``, still a ``TypeError``) print a short
block (class, message, fix, the cell's own line); an ``await branch.communicate(...)`` stopped by Kernel -> Interrupt (``interrupt_kernel`` while the scripted model streams slowly)
prints one line saying what the turn kept; with ``lion_nb.debug()`` or ``%xmode Verbose`` the full
traceback is back.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest

pytestmark = [pytest.mark.kernel, pytest.mark.slow, pytest.mark.timeout(300)]

IPYKERNEL6 = Path(sys.prefix) / "ipykernel6"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
SHORT = 8  # lines: what "a short block" means here

SETUP = """
import http.server, json, threading
from pathlib import Path
import lion_nb
from lion_nb import Branch, iModel
from lion_nb.signals import StreamDelta

class RejectsTheKey(http.server.BaseHTTPRequestHandler):  # what OpenAI answers a wrong key
    def do_POST(self):
        body = json.dumps({"error": {"message": "Incorrect API key provided",
                                     "type": "invalid_request_error",
                                     "code": "invalid_api_key"}}).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), RejectsTheKey)
threading.Thread(target=server.serve_forever, daemon=True).start()
base_url = f"http://127.0.0.1:{server.server_port}/v1"

def slow(flag):
    model = iModel(provider="scripted", replies=[{"text": "word " * 600, "delay": 0.05}])
    branch = Branch(chat_model=model)
    branch.observe(StreamDelta, handler=lambda s: Path(flag).write_text("streaming"))
    return branch

small = Branch(chat_model=iModel(provider="scripted", replies=["x"], context_window=20))
"""

CELLS = {
    "window": 'await small.communicate("word " * 200)',
    "auth": (
        'wrong = iModel(provider="openai", model="gpt-4.1-mini", base_url=base_url,'
        ' api_key="sk-wrong")\n'
        'await Branch(chat_model=wrong).communicate("hi")'
    ),
    "format": 'await small.communicate("hi", response_format="Person")',
    "stop": 'stopped = slow({flag_discard!r})\nawait stopped.communicate("hi")',
    "stop_record": 'kept = slow({flag_record!r})\nawait kept.communicate("hi", on_stop="record")',
    "debug": 'lion_nb.debug()\nawait small.communicate("word " * 200)',
    "verbose_on": "lion_nb.debug(False)\n%xmode Verbose",
    "verbose": 'await small.communicate("word " * 200)',
    "after": (
        "%xmode Context\n"
        "print(len(stopped.messages), [m.role for m in kept.messages])\n"
        "print('ipykernel', __import__('ipykernel').__version__)"
    ),
}
INTERRUPTED = {"stop": "flag_discard", "stop_record": "flag_record"}


def error_lines(cell: Any) -> list[str]:
    errors = [o for o in cell.outputs if o["output_type"] == "error"]
    assert len(errors) == 1, cell.outputs
    return ANSI.sub("", "\n".join(errors[0]["traceback"])).splitlines()


async def execute(nb: Any, flags: dict[str, Path], env: dict[str, str]) -> None:
    from nbclient import NotebookClient

    client = NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True)
    async with client.async_setup_kernel(env=env):
        for index, cell in enumerate(nb.cells):
            flag = flags.get(cell.metadata.get("name", ""))
            if flag is None:
                await client.async_execute_cell(cell, index)
                continue
            running = asyncio.ensure_future(client.async_execute_cell(cell, index))
            deadline = time.monotonic() + 60
            while not flag.exists():  # the reply streams: interrupt it mid-way
                assert time.monotonic() < deadline and not running.done(), "never streamed"
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.2)
            await client.km.interrupt_kernel()
            await running


@pytest.fixture(params=["ipykernel 7", "ipykernel 6"])
def kernel_env(request: pytest.FixtureRequest) -> dict[str, str]:
    env = dict(os.environ)
    env["LION_NB_TEST_KERNEL"] = request.param  # checked in the kernel's output
    if request.param == "ipykernel 6":
        if not (IPYKERNEL6 / "ipykernel").is_dir():
            message = f"ipykernel 6 is not installed in {IPYKERNEL6} (make installs it)"
            if os.environ.get("LION_NB_REQUIRE_LOCAL"):
                pytest.fail(message)
            pytest.skip(message)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(IPYKERNEL6), env.get("PYTHONPATH")]))
    return env


def test_errors_and_stops_print_a_few_lines_in_a_notebook(tmp_path: Path, kernel_env) -> None:
    flags = {name: tmp_path / f"{name}.flag" for name in INTERRUPTED}
    fill = {INTERRUPTED[name]: str(path) for name, path in flags.items()}
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(SETUP)]
    for name, source in CELLS.items():
        nb.cells.append(nbformat.v4.new_code_cell(source.format(**fill), metadata={"name": name}))
    asyncio.run(execute(nb, flags, kernel_env))
    cells = {c.metadata.get("name"): c for c in nb.cells}

    window = error_lines(cells["window"])
    assert len(window) <= SHORT, window
    assert window[0].startswith("ContextWindowError: the request")
    assert "does not fit the 20-token context window" in window[0]
    assert "fit_context=True" in window[0]  # the fix
    assert any(re.search(r"Cell In\[\d+\], line 1: await small\.communicate", x) for x in window)

    auth = error_lines(cells["auth"])
    assert len(auth) <= SHORT, auth
    assert auth[0].startswith("AuthenticationError: [openai] authentication failed:")
    assert "Incorrect API key provided" in auth[0] and "$OPENAI_API_KEY" in auth[0]
    assert "api_key=" in auth[0]  # the fix
    assert any("line 2: await Branch(chat_model=wrong).communicate" in x for x in auth)

    wrong_format = error_lines(cells["format"])
    assert len(wrong_format) <= SHORT, wrong_format
    assert wrong_format[0].startswith(
        "ResponseFormatError: response_format='Person' is a string: pass the pydantic model "
        "class itself"
    )  # the message names the fix
    assert any(
        'line 1: await small.communicate("hi", response_format="Person")' in x for x in wrong_format
    )

    assert error_lines(cells["stop"]) == ["stopped — nothing recorded"]
    assert error_lines(cells["stop_record"]) == ["stopped — the partial reply is kept"]

    for full in ("debug", "verbose"):
        lines = error_lines(cells[full])
        assert len(lines) > 30, lines  # IPython's own traceback, every frame
        assert any("lion_nb/operations/chat.py" in x for x in lines)
        assert lines[-1].startswith("ContextWindowError:")

    after = "".join(o.get("text", "") for o in cells["after"].outputs)
    assert "0 ['user', 'assistant']" in after  # the stops kept what their lines say
    assert f"{kernel_env['LION_NB_TEST_KERNEL']}." in after  # "ipykernel 6." / "ipykernel 7."


VIEWS = """
from lion_nb import Branch, BranchView, iModel
from lion_nb.flow.graph import Flow
from lion_nb.widgets.flow_view import FlowView

def slow():
    model = iModel(provider="scripted", replies=[{"text": "word " * 600, "delay": 0.05}])
    return Branch(chat_model=model)
"""


def stopped_cell(kernel, code: str, stop) -> list[str]:
    """Run ``code``, call ``stop()`` once the reply streams, and return the error's lines."""
    from tests.support.kernels import Cell

    msg_id = kernel.kc.execute(code)
    time.sleep(2.0)  # well into the 30 s reply
    stop()
    cell = Cell(status="?")
    kernel._drain_iopub(msg_id, 60, cell, msg_id)
    return ANSI.sub("", cell.error).splitlines()


def test_a_view_or_flow_stopped_while_a_cell_awaits_it_prints_one_line(kernel) -> None:
    kernel.run(VIEWS)
    kernel.run("view = BranchView(slow()); display(view)")
    lines = stopped_cell(kernel, "await view.asend('hi')", kernel.km.interrupt_kernel)
    assert lines == ["stopped — the partial reply is kept"]  # the view records what it showed
    kernel.run("flow = Flow(); flow.add('communicate', slow(), instruction='hi')")
    kernel.run("flow_view = FlowView(flow); display(flow_view)")
    model_id = kernel.value("flow_view.model_id")
    lines = stopped_cell(
        kernel, "await flow.run()", lambda: kernel.page_action(model_id, {"action": "stop"})
    )
    assert lines == ["stopped — nodes: 1 stopped; each keeps what it recorded"]


def test_an_interrupted_blocking_call_prints_one_line(kernel) -> None:
    """Blocking helpers (``lion_nb.sync``) and ``%%lion --wait`` are interrupted by a
    ``KeyboardInterrupt`` in the kernel's thread, not a cancellation: the run is stopped and
    settled before the cell ends (``communicate_sync``), or the wait ends while the view's
    reply goes on (``%%lion --wait``); each prints one line."""
    kernel.run(VIEWS + "from lion_nb.sync import communicate_sync\n%load_ext lion_nb")
    kernel.run("blocking = slow()")
    lines = stopped_cell(kernel, "communicate_sync(blocking, 'hi')", kernel.km.interrupt_kernel)
    assert lines == ["stopped — nothing recorded"]
    assert kernel.value("len(blocking.messages)") == 0
    kernel.run("lion_branch = slow()")
    lines = stopped_cell(kernel, "%%lion --wait\nhello", kernel.km.interrupt_kernel)
    assert lines == ["stopped waiting — the reply goes on in the view (its Stop ends it)"]
