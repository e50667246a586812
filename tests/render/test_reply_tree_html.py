"""``render.reply_tree_html``: the tree of what could have been as static HTML."""

from __future__ import annotations

import re
from html import unescape

import pytest

from lion_nb.messages import AssistantResponse
from lion_nb.render.reply_tree_html import reply_tree_html
from lion_nb.viewmodels.reply_tree import ReplyTree
from tests.support.html_safety import CORPUS, html_problems


def test_an_indented_outline_with_counts_and_the_leaves_named() -> None:
    tree = ReplyTree.from_replies(
        ["The sky is blue.", "The sky is grey.", "The sea."], kind="sample"
    )
    html = reply_tree_html(tree, title="Reply 1's samples", shown="1")
    assert html.count("<ul") == 3 and html.count("<li") == 5  # top, two under it, two leaves
    badges = re.findall(r'<span class="lion-rtree-n">([^<]*)</span>', html)
    assert badges == ["3/3", "2/3", "1/2", "1/2", "1/3"]
    texts = [unescape(t) for t in re.findall(r'<span class="lion-rtree-text">([^<]*)</span>', html)]
    assert texts == ["The", " sky is", " blue.", " grey.", " sea."]
    assert 'title="2 of 3 samples continue “sky is”"' in html
    ends = re.findall(r'<span class="lion-rtree-end[^"]*">([^<]*)</span>', html)
    assert ends == ["sample 1", "sample 2", "sample 3"]
    # the shown alternative's path is marked, its leaf too
    assert len(re.findall(r'class="lion-rtree-node lion-rtree-on"', html)) == 3
    assert 'lion-rtree-end lion-rtree-shown">sample 2<' in html
    assert "Reply 1&#x27;s samples" in html and "3 samples · merged by words" in html


def test_by_tokens_when_the_replies_have_them() -> None:
    replies = [
        AssistantResponse(
            response="Hi there",
            tokens=[{"text": "Hi", "logprob": 0.0}, {"text": " there", "logprob": -1.0}],
        ),
        AssistantResponse(
            response="Hi you",
            tokens=[{"text": "Hi", "logprob": 0.0}, {"text": " you", "logprob": -2.0}],
        ),
    ]
    html = reply_tree_html(ReplyTree.from_replies(replies))
    assert "merged by tokens" in html


def test_an_empty_tree_says_so() -> None:
    tree = ReplyTree()
    tree.update("a", state="waiting")
    assert "No reply yet." in reply_tree_html(tree)


@pytest.mark.parametrize("case", CORPUS, ids=[c["name"] for c in CORPUS])
def test_model_text_and_labels_are_never_markup(case: dict[str, str]) -> None:
    payload = case["payload"]
    tree = ReplyTree()
    tree.update("a", text=f"Shared start {payload} then one", label=payload, state="done")
    tree.update(
        "b", text=f"Shared start {payload} then two", label=f"fork {payload}", state="stopped"
    )
    html = reply_tree_html(tree, title=payload, shown="a")
    assert html_problems(html) == [], html
    texts = [unescape(t) for t in re.findall(r'<span class="lion-rtree-text">([^<]*)</span>', html)]
    assert "".join(texts[:2]).startswith("Shared start")
