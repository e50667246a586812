"""Fork and compare: alignment from lineage, differing turns, tokens and latency per side."""

from __future__ import annotations

from lion_nb.widgets.compare_view import CompareView
from tests.support.forked_pair import forked_pair, scripted


def shown(view: CompareView) -> str:
    """The comparison as the page is given it."""
    return dict(view.state_parts())["compare"]


async def test_the_view_highlights_differences_and_follows_both_branches() -> None:
    origin, fork = await forked_pair()
    view = CompareView(origin, fork, refresh_interval=0)
    html = shown(view)
    assert "3 shared messages (forked here)" in html
    assert html.count('data-kind="changed"') == 2 and 'class="lion-diff-changed' in html
    assert html.count('data-kind="added"') == 4  # two rows, each with a placeholder side
    assert "word diff" in html and "lion-diff-ins" in html
    assert "origin" in html and "what-if" in html and "latency" in html and "(runs)" in html
    assert view.differing() == [1, 2, 3]
    origin.chat_model = scripted("A tower.")
    await origin.communicate("Famous landmark?")
    assert view.differing() == [1, 3]  # the question now matches on both sides
    assert shown(view).count('data-kind="changed"') == 4
    bundle = view._repr_mimebundle_()
    assert "lion-compare" in bundle["text/html"]
    assert bundle["text/plain"].startswith("origin | what-if: 3 shared messages")
    view.close()
