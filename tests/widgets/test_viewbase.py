"""viewbase: the static fallback every view saves beside its widget."""

from __future__ import annotations

from lion_nb import Branch
from lion_nb.messages import Instruction
from lion_nb.render.html import css_style_tag
from lion_nb.widgets.chat_view import BranchView


def test_the_bundle_holds_the_stylesheet_and_the_static_html() -> None:
    branch = Branch()
    branch.add_message(Instruction(instruction="saved"))
    view = BranchView(branch)
    bundle = view._repr_mimebundle_()
    assert bundle["text/html"] == css_style_tag() + view.static_html()
    assert bundle["text/plain"] == view.static_text() and "saved" in bundle["text/plain"]
    view.close()
    view.close()  # closing twice is harmless
    assert view.closed


def test_a_view_displayed_nowhere_has_nothing_to_refresh() -> None:
    view = BranchView(Branch())
    assert view.refresh_static() is False and view.flush_static() is False
    view.close()
