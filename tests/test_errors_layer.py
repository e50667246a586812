"""``lion_nb.errors`` is the bottom layer: it imports no model module (any import kind), and
``AuthenticationError`` still names a provider's key variables, which the provider registry
tells it when it loads."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import lion_nb.errors

SOURCE = Path(lion_nb.errors.__file__)


def test_errors_imports_nothing_above_the_values():
    tree = ast.parse(SOURCE.read_text(encoding="utf-8"))
    modules = [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)] + [
        a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names
    ]
    above = [
        m
        for m in modules
        if m.startswith("lion_nb.")
        and m.split(".")[1]
        in {
            "models",
            "cassettes",
            "incremental",
            "port",
            "operations",
            "session",
            "flow",
            "viewmodels",
            "render",
            "widgets",
        }
    ]
    assert above == []


def test_an_authentication_error_names_the_registrys_key_variables():
    code = (
        "import sys\n"
        "from lion_nb.errors import AuthenticationError\n"
        "assert 'lion_nb.models.registry' not in sys.modules\n"
        "print(AuthenticationError('denied', provider='gemini').hint)\n"
        "import lion_nb.models.registry\n"
        "print(AuthenticationError('denied', provider='gemini').hint)\n"
        "print(AuthenticationError('denied', provider='no-such').hint)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [
        "pass api_key=",  # nothing registered yet: no provider has been loaded
        "set $GEMINI_API_KEY or $GOOGLE_API_KEY, or pass api_key= to iModel(...)",
        "pass api_key=",
    ]
