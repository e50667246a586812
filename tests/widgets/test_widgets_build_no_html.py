"""Widgets build no HTML strings of their own: every fragment comes from ``lion_nb.render``
(the HTML grep), and no view carries CSS of its own (it is all in the stylesheet
``widgets/lion_nb.css``, loaded in one place, ``render.html.lion_css``)."""

from __future__ import annotations

import pathlib
import re

import lion_nb

WIDGETS = pathlib.Path(lion_nb.__file__).parent / "widgets"
HTML = re.compile(r"""["']<(div|span|section|details|table|p|pre|code|b|h[1-6])[ >]""")


def test_no_widget_module_writes_html() -> None:
    hits = [
        f"{path.name}:{number}"
        for path in sorted(WIDGETS.glob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if HTML.search(line)
    ]
    assert hits == []


def test_no_widget_module_carries_css() -> None:
    hits = [
        f"{path.name}:{number}"
        for path in sorted(WIDGETS.glob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"""["']<style|\{[a-z-]+:[^}]*\}""", line)
    ]
    assert hits == []


def test_every_view_uses_the_one_stylesheet() -> None:
    """The front-end views get it as anywidget's ``_css``; the stock-widget views (inspector,
    compare) inline it; the static fallback of every view carries it."""
    from lion_nb import Branch
    from lion_nb.render.html import css_style_tag, lion_css
    from lion_nb.widgets.chat_view import BranchView
    from lion_nb.widgets.compare_view import CompareView
    from lion_nb.widgets.parse_view import ParseView
    from lion_nb.widgets.rounds_view import ReActRoundsView

    branch = Branch()
    for view in (BranchView(branch), ReActRoundsView(branch), ParseView({"a": 1})):
        assert view.style_html() == css_style_tag()
        assert view._css == lion_css()
        view.close()
    compare = CompareView(branch, Branch())
    assert compare.style_html() == css_style_tag()
    compare.close()


def test_the_front_end_module_inserts_html_only_from_the_kernel() -> None:
    """widgets/lion_nb.js and tokens.js: every innerHTML / insertAdjacentHTML takes an HTML string the
    kernel rendered (op.html, a part's html, the error/status traits), never text it builds
    from model output; text goes through textContent."""
    from lion_nb.widgets.front import MODULE_FILES

    files = [WIDGETS.parents[1] / "widgets" / name for name in MODULE_FILES]
    js = "\n".join(path.read_text(encoding="utf-8") for path in files)
    sinks = re.findall(r"(innerHTML\s*=\s*[^;]+|insertAdjacentHTML\([^)]*\))", js)
    allowed = ("op.", "html", "cstate.")  # cstate: the kernel's traits
    assert sinks and all(any(a in sink for a in allowed) for sink in sinks), sinks
    assert "eval(" not in js and "new Function" not in js and "document.write" not in js
