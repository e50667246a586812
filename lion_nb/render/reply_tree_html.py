"""The tree of what could have been as static HTML (``viewmodels.reply_tree.ReplyTree``): the
saved notebook's copy of the chat view's tree panel (``IPython.display.HTML(reply_tree_html(tree))``
shows one in a notebook).

Drawn as an indented outline, not a graph: each node is a list item holding its segment of the
reply (the shared start once, then where the alternatives diverge), a badge counting the
alternatives through it out of those at its parent ("3/5", its words "3 of 5 samples continue
…" in the tooltip), and, where an alternative's reply ends, its name ("sample 2/5"). Nested
lists read as a tree to a screen reader without script. Every piece of model text goes
through the render layer's one escape.
"""

from __future__ import annotations

from lion_nb.render.escape import escape
from lion_nb.viewmodels.reply_tree import ReplyTree, TreeNode, node_words

__all__ = ["reply_tree_html"]


def reply_tree_html(tree: ReplyTree, *, title: str | None = None, shown: str | None = None) -> str:
    """``tree`` as an outline; ``shown``: the key of the alternative the chat view shows (its
    path is marked); ``title``: what the tree is of ("Reply 2's alternatives")."""
    nodes = tree.outline()
    by_parent: dict[int, list[TreeNode]] = {}
    for node in nodes:
        by_parent.setdefault(node.parent, []).append(node)
    on_path = set(tree.path_of(shown)) if shown in tree.alternatives else set()
    head = f'<span class="lion-rtree-title">{escape(title or "What could have been")}</span>'
    meta = f'<span class="lion-meta lion-rtree-meta">{escape(tree.heading())}</span>'
    body = _list(tree, by_parent, 0, on_path, shown) if nodes else ""
    if not nodes:
        body = '<div class="lion-meta lion-rtree-empty">No reply yet.</div>'
    return (
        f'<div class="lion-rtree" data-role="reply-tree">'
        f'<div class="lion-rtree-head">{head} {meta}</div>{body}</div>'
    )


def _list(
    tree: ReplyTree,
    by_parent: dict[int, list[TreeNode]],
    parent: int,
    on_path: set[int],
    shown: str | None,
) -> str:
    items = "".join(_item(tree, n, by_parent, on_path, shown) for n in by_parent.get(parent, []))
    return f'<ul class="lion-rtree-list">{items}</ul>'


def _item(
    tree: ReplyTree,
    node: TreeNode,
    by_parent: dict[int, list[TreeNode]],
    on_path: set[int],
    shown: str | None,
) -> str:
    noun = tree.noun()
    cls = "lion-rtree-node lion-rtree-on" if node.id in on_path else "lion-rtree-node"
    badge = f'<span class="lion-rtree-n">{node.count}/{node.of}</span>'
    text = f'<span class="lion-rtree-text">{escape(node.text)}</span>'
    ends = "".join(
        f'<span class="lion-rtree-end{" lion-rtree-shown" if key == shown else ""}">'
        f"{escape(tree.alternatives[key].words())}</span>"
        for key in node.ends
    )
    row = (
        f'<span class="lion-rtree-row" title="{escape(node_words(node, noun))}">'
        f"{badge}{text}{ends}</span>"
    )
    children = _list(tree, by_parent, node.id, on_path, shown) if node.id in by_parent else ""
    return f'<li class="{cls}" data-id="{node.id}">{row}{children}</li>'
