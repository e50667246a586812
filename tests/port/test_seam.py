"""The seam below the operations: ``lion_nb.port`` imports nothing of the facade (every import
kind counted: module level, under ``TYPE_CHECKING``, inside functions), the operations reach
the facade only as a type (``Branch``/``Session`` under ``TYPE_CHECKING``), and a port works
with any host that fills ``BranchHost`` — not only a ``Branch``."""

from __future__ import annotations

import ast
import uuid
from pathlib import Path
from typing import Any

from lion_nb.messages import Instruction, RoledMessage
from lion_nb.port.branch_port import BranchPort
from lion_nb.port.bus import SignalBus
from lion_nb.port.host import BranchHost
from lion_nb.port.lifecycle import observed_run
from lion_nb.port.tools import ToolRegistry
from lion_nb.progression import Messages
from lion_nb.signals import MessageAdded, RunEnd, RunStart, Signal
from tests.support.scripted import scripted

PACKAGE = Path(__file__).resolve().parents[2] / "lion_nb"


def _imports(path: Path) -> list[tuple[int, str, bool]]:
    """(line, module, under TYPE_CHECKING) for every import in ``path``, at any depth."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            typing_only |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name, id(node) in typing_only) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module, id(node) in typing_only))
            found += [
                (node.lineno, f"{node.module}.{a.name}", id(node) in typing_only)
                for a in node.names
            ]
    return found


def _reaches(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_the_port_imports_no_module_of_the_facade():
    bad = [
        f"{path.relative_to(PACKAGE)}:{line}: {module}"
        for path in sorted((PACKAGE / "port").glob("*.py"))
        for line, module, _ in _imports(path)
        if _reaches(module, "lion_nb.session") or module == "lion_nb.persist"
    ]
    assert bad == []


def test_operations_see_the_facade_only_as_a_type():
    allowed = {"lion_nb.session.branch", "lion_nb.session.session"}
    bad = [
        f"{path.relative_to(PACKAGE)}:{line}: {module}"
        for path in sorted((PACKAGE / "operations").glob("*.py"))
        for line, module, typing_only in _imports(path)
        if (_reaches(module, "lion_nb.session") or module == "lion_nb.persist")
        and not (typing_only and any(_reaches(module, a) for a in allowed))
    ]
    assert bad == []


class _Host:
    """The least a port needs: no Branch, no Session."""

    def __init__(self, model: Any) -> None:
        self.id = uuid.uuid4()
        self.user: str | None = None
        self.system = None
        self.messages = Messages()
        self.chat_model = model
        self.parse_model = model
        self.tools = ToolRegistry()
        self.signals = SignalBus()
        self.context_providers: list[Any] = []

    def add_message(self, message: RoledMessage) -> RoledMessage:
        self.messages._append(message)
        self.signals.emit(MessageAdded(branch_id=self.id, message=message))
        return message

    def retract_message(self, message_id: uuid.UUID, *, reason: str) -> RoledMessage:
        raise NotImplementedError

    def clear_messages(self) -> None:
        self.messages._clear(keep_system=True)

    def to_dict(self) -> dict[str, Any]:
        return {"id": str(self.id)}


async def test_a_port_serves_any_host_that_fills_the_protocol():
    host: BranchHost = _Host(scripted("fine"))
    seen: list[Signal] = []
    host.signals.observe(handler=seen.append)
    port = BranchPort.of(host)

    async def turn() -> str:
        port.record(Instruction(instruction="how are you?"))
        return "done"

    assert await observed_run(port, "custom", turn()) == "done"
    assert [type(s) for s in seen] == [RunStart, MessageAdded, RunEnd]
    assert port.history()[0].instruction == "how are you?"
    assert port.chat_model is host.chat_model
