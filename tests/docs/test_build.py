"""docs/build.py turns an executed notebook into a page: code fenced, text outputs fenced, a
view as its static HTML (kept out of Markdown until docs/hooks.py puts it back), and it refuses
what would show a reader a broken page: a widget with no static rendering, a failed cell."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"docs_{name}", DOCS / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def build():
    return load("build")


@pytest.fixture(scope="module")
def hooks():
    return load("hooks")


def notebook(*outputs, source="lion_nb.view(branch)"):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# A lesson"), nbformat.v4.new_code_cell(source)]
    nb.cells[1].outputs = [nbformat.from_dict(o) for o in outputs]
    return nb


VIEW = {
    "output_type": "display_data",
    "metadata": {},
    "data": {
        "text/plain": "BranchView(...)",
        "application/vnd.jupyter.widget-view+json": {"model_id": "abc", "version_major": 2},
        "text/html": '<div class="lion-transcript">  indented <em>_x_</em></div>',
    },
}


def test_a_view_is_its_transcript_held_apart_from_markdown(build):
    page, html = build.to_markdown(notebook(VIEW), "12_lesson.ipynb")
    assert html == [VIEW["data"]["text/html"]]
    assert '<div class="nb-output" data-output="0"></div>' in page
    assert "BranchView(...)" not in page and "widget-view" not in page
    assert "```python\nlion_nb.view(branch)\n```" in page
    assert page.index("# A lesson") < page.index("Run it yourself") < page.index("```python")
    assert "[Download the notebook](12_lesson.ipynb)" in page


def test_text_outputs_are_fenced_and_fences_inside_them_survive(build):
    stream = {"output_type": "stream", "name": "stdout", "text": "a ``` fence\nok\n"}
    page, html = build.to_markdown(notebook(stream), "x.ipynb")
    assert "````text\na ``` fence\nok\n````" in page and html == []


def test_a_widget_without_a_static_rendering_fails_the_build(build):
    bare = {
        "output_type": "display_data",
        "metadata": {},
        "data": {"text/plain": "Foo()", "application/vnd.jupyter.widget-view+json": {}},
    }
    with pytest.raises(SystemExit, match="no static rendering"):
        build.to_markdown(notebook(bare), "x.ipynb")


def test_a_failed_cell_fails_the_build(build):
    error = {"output_type": "error", "ename": "KeyError", "evalue": "'k'", "traceback": []}
    with pytest.raises(SystemExit, match=r"x\.ipynb: cell 1 failed: KeyError"):
        build.to_markdown(notebook(error), "x.ipynb")


def test_the_hook_puts_each_transcript_back_in_its_tutorial_page(hooks, tmp_path):
    outputs = tmp_path / "tutorials" / "_outputs"
    outputs.mkdir(parents=True)
    (outputs / "12_lesson.json").write_text('["<b>first</b>", "<i>second</i>"]')
    page = SimpleNamespace(file=SimpleNamespace(src_path="tutorials/12_lesson.md"))
    markers = (
        '<div class="nb-output" data-output="1"></div><div class="nb-output" data-output="0"></div>'
    )
    html = hooks.on_page_content(markers, page, {"docs_dir": str(tmp_path)}, None)
    assert (
        html
        == '<div class="nb-output"><i>second</i></div><div class="nb-output"><b>first</b></div>'
    )
    other = SimpleNamespace(file=SimpleNamespace(src_path="concepts/branch.md"))
    assert hooks.on_page_content(markers, other, {"docs_dir": str(tmp_path)}, None) == markers


def test_the_reference_documents_each_object_once(build):
    documented: dict[int, str] = {}
    first = build.reference_page("lion_nb", documented)
    again = build.reference_page("lion_nb.models", documented)
    assert "::: lion_nb.models.imodel.iModel" in first
    assert "::: lion_nb.models.imodel.iModel" not in again
    assert "Documented in [`lion_nb`](lion_nb.md#lion_nb.models.imodel.iModel)" in again
    assert "::: lion_nb.models.registry.register_provider" in again


def test_a_page_keeps_one_copy_of_each_views_stylesheet(hooks, tmp_path):
    outputs = tmp_path / "tutorials" / "_outputs"
    outputs.mkdir(parents=True)
    css, other = "<style data-lion-css>.a{}</style>", "<style>.b{}</style>"
    (outputs / "12_lesson.json").write_text(
        json.dumps([css + "<p>one</p>", css + other + "<p>two</p>", other + "<p>three</p>"])
    )
    page = SimpleNamespace(file=SimpleNamespace(src_path="tutorials/12_lesson.md"))
    markers = "".join(f'<div class="nb-output" data-output="{i}"></div>' for i in range(3))
    html = hooks.on_page_content(markers, page, {"docs_dir": str(tmp_path)}, None)
    assert html.count(css) == 1 and html.count(other) == 1
    assert html.index(css) < html.index("<p>one</p>") and html.index(other) < html.index(
        "<p>two</p>"
    )
    assert [p in html for p in ("<p>one</p>", "<p>two</p>", "<p>three</p>")] == [True] * 3


@pytest.mark.slow
def test_a_notebook_runs_on_its_own_kernel_which_is_stopped_after(build, tmp_path):
    """The build runs eleven notebooks: none may leave its kernel running (nbclient leaves one
    it was given a KernelManager for to the caller)."""
    import psutil

    before = {p.pid for p in psutil.Process().children(recursive=True)}
    nb = build.execute("06_extending_operations.ipynb", tmp_path)
    outputs = [o for cell in nb.cells for o in cell.get("outputs", [])]
    assert outputs and not [o for o in outputs if o["output_type"] == "error"]
    left = [
        p.cmdline()
        for p in psutil.Process().children(recursive=True)
        if p.pid not in before and p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    ]
    assert not left, left
