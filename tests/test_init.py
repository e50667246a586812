"""``lion_nb``'s public surface: every lazily resolved name is in ``__all__`` and resolves;
``__version__``, ``pyproject.toml`` and the CHANGELOG's top section name the same version."""

from __future__ import annotations

import pathlib
import re
import tomllib
from importlib import import_module

import lion_nb

ROOT = pathlib.Path(__file__).resolve().parents[1]
EAGER = {
    "__version__",
    "errors",
    "load_ipython_extension",
    "tokens",
}  # defined in lion_nb/__init__.py


def test_every_lazy_name_is_exported_and_nothing_else_but_the_eager_ones() -> None:
    exported = set(lion_nb.__all__)
    assert len(exported) == len(lion_nb.__all__)  # no name twice
    assert set(lion_nb._LAZY) <= exported, set(lion_nb._LAZY) - exported
    assert exported == set(lion_nb._LAZY) | EAGER
    assert set(lion_nb.__all__) <= set(dir(lion_nb))


def test_every_exported_name_resolves() -> None:
    for name in lion_nb.__all__:
        value = getattr(lion_nb, name)
        assert value is not None, name
        module = lion_nb._LAZY.get(name)
        if module is not None:
            assert value is getattr(import_module(module), name), name


def test_errors_stay_under_lion_nb_errors() -> None:
    exported = [getattr(lion_nb, name) for name in lion_nb.__all__]
    assert not [v for v in exported if isinstance(v, type) and issubclass(v, BaseException)]
    assert lion_nb.errors is import_module("lion_nb.errors")


def test_version_agrees_with_pyproject_and_the_changelog() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    top = re.search(r"^## (\d+\.\d+\.\d+)\b", changelog, re.MULTILINE)
    assert top is not None, "CHANGELOG.md has no '## X.Y.Z' section"
    assert lion_nb.__version__ == project["version"] == top.group(1)
