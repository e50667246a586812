"""``viewmodels.reply_tree``: the alternatives of one turn merged into one prefix tree."""

from __future__ import annotations

import itertools
import random

from lion_nb.viewmodels.reply_tree import ReplyTree, changes, node_words, units_of


def shape(tree: ReplyTree) -> list[tuple[int, str, int, int, tuple[str, ...]]]:
    """(depth, text, count, of, ends) of every node, depth first."""
    return [(n.depth, n.text, n.count, n.of, n.ends) for n in tree.outline()]


def samples(*texts: str) -> ReplyTree:
    tree = ReplyTree()
    for i, text in enumerate(texts):
        tree.update(f"s{i}", text=text, kind="sample", state="done")
    return tree


def test_the_shared_start_once_and_a_branch_where_they_diverge() -> None:
    tree = samples("The sky is blue.", "The sky is grey.", "The sea is calm.")
    assert shape(tree) == [
        (1, "The", 3, 3, ()),
        (2, " sky is", 2, 3, ()),
        (3, " blue.", 1, 2, ("s0",)),
        (3, " grey.", 1, 2, ("s1",)),
        (2, " sea is calm.", 1, 3, ("s2",)),
    ]
    leaves = [n for n in tree.outline() if n.leaf]
    assert [n.ends for n in leaves] == [("s0",), ("s1",), ("s2",)]  # which branch each leaf is


def test_identical_replies_are_one_leaf_counted_twice() -> None:
    tree = samples("Same words.", "Same words.", "Other words.")
    assert shape(tree) == [
        (1, "Same words.", 2, 3, ("s0", "s1")),
        (1, "Other words.", 1, 3, ("s2",)),
    ]


def test_a_reply_that_is_the_start_of_another_ends_inside_the_tree() -> None:
    tree = samples("The end", "The end of it.")
    assert shape(tree) == [(1, "The end", 2, 2, ("s0",)), (2, " of it.", 1, 2, ("s1",))]
    assert not tree.outline()[0].leaf


def test_merged_by_tokens_when_every_alternative_has_them() -> None:
    tree = ReplyTree()
    tree.update("a", tokens=["The", " cat", " sat"], state="done")
    tree.update("b", tokens=["The", " cat", "s", " ran"], state="done")
    assert tree.mode == "tokens"
    # by tokens " cat" is shared and "s" diverges; by words "cat " and "cats " would differ
    assert shape(tree) == [
        (1, "The cat", 2, 2, ()),
        (2, " sat", 1, 2, ("a",)),
        (2, "s ran", 1, 2, ("b",)),
    ]


def test_words_when_one_alternative_has_no_tokens() -> None:
    tree = ReplyTree()
    tree.update("a", tokens=["The", " cat", " sat"], state="done")
    tree.update("b", text="The cat ran", state="streaming")
    assert tree.mode == "tokens" and tree.waiting() == ["b"]  # its tokens may come next
    tree.update("b", state="done")  # they did not: the tree is merged by words
    assert tree.mode == "words"
    assert shape(tree) == [
        (1, "The cat", 2, 2, ()),
        (2, " sat", 1, 2, ("a",)),
        (2, " ran", 1, 2, ("b",)),
    ]


def test_text_ahead_of_its_tokens_keeps_the_tokens_as_they_are() -> None:
    tree = ReplyTree()
    tree.update("a", tokens=["The", " cat"], state="streaming")
    before = tree.outline()
    assert not tree.update("a", text="The cat sat")  # its tokens come with the next delta
    assert tree.outline() == before
    assert tree.update("a", tokens=["The", " cat", " sat"])
    assert shape(tree) == [(1, "The cat sat", 1, 1, ("a",))]


def test_streaming_extends_one_path_and_ids_stay() -> None:
    tree = ReplyTree()
    for key in "abc":
        tree.update(key, label=key, kind="sample", state="streaming")
    assert tree.waiting() == ["a", "b", "c"] and tree.outline() == []
    reply = {"a": "Once upon a time the tide came in.", "b": "Once upon a time the tide went out."}
    reply["c"] = "Once upon a hill."
    seen_ids: dict[str, int] = {}
    shown = []
    for end in range(1, 40):
        for key, text in reply.items():
            tree.update(key, text=text[:end])
        first = tree.outline()[0]
        seen_ids.setdefault(first.text[:4], first.id)
        assert first.id == seen_ids[first.text[:4]]  # the shared start keeps its id as it grows
        shown.append(first.text)
    assert shape(tree)[0] == (1, "Once upon a", 3, 3, ())
    assert [n.text for n in tree.outline()] == [
        "Once upon a",
        " time the tide",
        " came in.",
        " went out.",
        " hill.",
    ]
    # the shared start only ever grew or was split: never anything else
    assert all(b.startswith(a) or a.startswith(b) for a, b in itertools.pairwise(shown))


