"""The tree of what could have been: the alternatives of one turn (its samples, its forks from
tokens, the reply itself) merged into one prefix tree of the reply's text.

    tree = ReplyTree()
    tree.update("a", text="The sky is blue.", label="sample 1/3", kind="sample")
    tree.update("b", text="The sky is grey.", label="sample 2/3", kind="sample")
    [n.text for n in tree.outline()]        # ['The sky is', ' blue.', ' grey.']

The shared start is one node; a node branches where the replies diverge; each node counts the
alternatives that pass through it (``count``, out of ``of``: those at its parent) and names
the ones whose reply ends there (``ends``). Replies are merged by their tokens when every
alternative's tokens are known (a reply streamed with ``logprobs=K``), else by their words (a
word with the space before it, as a tokenizer splits). A reply still streaming
without its tokens yet waits at the root rather than turning the tree back into words.

Incremental: ``update(key, text=...)`` with a reply's text (or tokens) so far walks only what
changed — the common start with what it had is kept, the rest of its path retracted and the
new units added — so a streamed delta extends one path. Internally the tree holds one node per
unit; ``outline()`` gives the segments (maximal runs of units that no alternative leaves or
ends in), each named by its first unit's id, so a segment keeps its id while it grows and
when another alternative splits it (the split-off rest is named by its own first unit).
``changes(before, after)`` says what a page showing ``before`` needs to show ``after``.

Pure: no signals, no branches; the chat view's panel (``widgets.reply_tree_panel``) feeds it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["Alternative", "ReplyTree", "TreeNode", "changes", "node_words", "units_of"]

Mode = Literal["tokens", "words"]
State = Literal["waiting", "streaming", "done", "stopped"]

_WORDS = re.compile(r"\s*\S+|\s+")


def units_of(text: str) -> list[str]:
    """``text`` as words, each with the whitespace before it, as tokenizers split (what replies
    without tokens are merged by): "The end" is the start of "The end of it"."""
    return _WORDS.findall(text)


@dataclass
class Alternative:
    """One alternative of the turn: its label ("sample 2/5", "fork at token 4: “ relic”"),
    kind ("sample", "fork", "reply"), state and reply so far (``tokens``: their texts, None
    while unknown)."""

    key: str
    order: int
    label: str = ""
    kind: str = "reply"
    state: State = "waiting"
    text: str = ""
    tokens: list[str] | None = None

    @property
    def final(self) -> bool:
        return self.state in ("done", "stopped")

    def words(self) -> str:
        """How a leaf names it: "sample 2/5", "sample 3/5 · streaming"."""
        name = self.label or f"reply {self.order + 1}"
        return name if self.state == "done" else f"{name} · {self.state}"


class _Unit:
    """One unit (token or word) of the tree: the alternatives through it, its children."""

    __slots__ = ("children", "id", "keys", "parent", "unit")

    def __init__(self, id_: int, unit: str, parent: _Unit | None) -> None:
        self.id = id_
        self.unit = unit
        self.parent = parent
        self.children: dict[str, _Unit] = {}
        self.keys: dict[str, None] = {}  # an ordered set


@dataclass(frozen=True)
class TreeNode:
    """A segment of the outline. ``parent`` 0 is the root (the turn's start); ``keys``: the
    alternatives through it, in the order they joined; ``ends``: those whose reply (so far)
    ends here; ``depth`` 1 for the root's children; ``order``: its place among its siblings
    (the earliest alternative through it)."""

    id: int
    parent: int
    text: str
    keys: tuple[str, ...]
    of: int
    ends: tuple[str, ...]
    depth: int
    order: int
    leaf: bool

    @property
    def count(self) -> int:
        return len(self.keys)


@dataclass
class ReplyTree:
    """The prefix tree of one turn's alternatives (see the module)."""

    mode: Mode = "words"
    alternatives: dict[str, Alternative] = field(default_factory=dict)
    version: int = 0  # counts the changes (a page's copy names the version it shows)

    def __post_init__(self) -> None:
        self._root = _Unit(0, "", None)
        self._next_id = 1
        self._paths: dict[str, list[_Unit]] = {}

    @classmethod
    def from_replies(
        cls, replies: Sequence[object], labels: Sequence[str] | None = None, kind: str = "reply"
    ) -> ReplyTree:
        """The tree of finished replies (``AssistantResponse``s, or strings): a sample set's
        ``ReplyTree.from_replies(samples.replies, kind="sample")``."""
        tree = cls()
        for i, reply in enumerate(replies):
            tokens = getattr(reply, "tokens", None)
            text = reply if isinstance(reply, str) else str(getattr(reply, "text", reply))
            tree.update(
                str(i),
                text=text,
                tokens=[str(t.text) for t in tokens] if tokens else None,
                label=labels[i] if labels is not None else f"{kind} {i + 1}",
                kind=kind,
                state="done",
            )
        return tree

    # ----- feeding ------------------------------------------------------------------------
    def update(
        self,
        key: str,
        *,
        text: str | None = None,
        tokens: Sequence[str] | None = None,
        label: str | None = None,
        kind: str | None = None,
        state: State | None = None,
    ) -> bool:
        """Alternative ``key`` (new, or known) now says ``text`` / ``tokens`` (its reply so far,
        the whole of it: a snapshot, never a delta), is called ``label``, is ``state``.
        Returns whether the tree changed."""
        alt = self.alternatives.get(key)
        changed = alt is None
        if alt is None:
            alt = self.alternatives[key] = Alternative(key, len(self.alternatives))
            self._root.keys[key] = None
            self._paths[key] = []
        if tokens is not None:
            alt.tokens = list(tokens)
            alt.text = "".join(alt.tokens)
        elif text is not None:
            alt.text = text  # tokens known: they stay the units (this text's come next)
        for name, value in (("label", label), ("kind", kind), ("state", state)):
            if value is not None and getattr(alt, name) != value:
                setattr(alt, name, value)
                changed = True
        mode = self._wanted_mode()
        if mode != self.mode:
            self.mode = mode
            for other in self.alternatives.values():
                self._repath(other)
            changed = True
        else:
            changed = self._repath(alt) or changed
        if changed:
            self.version += 1
        return changed

    def remove(self, key: str) -> bool:
        """Alternative ``key`` is gone (a sample that failed leaves no fork)."""
        if key not in self.alternatives:
            return False
        self._retract(key, 0)
        del self.alternatives[key], self._paths[key], self._root.keys[key]
        self.mode = self._wanted_mode()
        for other in self.alternatives.values():
            self._repath(other)
        self.version += 1
        return True

    def _wanted_mode(self) -> Mode:
        """Tokens when some alternative has them and every one that is final does too."""
        alts = self.alternatives.values()
        has = any(a.tokens is not None for a in alts)
        lacking = any(a.tokens is None and a.final and a.text for a in alts)
        return "tokens" if has and not lacking else "words"

    def units(self, key: str) -> list[str]:
        """The units alternative ``key`` is merged by, in the tree's mode."""
        alt = self.alternatives[key]
        if self.mode == "tokens":
            return list(alt.tokens) if alt.tokens is not None else []  # waits at the root
        return units_of(alt.text)

    # ----- the trie -----------------------------------------------------------------------
    def _repath(self, alt: Alternative) -> bool:
        path = self._paths[alt.key]
        new = self.units(alt.key)
        common = 0
        for node, unit in zip(path, new, strict=False):
            if node.unit != unit:
                break
            common += 1
        if common == len(path) == len(new):
            return False
        self._retract(alt.key, common)
        node = path[-1] if path else self._root
        for unit in new[common:]:
            child = node.children.get(unit)
            if child is None:
                child = node.children[unit] = _Unit(self._next_id, unit, node)
                self._next_id += 1
            child.keys[alt.key] = None
            path.append(child)
            node = child
        return True

    def _retract(self, key: str, keep: int) -> None:
        """Alternative ``key`` leaves its path after its first ``keep`` units."""
        path = self._paths[key]
        for node in reversed(path[keep:]):
            del node.keys[key]
            if not node.keys and node.parent is not None:
                del node.parent.children[node.unit]
        del path[keep:]

    # ----- reading ------------------------------------------------------------------------
    @property
    def size(self) -> int:
        """How many alternatives the tree holds."""
        return len(self.alternatives)

    def noun(self) -> str:
        """What the alternatives are called: "samples" when every one is, else "replies"."""
        kinds = {a.kind for a in self.alternatives.values()}
        return "samples" if kinds == {"sample"} else "replies"

    def heading(self) -> str:
        """What the tree shows: "5 samples · merged by tokens · 2 streaming, 1 waiting"."""
        alts = list(self.alternatives.values())
        noun = self.noun()
        head = f"{len(alts)} {noun[:-1] if len(alts) == 1 else noun} · merged by {self.mode}"
        busy = [
            f"{n} {state}"
            for state in ("streaming", "waiting")
            if (n := sum(a.state == state for a in alts))
        ]
        return f"{head} · {', '.join(busy)}" if busy else head

    def waiting(self) -> list[str]:
        """The alternatives with nothing in the tree yet, in order."""
        return [k for k, path in self._paths.items() if not path]

    def outline(self) -> list[TreeNode]:
        """The segments, depth first, siblings in order (see ``TreeNode``)."""
        ends: dict[int, list[str]] = {}
        for key, path in self._paths.items():
            if path:
                ends.setdefault(path[-1].id, []).append(key)
        order = {k: a.order for k, a in self.alternatives.items()}
        out: list[TreeNode] = []
        stack = [(c, 0, 1) for c in reversed(self._sorted(self._root, order))]
        while stack:
            first, parent, depth = stack.pop()
            last, units = first, [first.unit]
            while (
                len(last.children) == 1
                and last.id not in ends
                and len(next(iter(last.children.values())).keys) == len(last.keys)
            ):
                last = next(iter(last.children.values()))
                units.append(last.unit)
            keys = tuple(sorted(first.keys, key=order.__getitem__))
            out.append(
                TreeNode(
                    id=first.id,
                    parent=parent,
                    text="".join(units),
                    keys=keys,
                    of=len(first.parent.keys) if first.parent is not None else len(keys),
                    ends=tuple(sorted(ends.get(last.id, ()), key=order.__getitem__)),
                    depth=depth,
                    order=order[keys[0]],
                    leaf=not last.children,
                )
            )
            for child in reversed(self._sorted(last, order)):
                stack.append((child, first.id, depth + 1))
        return out

    @staticmethod
    def _sorted(node: _Unit, order: dict[str, int]) -> list[_Unit]:
        return sorted(node.children.values(), key=lambda c: min(map(order.__getitem__, c.keys)))

    def path_of(self, key: str) -> list[int]:
        """The ids of the outline's nodes alternative ``key`` passes through, from the top."""
        through = {n.id for n in self._paths.get(key, ())}
        return [n.id for n in self.outline() if n.id in through]

    def branch_at(self, node_id: int, prefer: str | None = None) -> str | None:
        """The alternative a reader who picks node ``node_id`` means: ``prefer`` (the one
        shown) when it passes through the node, else the first that ends there, else the
        first through it; None when there is no such node."""
        node = next((n for n in self.outline() if n.id == node_id), None)
        if node is None:
            return None
        if prefer is not None and prefer in node.keys:
            return prefer
        return node.ends[0] if node.ends else node.keys[0]


def _quoted(text: str, most: int = 60) -> str:
    shown = " ".join(text.split()) if text.strip() else text
    return f"“{shown if len(shown) <= most else shown[: most - 1] + '…'}”"


def node_words(node: TreeNode, noun: str, *, quote: bool = True) -> str:
    """What a screen reader says of a node before its text: "3 of 5 samples continue" (all of
    them: "all 5 samples start"); with ``quote``, the node's text follows, quoted."""
    singular = noun[:-1] if noun.endswith("s") else noun
    verb = "start" if node.depth == 1 else "continue"
    if node.count == node.of:
        n = "the" if node.of == 1 else f"all {node.of}"
        words = f"{n} {singular if node.of == 1 else noun} {verb}{'s' if node.of == 1 else ''}"
    else:
        words = f"{node.count} of {node.of} {noun} {verb}{'s' if node.count == 1 else ''}"
    words = words[0].upper() + words[1:]
    return f"{words} {_quoted(node.text)}" if quote else words


def changes(
    before: Sequence[TreeNode], after: Sequence[TreeNode]
) -> tuple[list[TreeNode], list[int]]:
    """What a page showing ``before`` needs to show ``after``: the nodes new or changed (in
    ``after``'s order: a parent before its children) and the ids gone."""
    old = {n.id: n for n in before}
    new_ids = {n.id for n in after}
    changed = [n for n in after if old.get(n.id) != n]
    return changed, [i for i in old if i not in new_ids]
