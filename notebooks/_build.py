"""Generate the tutorial notebooks from the cell sources below.

The notebooks are written here as code so that a change to them is reviewable as a diff, and
stored without outputs (tests/e2e/test_notebooks.py executes every one of them with nbclient and
checks that the stored files match this script).

    .venv/bin/python notebooks/_build.py           # rewrite notebooks/*.ipynb
    .venv/bin/python notebooks/_build.py --check   # exit 1 if a stored notebook differs

Each notebook's cells live in a module of ``notebooks/_src/`` (``nb01_quickstart.py`` ...) as a
list of ``md(...)`` / ``code(...)`` calls; this script only assembles, validates and writes them.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent

NOTEBOOKS = {
    "01_quickstart.ipynb": "_src.nb01_quickstart",
    "02_streaming_run.ipynb": "_src.nb02_streaming_run",
    "03_react_rounds.ipynb": "_src.nb03_react_rounds",
    "04_structured_output.ipynb": "_src.nb04_structured_output",
    "05_progression_and_forks.ipynb": "_src.nb05_progression_and_forks",
    "06_extending_operations.ipynb": "_src.nb06_extending_operations",
    "07_cassettes.ipynb": "_src.nb07_cassettes",
    "08_flows.ipynb": "_src.nb08_flows",
    "09_providers.ipynb": "_src.nb09_providers",
    "10_tokens.ipynb": "_src.nb10_tokens",
    "11_grid.ipynb": "_src.nb11_grid",
}

METADATA = {
    "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
    "language_info": {"name": "python", "pygments_lexer": "ipython3"},
}


def build(module_name: str) -> nbformat.NotebookNode:
    """One notebook from its cell module. Cell ids are fixed (``c00``, ``c01`` ...) so that
    rebuilding an unchanged notebook gives the same file."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))  # so that ``_src`` imports as a package
    module = importlib.import_module(module_name)
    nb = nbformat.v4.new_notebook(metadata=METADATA)
    for number, (kind, source) in enumerate(module.CELLS):
        make = nbformat.v4.new_markdown_cell if kind == "md" else nbformat.v4.new_code_cell
        cell = make(source)
        cell.id = f"c{number:02d}"
        nb.cells.append(cell)
    nbformat.validate(nb)
    return nb


def render(nb: nbformat.NotebookNode) -> str:
    return nbformat.writes(nb) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args(argv)
    stale = []
    for filename, module_name in NOTEBOOKS.items():
        path = HERE / filename
        text = render(build(module_name))
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(filename)
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(HERE.parent)}")
    if stale:
        print("out of date (run notebooks/_build.py):", ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
