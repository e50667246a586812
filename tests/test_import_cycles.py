"""Small import cycles that must stay gone: in each pair the first module builds on the second,
which knows it only through a protocol of its own (``cassettes.active.Tape``,
``models.facts.Described``, ``models.probe.Probed``, ``widgets.token_panels.TokenHost``).

Every import of ``lion_nb.*`` counts, whatever its kind: at module level, under
``TYPE_CHECKING`` and inside functions — a type-only or lazy import still ties the two modules
together for a reader and for the type checker.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "lion_nb"

# (the module above, the module below): the one below must not import the one above
PAIRS = [
    ("lion_nb.cassettes.cassette", "lion_nb.cassettes.active"),
    ("lion_nb.models.imodel", "lion_nb.models.facts"),
    ("lion_nb.models.imodel", "lion_nb.models.probe"),  # facts -> probe -> imodel closed it
    ("lion_nb.widgets.chat_view", "lion_nb.widgets.token_panels"),
]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(name: str) -> bool:
    base = ROOT.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def imports_of(path: Path) -> set[str]:
    """The ``lion_nb`` modules ``path`` imports, by any kind of import anywhere in it
    (``from lion_nb.pkg import mod`` counts ``lion_nb.pkg.mod`` when that is a module)."""
    here = _module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            found.add(base)
            for alias in node.names:
                if _is_module(f"{base}.{alias.name}"):
                    found.add(f"{base}.{alias.name}")
    return {name for name in found if name == "lion_nb" or name.startswith("lion_nb.")}


def _graph() -> dict[str, set[str]]:
    return {_module_name(path): imports_of(path) for path in PACKAGE.rglob("*.py")}


def test_the_parser_sees_every_kind_of_import() -> None:
    """Module level, ``TYPE_CHECKING`` and function-local imports are all found."""
    source = PACKAGE / "models" / "imodel.py"
    found = imports_of(source)
    assert "lion_nb.cassettes.active" in found  # module level
    assert "lion_nb.models.capabilities" in found  # under TYPE_CHECKING
    assert "lion_nb.models.facts" in found  # inside functions


@pytest.mark.parametrize(("above", "below"), PAIRS)
def test_the_module_below_does_not_import_the_one_above(above: str, below: str) -> None:
    graph = _graph()
    assert below in graph[above], f"{above} no longer imports {below}: update this test"
    assert above not in graph[below], f"{below} imports {above}: an import cycle again"
