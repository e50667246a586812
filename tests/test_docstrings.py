"""Every public name has a docstring: the API reference (``make docs``) is generated from them,
so a name without one is a blank entry. The public surface is ``docs/public_api.py``'s list of
modules; a class counts its own docstring and those of its public methods and properties."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_public_api():
    spec = importlib.util.spec_from_file_location(
        "docs_public_api", ROOT / "docs" / "public_api.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("docs_public_api", module)
    spec.loader.exec_module(module)
    return module


def test_every_public_name_has_a_docstring():
    missing = load_public_api().undocumented()
    assert not missing, (
        f"{len(missing)} public names have no docstring (the API reference shows them blank); "
        "write one for each:\n  " + "\n  ".join(missing)
    )


def test_the_surface_includes_every_exported_name():
    """``lion_nb.__all__`` is the front door: each of its classes and functions is listed."""
    import lion_nb

    api = load_public_api()
    listed = {qualname.rsplit(".", 1)[-1] for qualname, _ in api.public_objects()}
    exported = [
        name
        for name in lion_nb.__all__
        if not name.startswith("__") and callable(getattr(lion_nb, name))
    ]
    assert set(exported) <= listed, set(exported) - listed
