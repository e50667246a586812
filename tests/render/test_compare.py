"""render.compare: two branches side by side as HTML, and word diffs, escaped."""

from __future__ import annotations

from lion_nb import Branch
from lion_nb.messages import AssistantResponse, Instruction
from lion_nb.render.compare import compare_html, word_diff_html
from lion_nb.viewmodels.compare import SideStats, align


def test_word_diff_marks_changes_and_escapes() -> None:
    html = word_diff_html("the <b>cat</b> sat", "the <b>dog</b> sat down")
    assert '<del class="lion-diff-del">&lt;b&gt;cat&lt;/b&gt;</del>' in html
    assert '<ins class="lion-diff-ins">&lt;b&gt;dog&lt;/b&gt;</ins>' in html
    assert '<ins class="lion-diff-ins">down</ins>' in html
    assert "<b>" not in html and "down" in html


def test_changed_turns_are_highlighted_with_a_word_diff() -> None:
    a, b = Branch(system="S"), Branch(system="S")
    for branch, answer in ((a, "the cat"), (b, "the <i>dog</i>")):
        branch.add_message(Instruction(instruction="q"))
        branch.add_message(AssistantResponse(response=answer))
    html = compare_html(align(a, b), "left <1>", "right", SideStats(), SideStats(messages=1))
    assert "2 shared messages (identical history)" in html
    assert "1 differing turn after the shared history" in html
    assert "lion-diff-changed" in html and "word diff" in html
    assert "left &lt;1&gt;" in html and "<i>dog" not in html
    assert "usage not reported" in html and "1 message ·" in html
    empty = compare_html(align(Branch(), Branch()), "a", "b", SideStats(), SideStats())
    assert empty.count("no messages after the shared history") == 2


def test_identical_alternatives_are_explained_not_counted() -> None:
    # a regenerate at temperature 0: the same words under another message id
    a = Branch(system="S")
    a.add_message(Instruction(instruction="q"))
    a.add_message(AssistantResponse(response="the same words"))
    b = a.fork(at=1)
    b.add_message(AssistantResponse(response="the same words"))
    html = compare_html(align(a, b), "a", "b", SideStats(), SideStats())
    assert "0 differing turns" not in html
    assert "Both say the same, word for word" in html and "temperature 0" in html
