"""What lion_nb documents as public: the modules of the API reference and, in each, its names.

One list serves two readers: ``docs/build.py`` writes an API page per module from it, and
``tests/test_docstrings.py`` fails on any public name below without a docstring. A module's
public names are its ``__all__`` (else the names it defines that do not start with ``_``); a
public class adds its public methods and properties, and those of the lion_nb classes it
inherits from (what a user calls on a view includes what its base class defines).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from collections.abc import Iterator
from typing import Any

# Module → the one line its API page opens with. Order is the reference's order.
PUBLIC_MODULES: dict[str, str] = {
    "lion_nb": "Everything a notebook imports: the branch, the session, the models, the views.",
    "lion_nb.models": "Models and providers: `iModel`, the provider registry.",
    "lion_nb.messages": "The messages a branch records.",
    "lion_nb.progression": "A branch's ordered message ids: forks, alternatives.",
    "lion_nb.signals": "The lifecycle signals a branch emits.",
    "lion_nb.errors": "The errors lion_nb raises, each saying what to do.",
    "lion_nb.turns": "A turn's outcome: stop reasons, context fitting.",
    "lion_nb.usage": "Token usage and cost.",
    "lion_nb.operations.types": "The types an operation is written with (`Middle` and friends).",
    "lion_nb.compile": "How a branch's messages become a model's request.",
    "lion_nb.tokens": "Tokens of a reply: values, the token view.",
    "lion_nb.samples": "Samples of one turn, and how much they agree.",
    "lion_nb.sampling": "How a sampler turns a distribution into a token.",
    "lion_nb.cassettes": "Record model calls once, replay them anywhere.",
    "lion_nb.flow": "Graphs of operations, locally or on Ray.",
    "lion_nb.flow.grid": "The exploration grid: prompts × models, every cell a conversation.",
    "lion_nb.flow.errors": "What a flow or a grid raises: a failed dependency, a lost worker, a bad shape.",
    "lion_nb.flow.ray_start": "Starting or joining a Ray cluster for flows.",
    "lion_nb.export": "Exporting a conversation.",
    "lion_nb.magics": "The `%%lion` cell magic.",
}


def module_names(module_name: str) -> list[str]:
    """The public names of one module, in the order it gives them: its ``__all__``, else what
    it defines (a package: what its own modules define) under a name without ``_``."""
    module = importlib.import_module(module_name)
    names = getattr(module, "__all__", None)
    if names is None:
        names = [
            name
            for name, value in vars(module).items()
            if not name.startswith("_") and _defined_in(value, module_name)
        ]
    return [name for name in names if not name.startswith("__")]


def _defined_in(value: Any, module_name: str) -> bool:
    """Defined in the module, or for a package in one of its modules (what it re-exports)."""
    home = getattr(value, "__module__", None) or ""
    return home == module_name or home.startswith(module_name + ".")


def _ours(obj: Any) -> bool:
    return (getattr(obj, "__module__", None) or "").startswith("lion_nb")


def _docstring(member: Any) -> str:
    if isinstance(member, property):
        member = member.fget
    if isinstance(member, staticmethod | classmethod):
        member = member.__func__
    return (getattr(member, "__doc__", None) or "").strip()


def _class_members(cls: type) -> Iterator[tuple[str, Any]]:
    """A class's own public methods and properties, then those of its lion_nb bases. A
    member defined outside lion_nb is not its API (the test suite's doubles set on
    ``BranchView`` by ``tests/support/chat_view_doubles.py``)."""
    for klass in cls.__mro__:
        if not _ours(klass):
            continue
        for name, member in vars(klass).items():
            if name.startswith("_"):
                continue
            function = member.__func__ if isinstance(member, staticmethod | classmethod) else member
            if isinstance(member, property):
                function = member.fget
            elif not inspect.isfunction(function):
                continue
            if _ours(function):
                yield f"{klass.__module__}.{klass.__qualname__}.{name}", member


def public_objects() -> Iterator[tuple[str, Any]]:
    """Every documented name as (qualified name, object): functions, classes and their
    members; values (constants, type aliases, modules) are documented by their module."""
    seen: set[tuple[str, int]] = set()
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module_names(module_name):
            obj = getattr(module, name)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)) or not _ours(obj):
                continue
            key = (obj.__qualname__, id(obj))
            if key in seen:
                continue
            seen.add(key)
            yield f"{obj.__module__}.{obj.__qualname__}", obj
            if inspect.isclass(obj):
                for path, member in _class_members(obj):
                    if (path, id(member)) not in seen:  # a shared base's members: once
                        seen.add((path, id(member)))
                        yield path, member


def _class_docstring(cls: type) -> str:
    """A class's own docstring; the one ``@dataclass`` writes (its signature) is none."""
    doc = (cls.__dict__.get("__doc__") or "").strip()
    if dataclasses.is_dataclass(cls) and doc.startswith(cls.__name__ + "("):
        return ""
    return doc


def undocumented() -> list[str]:
    """The public names with no docstring (a class's own, not one it inherits)."""
    missing = []
    for qualname, obj in public_objects():
        doc = _class_docstring(obj) if inspect.isclass(obj) else _docstring(obj)
        if not doc:
            missing.append(qualname)
    return missing


if __name__ == "__main__":
    names = undocumented()
    print("\n".join(names))
    print(f"{len(names)} of {sum(1 for _ in public_objects())} public names have no docstring")
