"""A real ipykernel and a blocking client: run cells, read their outputs, and watch IOPub comm
traffic (the fixtures in tests/kernel/conftest.py start them)."""

from __future__ import annotations

import json
import os
import queue
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1]
# ipykernel 6, beside the venv's own ipykernel 7: ``make`` installs it there (pip --target), and
# a kernel started with it first on PYTHONPATH runs on it with the venv's other packages
IPYKERNEL6 = Path(sys.prefix) / "ipykernel6"


@dataclass
class Cell:
    status: str
    stdout: str = ""
    stderr: str = ""
    error: str = ""
    outputs: list[dict[str, Any]] = field(default_factory=list)


class Kernel:
    """A started ipykernel plus a blocking client. ``comm`` collects every comm message seen
    on IOPub (from any cell, also between cells) as ``(time, msg_type, content)``."""

    def __init__(self, km: Any, kc: Any) -> None:
        self.km, self.kc = km, kc
        self.comm: list[tuple[float, str, dict[str, Any]]] = []

    def _drain_iopub(
        self,
        until_idle_of: str | None,
        timeout: float,
        cell: Cell | None,
        cell_id: str | None = None,
        *,
        lenient: bool = False,
    ) -> bool:
        """Collect IOPub messages for ``timeout`` seconds, or until the idle status of
        ``until_idle_of`` (then ``lenient`` returns quietly on timeout instead of raising).
        True when that idle status was seen."""
        cell_id = cell_id or until_idle_of
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if until_idle_of is not None and not lenient:
                    raise TimeoutError("kernel did not finish the cell in time")
                return False
            try:
                msg = self.kc.get_iopub_msg(timeout=min(remaining, 0.05))
            except queue.Empty:
                continue
            kind = msg["header"]["msg_type"]
            parent = msg["parent_header"].get("msg_id")
            if kind in ("comm_open", "comm_msg", "comm_close"):
                self.comm.append((time.monotonic(), kind, msg["content"]))
            if cell is not None and parent == cell_id:
                if kind == "stream":
                    name = msg["content"]["name"]
                    if name == "stdout":
                        cell.stdout += msg["content"]["text"]
                    else:
                        cell.stderr += msg["content"]["text"]
                elif kind in ("display_data", "execute_result"):
                    cell.outputs.append(msg["content"]["data"])
                elif kind == "error":
                    cell.error = "\n".join(msg["content"]["traceback"])
            if (
                until_idle_of is not None
                and kind == "status"
                and parent == until_idle_of
                and msg["content"]["execution_state"] == "idle"
            ):
                return True

    def run(self, code: str, timeout: float = 60, *, check: bool = True) -> Cell:
        msg_id = self.kc.execute(code)
        cell = Cell(status="?")
        deadline = time.monotonic() + timeout
        reply = None
        idle = False
        while reply is None:
            if time.monotonic() > deadline:
                raise TimeoutError(f"kernel did not answer the cell in time:\n{code}")
            idle = idle or self._drain_iopub(msg_id, 0.05, cell, msg_id, lenient=True)
            try:
                msg = self.kc.get_shell_msg(timeout=0.05)
            except queue.Empty:
                continue
            if msg["parent_header"].get("msg_id") == msg_id:
                reply = msg
        # outputs of the cell arrive on IOPub before its idle status; wait for that (briefly:
        # the reply already says the cell is done)
        if not idle:
            self._drain_iopub(msg_id, 5, cell, msg_id, lenient=True)
        cell.status = reply["content"]["status"]
        if check and cell.status != "ok":
            raise AssertionError(f"cell failed:\n{code}\n{cell.error}{cell.stderr}")
        return cell

    def value(self, expr: str, timeout: float = 60) -> Any:
        """``expr`` evaluated in the kernel, returned through JSON."""
        cell = self.run(f"import json as _j; print(_j.dumps({expr}))", timeout)
        return json.loads(cell.stdout.strip().splitlines()[-1])

    def pump(self, seconds: float) -> None:
        """Collect IOPub traffic for ``seconds`` without running anything."""
        self._drain_iopub(None, seconds, None)

    def click(self, model_id: str) -> None:
        """What a browser sends when a Button is clicked: a comm message to its model."""
        self.page_action(model_id, {"event": "click"})

    def page_action(self, model_id: str, content: dict[str, Any]) -> None:
        """A custom message from the page to a widget (``model.send(content)`` in an ES
        module: the front-end views' ``{"action": ...}``)."""
        data = {"comm_id": model_id, "data": {"method": "custom", "content": content}}
        self.kc.shell_channel.send(self.kc.session.msg("comm_msg", data))


def started_kernel(pythonpath: Path | None = None) -> Iterator[Kernel]:
    """A real ipykernel (with ``pythonpath`` first on its PYTHONPATH), tests/ on its
    ``sys.path``, shut down after."""
    from jupyter_client.manager import start_new_kernel

    extra: dict[str, Any] = {}
    if pythonpath is not None:
        paths = [str(pythonpath), *filter(None, [os.environ.get("PYTHONPATH")])]
        extra["env"] = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    km, kc = start_new_kernel(kernel_name="python3", startup_timeout=60, **extra)
    k = Kernel(km, kc)
    try:
        k.run(f"import sys; sys.path.insert(0, {str(TESTS)!r})")
        yield k
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
