"""Widgets build no HTML strings of their own: every fragment comes from ``lion_nb.render``
(the HTML grep of issue 13), and no view carries CSS of its own (it is all in the stylesheet
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


def test_every_view_inlines_the_one_stylesheet() -> None:
    from lion_nb import Branch
    from lion_nb.render.html import css_style_tag
    from lion_nb.widgets.chat_view import BranchView
    from lion_nb.widgets.parse_view import ParseView
    from lion_nb.widgets.rounds_view import ReActRoundsView

    branch = Branch()
    for view in (BranchView(branch), ReActRoundsView(branch), ParseView({"a": 1})):
        assert view.style_html() == css_style_tag()
        assert view.children[0].value == css_style_tag()
        view.close()
