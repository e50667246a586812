"""Fork and compare: alignment from lineage, differing turns, tokens and latency per side."""

from __future__ import annotations

from lion_nb import Branch, Session, iModel
from lion_nb.provenance import provenance_of
from lion_nb.widgets.compare_view import CompareView


def scripted(*replies) -> iModel:
    return iModel(provider="scripted", replies=list(replies))


async def forked_pair() -> tuple[Branch, Branch]:
    session = Session()
    origin = session.new_branch(
        system="Be brief.",
        name="origin",
        chat_model=scripted(
            {"text": "Paris.", "usage": {"input_tokens": 20, "output_tokens": 2}},
            {
                "text": "About 2.1 million people.",
                "usage": {"input_tokens": 40, "output_tokens": 8},
            },
        ),
    )
    await origin.communicate("Capital of France?")
    fork = session.fork(origin, 2, name="what-if")
    fork.chat_model = scripted(
        {
            "text": "About 2 million people live there.",
            "usage": {"input_tokens": 41, "output_tokens": 9},
        },
        {"text": "The Eiffel Tower.", "usage": {"input_tokens": 60, "output_tokens": 4}},
    )
    provenance_of(origin), provenance_of(fork)
    await origin.communicate("Population?")
    await fork.communicate("Population?")
    await fork.communicate("Famous landmark?")
    return origin, fork


async def test_the_view_highlights_differences_and_follows_both_branches() -> None:
    origin, fork = await forked_pair()
    view = CompareView(origin, fork, refresh_interval=0)
    html = view._body.value
    assert "3 shared messages (forked here)" in html
    assert html.count('data-kind="changed"') == 2 and 'class="lion-diff-changed' in html
    assert html.count('data-kind="added"') == 4  # two rows, each with a placeholder side
    assert "word diff" in html and "lion-diff-ins" in html
    assert "origin" in html and "what-if" in html and "latency" in html and "(runs)" in html
    assert view.differing() == [1, 2, 3]
    origin.chat_model = scripted("A tower.")
    await origin.communicate("Famous landmark?")
    assert view.differing() == [1, 3]  # the question now matches on both sides
    assert view._body.value.count('data-kind="changed"') == 4
    bundle = view._repr_mimebundle_()
    assert "lion-compare" in bundle["text/html"]
    assert bundle["text/plain"].startswith("origin | what-if: 3 shared messages")
    view.close()
