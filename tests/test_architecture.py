"""The layers of ARCHITECTURE.md, checked on every import of every module of ``lion_nb/``.

ARCHITECTURE.md's layer table and exceptions table are the data; this test reads them, finds
every import of ``lion_nb.*`` — at module level, under ``TYPE_CHECKING``, inside a function —
and fails on any that points up the table without an exception that covers it, on a module no
row places, on a function-local import that does not say why it is there (``lazy:``), and on an
import cycle outside the facade <-> operations contract.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "lion_nb"
ARCHITECTURE = ROOT / "ARCHITECTURE.md"
DISPLAY_HOOKS = {"_repr_html_", "_repr_markdown_", "_repr_mimebundle_", "__rich__"}
# Not lion_nb's code: a third-party package's stand-in, put on Ray's path only when asked.
VENDORED = PACKAGE / "flow" / "_ray_pythonpath"


# ----- the tables ----------------------------------------------------------------------------
def _table(text: str, name: str) -> list[list[str]]:
    """The rows of the markdown table between ``<!-- name... -->`` and ``<!-- /name -->``."""
    match = re.search(rf"<!-- {name}[^>]*-->(.*?)<!-- /{name} -->", text, re.S)
    assert match, f"ARCHITECTURE.md has no <!-- {name} --> table"
    rows = []
    for line in match.group(1).strip().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells[0] in ("layer", "from") or set(cells[0]) <= {"-", " "}:
            continue
        rows.append(cells)
    return rows


def _paths(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


@dataclass(frozen=True)
class Layers:
    names: list[str]  # bottom first
    patterns: dict[str, str]  # path pattern -> layer name

    @classmethod
    def read(cls, text: str) -> Layers:
        rows = _table(text, "layers")
        names = [row[0] for row in reversed(rows)]
        patterns = {path: row[0] for row in rows for path in _paths(row[1])}
        return cls(names, patterns)

    def layer_of(self, relpath: str) -> str | None:
        """The row of a module (``models/base.py``): a file named on a row, else its folder."""
        if relpath in self.patterns:
            return self.patterns[relpath]
        folder = relpath.rpartition("/")[0]
        while folder:
            if f"{folder}/" in self.patterns:
                return self.patterns[f"{folder}/"]
            folder = folder.rpartition("/")[0]
        return None

    def rank(self, relpath: str) -> int:
        layer = self.layer_of(relpath)
        assert layer is not None, relpath
        return self.names.index(layer)


@dataclass(frozen=True)
class Exception_:
    sources: list[str]
    targets: list[str]
    kind: str

    def covers(self, edge: Edge) -> bool:
        return (
            _matches(self.sources, edge.source)
            and _matches(self.targets, edge.target)
            and self.kind == edge.kind_for_exceptions
        )


def _matches(patterns: list[str], relpath: str) -> bool:
    return any(
        pattern == "any" or relpath == pattern or relpath.startswith(pattern)
        for pattern in patterns
        if pattern == "any" or pattern.endswith("/") or pattern.endswith(".py")
    )


def read_exceptions(text: str) -> list[Exception_]:
    rows = _table(text, "exceptions")
    return [
        Exception_(_paths(row[0]) or [row[0]], _paths(row[1]), row[2].strip().lower())
        for row in rows
    ]


# ----- the imports ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Edge:
    source: str  # lion_nb-relative path of the importing module
    target: str  # lion_nb-relative path of the imported module
    kind: str  # "module", "typing" or "function"
    function: str | None  # the innermost enclosing function
    line: int
    reason: bool  # a ``lazy:`` comment on or above the import

    @property
    def kind_for_exceptions(self) -> str:
        return "display hook" if self.function in DISPLAY_HOOKS else self.kind

    def __str__(self) -> str:
        where = f" in {self.function}()" if self.function else ""
        return (
            f"lion_nb/{self.source}:{self.line} imports lion_nb/{self.target} ({self.kind}{where})"
        )


def _relpath(module: str) -> str | None:
    """``lion_nb.models.base`` -> ``models/base.py`` (a package -> its ``__init__.py``)."""
    parts = module.split(".")[1:]
    base = PACKAGE.joinpath(*parts)
    if base.with_suffix(".py").is_file():
        return "/".join(parts) + ".py"
    if (base / "__init__.py").is_file():
        return "/".join([*parts, "__init__.py"])
    return None


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _targets(node: ast.Import | ast.ImportFrom, package: str) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join(anchor + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    found = [base]
    found += [f"{base}.{alias.name}" for alias in node.names if _relpath(f"{base}.{alias.name}")]
    return found


def _context(parents: dict[ast.AST, ast.AST], node: ast.AST) -> tuple[str, str | None]:
    kind, function = "module", None
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            kind, function = "function", function or node.name
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            if kind == "module":
                kind = "typing"
    return kind, function


def _has_reason(lines: list[str], node: ast.stmt) -> bool:
    """``lazy:`` in the comment block right above the import or on the statement's lines."""
    end = node.end_lineno or node.lineno
    first = node.lineno - 1  # 0-based index of the statement's first line
    while first > 0 and lines[first - 1].strip().startswith("#"):
        first -= 1
    return any("lazy:" in line for line in lines[first:end])


