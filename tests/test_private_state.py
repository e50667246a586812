"""Nothing outside session/ reads a branch's, a model's or a view's private state: operations,
flows and views go through the branch's public methods and its port. (What each folder may
import is ARCHITECTURE.md's layer table, checked by tests/test_architecture.py.)"""

from __future__ import annotations

import ast
import pathlib
import re

import lion_nb

ROOT = pathlib.Path(lion_nb.__file__).parent
SESSION = ROOT / "session"
# A class reading another instance of itself is not a reach-in: (module, expression).
OWN_CLASS = {("progression.py", "other._order")}  # Progression.__eq__


def outside_session() -> list[pathlib.Path]:
    """Every module of lion_nb but session/'s: each folder and the top-level modules."""
    return [path for path in sorted(ROOT.rglob("*.py")) if SESSION not in path.parents]


def branch_private_names() -> set[str]:
    """A branch's private state: the underscored attributes and methods of ``Branch``, its
    ``BranchPort``, its ``Session`` and its ``Messages`` record (``_repr_html_`` & co. are
    protocols, not state)."""
    from lion_nb.port.branch_port import BranchPort
    from lion_nb.progression import Messages
    from lion_nb.session.branch import Branch
    from lion_nb.session.session import Session

    names = set(vars(Branch())) | set(vars(Session()))
    for cls in (Branch, BranchPort, Session, Messages):
        names |= set(vars(cls)) | set(getattr(cls, "__slots__", ()))
    return {n for n in names if n.startswith("_") and not n.endswith("_")}


def private_reads(path: pathlib.Path, names: set[str]) -> list[str]:
    """``x._name`` (``x`` not ``self``/``cls``) and ``getattr(x, "_name")`` for ``names``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr in names:
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value in names
        ):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_nothing_outside_session_reaches_into_a_branch_or_model() -> None:
    """The reach-in figure, for every folder but session/ (operations,
    flow, views, renderers, models, cassettes, incremental, top-level modules): no
    ``branch._x``, ``model._x``..."""
    reach_in = re.compile(
        r"\b(branch|session|b|br|other|target|source|origin|model|imodel|view)\._[a-z]\w*"
    )
    bad = [
        f"{path.relative_to(ROOT)}:{number}: {match.group()}"
        for path in outside_session()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for match in reach_in.finditer(line)
        if (str(path.relative_to(ROOT)), match.group()) not in OWN_CLASS
    ]
    assert bad == []


def test_no_module_outside_session_reads_a_branchs_private_state() -> None:
    """Whatever the receiver is called (``node.branch._emit``, ``self._b._messages``,
    ``getattr(x, "_drain")``): the branch's private names are session/'s own."""
    names = branch_private_names()
    assert {
        "_messages",
        "_emit",
        "_observers",
        "_drain",
        "_operation_manager",
        "_chat_model",
        "_observed",
        "_observed_run",
        "_append",
        "_adopts",
    } <= names
    folders = {path.relative_to(ROOT).parts[0] for path in outside_session()}
    assert {"operations", "flow", "viewmodels", "widgets", "render", "models"} <= folders
    assert {"cassettes", "incremental", "progression.py", "signals.py"} <= folders
    bad = [
        f"{path.relative_to(ROOT)}:{read}"
        for path in outside_session()
        for read in private_reads(path, names)
    ]
    assert bad == []