def test_incremental_equals_built_at_once() -> None:
    rng = random.Random(7)
    words = [" the", " tide", " came", " in", " went", " out", " slowly", "."]
    replies = [
        "".join(rng.choice(words[:3]) if i < 3 else rng.choice(words) for i in range(12))
        for _ in range(6)
    ]
    live = ReplyTree()
    for end in range(0, 80, 3):
        for i, text in enumerate(replies):
            live.update(str(i), text=text[:end])
    for i, text in enumerate(replies):
        live.update(str(i), text=text)
    whole = ReplyTree()
    for i, text in enumerate(replies):
        whole.update(str(i), text=text)
    assert shape(live) == shape(whole)
    # every leaf's path spells its reply
    texts = {n.id: n.text for n in whole.outline()}
    for i, text in enumerate(replies):
        assert "".join(texts[n] for n in whole.path_of(str(i))) == text


def test_counts_add_up_at_every_branch() -> None:
    tree = samples("a b c", "a b d", "a e", "a e", "f")
    nodes = tree.outline()
    for node in nodes:
        children = [c for c in nodes if c.parent == node.id]
        assert node.count == sum(c.count for c in children) + len(node.ends)
        assert all(c.of == node.count for c in children)
    assert sum(n.count for n in nodes if n.depth == 1) == 5


def test_forks_and_samples_together() -> None:
    tree = ReplyTree()
    tree.update(
        "origin",
        tokens=["The", " cat", " sat", " on", " the", " mat", "."],
        kind="reply",
        state="done",
    )
    tree.update(
        "fork",
        tokens=["The", " cat", " sat", " under", " the", " table", "."],
        kind="fork",
        label="fork at token 4: “ under”",
        state="done",
    )
    for i, end in enumerate([[" on", " the", " mat", "."], [" on", " a", " rug", "."]]):
        tree.update(f"s{i}", tokens=["The", " cat", " sat", *end], kind="sample", state="done")
    assert tree.noun() == "replies"
    assert shape(tree) == [
        (1, "The cat sat", 4, 4, ()),
        (2, " on", 3, 4, ()),
        (3, " the mat.", 2, 3, ("origin", "s0")),
        (3, " a rug.", 1, 3, ("s1",)),
        (2, " under the table.", 1, 4, ("fork",)),
    ]


def test_a_removed_alternative_leaves_no_trace() -> None:
    tree = samples("The sky is blue.", "The sky is grey.")
    tree.update("gone", text="Nothing alike", kind="sample")
    tree.remove("gone")
    assert shape(tree) == shape(samples("The sky is blue.", "The sky is grey."))


def test_picking_a_node_means_the_shown_branch_when_it_passes_there() -> None:
    tree = samples("The sky is blue.", "The sky is grey.", "The sea.")
    top, sky = tree.outline()[0], tree.outline()[1]
    assert tree.branch_at(top.id) == "s0"
    assert tree.branch_at(top.id, prefer="s2") == "s2"
    assert tree.branch_at(sky.id, prefer="s2") == "s0"
    grey = next(n for n in tree.outline() if n.text == " grey.")
    assert tree.branch_at(grey.id) == "s1" and tree.branch_at(999) is None


def test_the_words_a_screen_reader_reads() -> None:
    tree = samples(
        "The tide came in.", "The tide came in.", "The tide went out.", "The wave.", "The wave."
    )
    words = {n.text: node_words(n, tree.noun()) for n in tree.outline()}
    assert words[" tide"] == "3 of 5 samples continue “tide”"
    assert words[" came in."] == "2 of 3 samples continue “came in.”"
    assert words[" went out."] == "1 of 3 samples continues “went out.”"
    one = ReplyTree()
    one.update("x", text="Only one.", kind="sample")
    assert node_words(one.outline()[0], one.noun()) == "The sample starts “Only one.”"
    same = samples("Same.", "Same.")
    assert node_words(same.outline()[0], "samples", quote=False) == "All 2 samples start"


def test_changes_name_what_a_page_must_redraw() -> None:
    tree = samples("The sky is blue.")
    before = tree.outline()
    tree.update("s1", text="The sky is grey.", kind="sample")
    changed, dropped = changes(before, tree.outline())
    assert dropped == []
    assert [n.text for n in changed] == ["The sky is", " blue.", " grey."]  # split: parent first
    assert changed[1].id != before[0].id and changed[0].id == before[0].id
    after_split = tree.outline()
    tree.remove("s1")
    changed, dropped = changes(after_split, tree.outline())
    assert [n.text for n in changed] == ["The sky is blue."] and len(dropped) == 2
    assert units_of("a  b\n") == ["a", "  b", "\n"]


def test_a_top_branch_that_not_all_take_starts() -> None:
    tree = samples("Yes.", "No.", "No.")
    words = [node_words(n, tree.noun()) for n in tree.outline()]
    assert words == ["1 of 3 samples starts “Yes.”", "2 of 3 samples start “No.”"]