def edges_of(path: Path) -> list[Edge]:
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    lines = source.splitlines()
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    here = _module_of(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    relsource = path.relative_to(PACKAGE).as_posix()
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        kind, function = _context(parents, node)
        for target in _targets(node, package):
            if target != "lion_nb" and not target.startswith("lion_nb."):
                continue
            relpath = _relpath(target)
            if relpath is None or relpath == relsource or relpath == "__init__.py":
                continue
            found.append(
                Edge(relsource, relpath, kind, function, node.lineno, _has_reason(lines, node))
            )
    return found


def function_local_imports(path: Path) -> list[tuple[int, str, str, bool]]:
    """Every import inside a function (any package): (line, function, text, says why)."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    lines = source.splitlines()
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            kind, function = _context(parents, node)
            if kind == "function":
                assert function is not None
                found.append((node.lineno, function, ast.unparse(node), _has_reason(lines, node)))
    return found


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if VENDORED not in p.parents)


def _is_deprecated_path(path: Path, edge: Edge) -> bool:
    """A moved module's old path: its module ``__getattr__`` (or the whole module, if it holds
    nothing but re-exports) hands out the new place's names with a ``DeprecationWarning``."""
    source = path.read_text(encoding="utf-8")
    if "DeprecationWarning" not in source:
        return False
    if edge.function == "__getattr__":
        return True
    body = ast.parse(source).body
    return not any(isinstance(node, ast.FunctionDef | ast.ClassDef) for node in body)


# ----- the checks ----------------------------------------------------------------------------
TEXT = ARCHITECTURE.read_text(encoding="utf-8")
LAYERS = Layers.read(TEXT)
EXCEPTIONS = read_exceptions(TEXT)


def violations(layers: Layers, exceptions: list[Exception_]) -> list[str]:
    bad = []
    for path in modules():
        for edge in edges_of(path):
            if layers.rank(edge.target) <= layers.rank(edge.source):
                continue
            if any(rule.covers(edge) for rule in exceptions):
                continue
            if _is_deprecated_path(path, edge):
                continue
            bad.append(
                f"{edge}: {layers.layer_of(edge.source)} may not import "
                f"{layers.layer_of(edge.target)} (ARCHITECTURE.md's table)"
            )
    return bad


NEVER = [(_paths(row[0]), _paths(row[1])) for row in _table(TEXT, "never")]


def test_nothing_imports_what_its_row_never_may() -> None:
    """Rules stricter than the order: ``render/`` and ``viewmodels/`` import no operation,
    provider or port (any kind of import, display hooks of other modules aside)."""
    assert NEVER, "ARCHITECTURE.md's <!-- never --> table is empty"
    bad = [
        str(edge)
        for path in modules()
        for edge in edges_of(path)
        for sources, targets in NEVER
        if _matches(sources, edge.source) and _matches(targets, edge.target)
    ]
    assert bad == []


def test_the_tables_are_read() -> None:
    assert LAYERS.names[0] == "values" and LAYERS.names[-1] == "top"
    assert LAYERS.layer_of("models/base.py") == "model values"
    assert LAYERS.layer_of("models/openai.py") == "models"
    assert LAYERS.layer_of("session/branch.py") == "facade"
    assert {rule.kind for rule in EXCEPTIONS} == {"function", "typing", "display hook"}


def test_every_module_is_on_a_row() -> None:
    unplaced = [
        p.relative_to(PACKAGE).as_posix()
        for p in modules()
        if LAYERS.layer_of(p.relative_to(PACKAGE).as_posix()) is None
    ]
    assert unplaced == [], "add them to ARCHITECTURE.md's layer table"


def test_no_import_points_up_the_table() -> None:
    assert violations(LAYERS, EXCEPTIONS) == []


def test_the_check_fails_on_an_import_that_breaks_the_table() -> None:
    """The same check, on the same code, with the exceptions table emptied: the verbs' type-only
    imports of ``Branch`` are reported — so an upward import the table does not allow is too."""
    bad = violations(LAYERS, [])
    assert any(
        line.startswith("lion_nb/operations/") and "imports lion_nb/session/branch.py" in line
        for line in bad
    ), bad


def test_function_local_imports_say_why() -> None:
    """An import inside a function is there for import cost and says so (``# lazy: …``), or
    is one of the table's exceptions (the facade's verbs, ``Session.map``, a display hook)."""
    unexplained = []
    for path in modules():
        covered = {
            edge.line
            for edge in edges_of(path)
            if edge.kind == "function" and any(rule.covers(edge) for rule in EXCEPTIONS)
        }
        relpath = path.relative_to(PACKAGE).as_posix()
        for line, function, text, says_why in function_local_imports(path):
            if says_why or line in covered or function in DISPLAY_HOOKS:
                continue
            unexplained.append(f"lion_nb/{relpath}:{line} in {function}(): {text}")
    assert unexplained == []


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(component)
    return found


CONTRACT = ("session/branch.py", "session/session.py", "operations/")
SESSION_MAP = Exception_(["session/session.py"], ["flow/"], "function")


def import_graph() -> dict[str, set[str]]:
    """Every import of every kind, packages' ``__init__`` left out (importing ``lion_nb.x.y``
    runs them, but they re-export: the edge that matters is to the module defining a name) and
    ``Session.map``'s one upward call left out (the table allows it)."""
    graph: dict[str, set[str]] = {}
    for path in modules():
        relpath = path.relative_to(PACKAGE).as_posix()
        if path.name == "__init__.py":
            continue
        graph[relpath] = {
            edge.target
            for edge in edges_of(path)
            if not edge.target.endswith("__init__.py") and not SESSION_MAP.covers(edge)
        }
    return graph


def test_no_import_cycle_outside_the_facade_operations_contract() -> None:
    outside = [
        sorted(component)
        for component in _cycles(import_graph())
        if not all(member.startswith(CONTRACT) for member in component)
    ]
    assert outside == []


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": {"a"}, "c": {"a"}}, [{"a", "b"}]),
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"d"}}, [{"a", "b", "c"}]),
    ],
)
def test_the_cycle_finder(graph: dict[str, set[str]], expected: list[set[str]]) -> None:
    assert _cycles(graph) == expected
