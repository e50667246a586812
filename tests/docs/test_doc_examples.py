"""Every example on the docs' concept and how-to pages runs as written.

Each ```python block of a page runs in order, the blocks of one page sharing a namespace, as
the cells of one notebook do (top-level ``await`` included), so an example that went stale
fails here. A block that needs what this quick, offline run has not (a vendor key, a server,
a browser, a kernel, Ray, the embedded model) is marked on the line before it with
``<!-- not run: <why> -->`` and skipped; the mark must say why.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
import types
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = sorted([DOCS / "index.md", *DOCS.glob("concepts/*.md"), *DOCS.glob("how-to/*.md")])

# A fenced block and the line just before it (where a "not run" mark sits).
BLOCK = re.compile(r"(?:^(?P<before>[^\n]*)\n)?^```python\n(?P<code>.*?)^```", re.M | re.S)
NOT_RUN = re.compile(r"<!--\s*not run:\s*(?P<why>\S.*?)\s*-->")


def python_blocks(page: Path) -> list[tuple[int, str, str | None]]:
    """``(line, code, why it is not run or None)`` for each ```python block of ``page``."""
    text = page.read_text()
    blocks = []
    for match in BLOCK.finditer(text):
        mark = NOT_RUN.search(match.group("before") or "")
        line = text.count("\n", 0, match.start("code")) + 1
        blocks.append((line, match.group("code"), mark.group("why") if mark else None))
    return blocks


def test_the_pages_exist_and_hold_examples() -> None:
    names = {p.relative_to(DOCS).as_posix() for p in PAGES}
    assert {"concepts/branch.md", "concepts/turns.md", "how-to/providers.md"} <= names
    assert sum(1 for page in PAGES for *_, why in python_blocks(page) if why is None) >= 20
    for page in PAGES:  # a mark stands right before the block it excuses, never elsewhere
        marked = sum(1 for *_, why in python_blocks(page) if why is not None)
        assert len(NOT_RUN.findall(page.read_text())) == marked, page.name


@pytest.fixture
def page_module():
    """A module of its own per page, importable by name as a notebook's ``__main__`` is (an
    example registers a provider class by ``__name__``); the registries an example may
    change are put back afterwards."""
    from lion_nb.cassettes.cassette import use_cassette
    from lion_nb.models import registry

    saved = dict(registry.PROVIDERS)
    module = types.ModuleType("lion_nb_docs_page")
    sys.modules[module.__name__] = module
    yield module
    del sys.modules[module.__name__]
    registry.PROVIDERS.clear()
    registry.PROVIDERS.update(saved)
    use_cassette(None)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(DOCS).as_posix())
async def test_every_example_on_the_page_runs(page: Path, page_module, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # files an example writes (a cassette, an export) land here
    blocks = python_blocks(page)
    for line, code, why in blocks:
        if why is not None:
            continue
        name = f"{page.relative_to(DOCS)}:{line}"
        compiled = compile(code, name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        try:
            result = eval(compiled, page_module.__dict__)
            if isinstance(result, types.CoroutineType):
                await result
        except Exception as exc:
            raise AssertionError(f"the example at {name} fails: {exc!r}\n{code}") from exc


def test_the_providers_page_shows_the_matrix_the_conformance_suite_checks() -> None:
    from tests.conformance.matrix import readme_table

    assert readme_table() in (DOCS / "how-to" / "providers.md").read_text(), (
        "docs/how-to/providers.md's conformance matrix differs from tests/conformance/matrix.py"
    )


LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")
NOTEBOOKS = DOCS.parent / "notebooks"


def slug(heading: str) -> str:
    """A heading's anchor as Python-Markdown's toc (MkDocs) and GitHub make it."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def reference_modules() -> set[str]:
    """The modules the API reference has a page for (``docs/public_api.py``)."""
    spec = importlib.util.spec_from_file_location("docs_public_api", DOCS / "public_api.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return set(module.PUBLIC_MODULES)


def link_problem(page: Path, target: str) -> str | None:
    """Why a relative link of ``page`` leads nowhere, or None. Tutorials and API pages are
    built with the site: they must name a notebook and a module of the API reference."""
    if re.match(r"[a-z]+:", target):
        return None  # an external address: the reader's browser goes there, the site does not
    path, _, anchor = target.partition("#")
    file = (page.parent / path).resolve() if path else page
    built = file.relative_to(DOCS.resolve()).as_posix() if file.is_relative_to(DOCS) else ""
    if built.startswith("tutorials/"):
        return None if (NOTEBOOKS / f"{file.stem}.ipynb").exists() else "no such notebook"
    if built.startswith("reference/"):
        return None if file.stem in reference_modules() else "no API page for that module"
    if not file.exists():
        return "no such file"
    if anchor and file.suffix == ".md":
        # a "# comment" in a code block is no heading
        prose = re.sub(r"```.*?```", "", file.read_text(), flags=re.S)
        headings = re.findall(r"^#+ (.+)$", prose, re.M)
        if anchor not in {slug(h) for h in headings}:
            return f"no heading #{anchor}"
    return None


@pytest.mark.parametrize(
    "page", [*PAGES, DOCS / "performance.md"], ids=lambda p: p.relative_to(DOCS).as_posix()
)
def test_every_link_of_the_page_leads_somewhere(page: Path) -> None:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)  # links, not code
    broken = {
        target: why
        for target in LINK.findall(text)
        if (why := link_problem(page, target)) is not None
    }
    assert not broken, f"{page.relative_to(DOCS)}: {broken}"


def test_the_readme_links_the_docs_pages_that_exist() -> None:
    readme = DOCS.parent / "README.md"
    linked = {t for t in LINK.findall(readme.read_text()) if t.startswith("docs/")}
    assert {f"docs/{p.relative_to(DOCS).as_posix()}" for p in PAGES if p.parent != DOCS} <= linked
    assert all((DOCS.parent / t.partition("#")[0]).exists() for t in linked)
