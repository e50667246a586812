"""Build the docs site into ``site/``, offline, from the repository (``make docs``).

    .venv/bin/python docs/build.py                 # execute the notebooks, build site/
    .venv/bin/python docs/build.py --no-execute    # tutorials without outputs (a quick look)

1. **Tutorials:** every notebook of ``notebooks/_build.py`` is executed in a real kernel (its
   shipped cassettes replayed strictly, the recorded agent session, a local Ray cluster where it
   uses one) and written to ``docs/tutorials/NN_name.md``. A view's output is its static HTML
   transcript (every view carries one beside its live widget), never the widget's placeholder.
   Its HTML goes to a sidecar (``docs/tutorials/_outputs/``) that ``docs/hooks.py`` puts in
   the page after Markdown, so Markdown never reads it.
2. **API reference:** one page per module of ``docs/public_api.py`` (``docs/reference/``),
   each public name rendered by mkdocstrings from its docstring, once: a name a module
   re-exports links to the page that documents it.
3. The changelog and the security policy are copied in; ``mkdocs.gen.yml`` adds the navigation
   (tutorials and reference pages are known only now) to ``mkdocs.yml``; ``mkdocs build``
   (strict: a broken link or a docstring mkdocstrings cannot read fails the build) writes
   ``site/``.

Generated files (``docs/tutorials/``, ``docs/reference/``, ``docs/changelog.md``,
``docs/security.md``, ``mkdocs.gen.yml``) are not committed.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import nbformat

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
NOTEBOOKS = ROOT / "notebooks"
TUTORIALS = DOCS / "tutorials"
OUTPUTS = TUTORIALS / "_outputs"
REFERENCE = DOCS / "reference"
GENERATED_CONFIG = ROOT / "mkdocs.gen.yml"

sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(DOCS))
import public_api  # noqa: E402  (docs/ is not a package: its modules are found by path)

# A rich output is shown by the first of these it has. The widget's own mime type is never
# shown: outside a kernel it is only "Loading widget…".
SHOWN = ("text/html", "image/svg+xml", "image/png", "text/markdown", "text/plain")
WIDGET = "application/vnd.jupyter.widget-view+json"


# --- tutorials -----------------------------------------------------------------------------


def notebook_names() -> list[str]:
    sys.path.insert(0, str(NOTEBOOKS))
    try:
        import _build
    finally:
        sys.path.remove(str(NOTEBOOKS))
    return list(_build.NOTEBOOKS)


def execute(name: str, scratch: Path) -> nbformat.NotebookNode:
    """Run one notebook top to bottom in a fresh kernel, as the test suite does."""
    from nbclient import NotebookClient
    from traitlets.config import Config

    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    env = {
        "LION_NB_REPLAY": "1",  # the recorded agent session, even where `claude` is installed
        "LION_NB_CASSETTE_MODE": "replay",  # shipped cassettes replay strictly, never re-record
        "TMPDIR": str(scratch),
        # Ray's socket paths must stay under 107 bytes
        "RAY_TMPDIR": tempfile.mkdtemp(prefix="ray", dir="/tmp"),
    }
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)  # the kernel inherits the build's environment
    # IPC sockets in the scratch folder: nothing listens on a TCP port while it builds (nbclient
    # makes the kernel manager with this configuration, and stops the kernel and its channels)
    ipc = Config({"KernelManager": {"transport": "ipc", "ip": str(scratch / "kernel")}})
    try:
        NotebookClient(
            nb,
            timeout=300,
            kernel_name="python3",
            config=ipc,
            resources={"metadata": {"path": str(NOTEBOOKS)}},
        ).execute()
    finally:
        shutil.rmtree(env["RAY_TMPDIR"], ignore_errors=True)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return nb


def _fence(text: str, language: str) -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{language}\n{text.rstrip()}\n{ticks}"


def _rich(output: dict[str, Any], name: str, html: list[str]) -> str:
    """A display or result output as Markdown; HTML goes to the sidecar behind a marker."""
    data = output.get("data", {})
    kind = next((mime for mime in SHOWN if mime in data), None)
    if kind is None or (kind == "text/plain" and WIDGET in data):
        raise SystemExit(
            f"{name}: an output has no static rendering (mime types {sorted(data)}): a view "
            "must carry its HTML transcript, or the page would show a bare widget."
        )
    value = data[kind]
    text = "".join(value) if isinstance(value, list) else str(value)
    if kind == "text/markdown":
        return text
    if kind == "text/plain":
        return _fence(text, "text")
    if kind == "image/png":
        text = f'<img alt="output" src="data:image/png;base64,{text.strip()}">'
    html.append(text)
    return f'<div class="nb-output" data-output="{len(html) - 1}"></div>'


def to_markdown(nb: nbformat.NotebookNode, name: str) -> tuple[str, list[str]]:
    """A notebook as a Markdown page and its HTML outputs (in order)."""
    parts: list[str] = []
    html: list[str] = []
    stem = Path(name).stem
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            parts.append(cell.source)
            if index == 0:
                parts.append(_run_it(stem))
            continue
        if cell.cell_type != "code" or not cell.source.strip():
            continue
        parts.append(_fence(cell.source, "python"))
        for output in cell.get("outputs", []):
            kind = output["output_type"]
            if kind == "stream":
                parts.append(_fence(output["text"], "text"))
            elif kind in ("display_data", "execute_result"):
                parts.append(_rich(output, name, html))
            elif kind == "error":
                raise SystemExit(
                    f"{name}: cell {index} failed: {output['ename']}: {output['evalue']}"
                )
    return "\n\n".join(parts) + "\n", html


def _run_it(stem: str) -> str:
    return (
        '!!! tip "Run it yourself"\n'
        f"    [Download the notebook]({stem}.ipynb) into `notebooks/` of a clone and open it "
        "with `make lab` (JupyterLab, offline, on the embedded model), or on Binder "
        "(`binder/README.md`). It ships its cassette: without the model it replays the same "
        "calls.\n"
    )


def write_tutorials(execute_them: bool) -> list[str]:
    """``tutorials/NN_name.md`` per notebook (+ the notebook itself, to download)."""
    shutil.rmtree(TUTORIALS, ignore_errors=True)
    OUTPUTS.mkdir(parents=True)
    pages = []
    with tempfile.TemporaryDirectory(prefix="lion-nb-docs-") as scratch:
        for name in notebook_names():
            started = time.perf_counter()
            if execute_them:
                nb = execute(name, Path(scratch))
            else:
                nb = nbformat.read(NOTEBOOKS / name, as_version=4)
            page, html = to_markdown(nb, name)
            stem = Path(name).stem
            (TUTORIALS / f"{stem}.md").write_text(page, encoding="utf-8")
            (OUTPUTS / f"{stem}.json").write_text(json.dumps(html), encoding="utf-8")
            shutil.copy(NOTEBOOKS / name, TUTORIALS / name)
            pages.append(f"tutorials/{stem}.md")
            print(f"  {name}: {time.perf_counter() - started:.1f} s", flush=True)
    return pages


# --- API reference -------------------------------------------------------------------------


def _summary(obj: Any) -> str:
    doc = inspect.getdoc(obj) or ""
    return doc.split("\n\n", 1)[0].replace("\n", " ")


def reference_page(module_name: str, documented: dict[int, str]) -> str:
    """One module's page. ``documented`` maps an object already on a page to its link."""
    module = importlib.import_module(module_name)
    lines = [f"# `{module_name}`", "", public_api.PUBLIC_MODULES[module_name], ""]
    module_doc = inspect.getdoc(module)
    if module_doc and module_name != "lion_nb":
        lines += [module_doc, ""]
    values = []
    for name in public_api.module_names(module_name):
        obj = getattr(module, name)
        if inspect.ismodule(obj):
            target = obj.__name__
            link = f"[`{target}`]({target}.md)" if target in public_api.PUBLIC_MODULES else ""
            lines += [f"## `{name}`", "", _summary(obj), "", f"See {link}." if link else "", ""]
            continue
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            values.append((name, obj))
            continue
        path = f"{obj.__module__}.{obj.__qualname__}"
        if id(obj) in documented:
            lines += [
                f"## `{name}`",
                "",
                _summary(obj),
                "",
                f"Documented in {documented[id(obj)]}.",
                "",
            ]
            continue
        documented[id(obj)] = f"[`{module_name}`]({module_name}.md#{path})"
        lines += [f"::: {path}", ""]
    if values:
        lines += ["## Values", "", "| name | type | value |", "| --- | --- | --- |"]
        for name, value in values:
            shown = repr(value) if isinstance(value, str | int | float) else ""
            lines.append(
                f"| `{name}` | `{type(value).__name__}` | `{shown}` |"
                if shown
                else f"| `{name}` | `{type(value).__name__}` | |"
            )
        lines.append("")
    return "\n".join(lines)


