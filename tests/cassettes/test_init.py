"""The cassette names resolve lazily: ``import lion_nb`` (and an iModel) load only the tiny
``active`` module; ``lion_nb.cassette`` / ``lion_nb.errors`` work after a bare import."""

from __future__ import annotations

import json
import subprocess
import sys


def test_cassettes_load_only_when_used() -> None:
    code = (
        "import sys, json, lion_nb\n"
        "from lion_nb import iModel\n"
        "iModel(provider='scripted')\n"
        "before = sorted(m for m in sys.modules if m.startswith('lion_nb.cassettes'))\n"
        "miss = lion_nb.errors.CassetteMiss\n"
        "tape = lion_nb.cassette('unused.jsonl', mode='off')\n"
        "print(json.dumps([before, miss.__name__, type(tape).__name__, "
        "'lion_nb.cassettes.cassette' in sys.modules]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    before, miss, tape, loaded = json.loads(out.stdout)
    assert before == ["lion_nb.cassettes", "lion_nb.cassettes.active"]
    assert (miss, tape, loaded) == ("CassetteMiss", "Cassette", True)


def test_the_cassette_function_is_not_shadowed_by_its_module() -> None:
    """Importing the submodule ``lion_nb.cassettes.cassette`` (as ``lion_nb.use_cassette``
    does) left ``from lion_nb.cassettes import cassette`` giving the module, not the function."""
    code = (
        "import types, lion_nb\n"
        "lion_nb.use_cassette\n"  # imports lion_nb.cassettes.cassette
        "from lion_nb.cassettes import cassette\n"
        "from lion_nb.cassettes.cassette import Cassette\n"
        "print(isinstance(cassette, types.ModuleType), callable(cassette), Cassette.__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True", "Cassette"]