def write_reference() -> list[str]:
    shutil.rmtree(REFERENCE, ignore_errors=True)
    REFERENCE.mkdir()
    documented: dict[int, str] = {}
    pages = []
    for module_name in public_api.PUBLIC_MODULES:
        (REFERENCE / f"{module_name}.md").write_text(
            reference_page(module_name, documented), encoding="utf-8"
        )
        pages.append(f"reference/{module_name}.md")
    return pages


# --- the site ------------------------------------------------------------------------------


# The reading order of the hand-written sections; a page not named here follows, by name.
ORDER = {
    "concepts": ["branch", "turns", "views", "cassettes", "flows", "tokens", "grid"],
    "how-to": ["providers", "teaching", "ray", "write-a-provider", "write-an-operation"],
}


def _pages_in(folder: str) -> list[str]:
    stems = sorted(p.stem for p in (DOCS / folder).glob("*.md"))
    first = [stem for stem in ORDER.get(folder, []) if stem in stems]
    return [f"{folder}/{stem}.md" for stem in first + [s for s in stems if s not in first]]


def write_config(tutorials: list[str], reference: list[str]) -> None:
    """``mkdocs.gen.yml``: ``mkdocs.yml`` plus the navigation."""
    import yaml

    nav = [
        {"Home": "index.md"},
        {"Tutorials": tutorials},
        {"Concepts": _pages_in("concepts")},
        {"How-to guides": _pages_in("how-to")},
        {"API reference": reference},
        {"Performance": "performance.md"},
        {"Changelog": "changelog.md"},
        {"Security": "security.md"},
    ]
    nav = [entry for entry in nav if all(v for v in entry.values())]
    GENERATED_CONFIG.write_text(
        "# Written by docs/build.py: mkdocs.yml and the navigation. Not committed.\n"
        + yaml.safe_dump({"INHERIT": "mkdocs.yml", "nav": nav}, sort_keys=False),
        encoding="utf-8",
    )


def copy_policies() -> None:
    (DOCS / "changelog.md").write_text((ROOT / "CHANGELOG.md").read_text(encoding="utf-8"))
    (DOCS / "security.md").write_text((ROOT / "SECURITY.md").read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-execute", action="store_true", help="tutorials without outputs")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    print(
        ">>> Executing the notebooks into docs/tutorials/"
        if not args.no_execute
        else ">>> Tutorials (not executed)"
    )
    tutorials = write_tutorials(execute_them=not args.no_execute)
    print(">>> Writing the API reference into docs/reference/")
    reference = write_reference()
    copy_policies()
    write_config(tutorials, reference)
    print(">>> mkdocs build (strict) into site/")
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--quiet",
            "--clean",
            "-f",
            str(GENERATED_CONFIG),
        ],
        cwd=ROOT,
    )
    if build.returncode != 0:
        return build.returncode
    size = sum(p.stat().st_size for p in (ROOT / "site").rglob("*") if p.is_file())
    pages = sum(1 for _ in (ROOT / "site").rglob("*.html"))
    print(
        f">>> site/: {pages} pages, {size / 1e6:.1f} MB, in {time.perf_counter() - started:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
