"""The chat view's tree of what could have been: the alternatives of one turn — its samples
(Sample ×5, ``view.asample``), its forks from tokens, the reply itself — merged into one prefix
tree (``viewmodels.reply_tree.ReplyTree``), drawn live as they stream by the page
(``widgets/tree.js``) from ``tree`` ops; picking a node shows that alternative in the chat view.

Which turn: the tree opens by itself when the view shows a sample or a token fork (the first
sample is shown before the runs start, so the tree is there for their first words), and on
the page's ``tree`` action (a reply's "Tree" control) or ``view.show_tree(index)``. Its
alternatives are the conversation's branches that hold the turn's messages before the reply
(a sample's fork holds them up to its instruction, which it sends again): each is followed
through its own signals — the ``CallStart`` that names the id its reply streams under, the
``StreamDelta``s (text, and tokens when the reply has them), the reply's ``MessageAdded`` and
the ``CallEnd`` — so the four other samples grow in the tree while the view shows the first.

What the page is sent: a ``tree`` op per throttled update of the view's channel with only what
changed (nodes new or changed, a growing node's new text only, the ids gone), and the whole tree
as the synced trait ``tree_state`` (a reset op, set quietly: a page that attaches later draws
it). The panel knows its view only as a ``ChatHost``; it writes no HTML
(``render.reply_tree_html`` is the saved notebook's copy).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lion_nb.messages import AssistantResponse
from lion_nb.render.reply_tree_html import reply_tree_html
from lion_nb.session.conversation import same_message
from lion_nb.signals import CallEnd, CallStart, MessageAdded, Signal, StreamDelta
from lion_nb.viewmodels.reply_tree import ReplyTree, TreeNode, changes, node_words
from lion_nb.widgets.chat_host import Action, ChatHost, index_of
from lion_nb.widgets.protocol import TreeNodeOp, TreeOp, tree_op

if TYPE_CHECKING:
    from lion_nb.session.branch import Branch

__all__ = ["ReplyTreePanel"]

_SIGNALS = (CallStart, StreamDelta, MessageAdded, CallEnd)
_BUSY = "The replies are still coming: pick a branch once they are in (or stop them)."


def _label(branch: Branch) -> tuple[str, str]:
    """An alternative's name and kind, from what its branch says it is."""
    sample = branch.metadata.get("sample")
    if isinstance(sample, dict) and "n" in sample:
        return f"sample {sample['n']}/{sample.get('of', '?')}", "sample"
    origin = branch.metadata.get("forked_from") or {}
    if "token_index" in origin:
        return f"fork at token {origin['token_index'] + 1}: “{origin.get('token', '')}”", "fork"
    again = branch.metadata.get("regenerated")
    if isinstance(again, dict) and "temperature" in again:
        return f"regenerated at temperature {again['temperature']:g}", "reply"
    return "", "reply"


def _reply_at(origin: Branch, fork: Branch) -> int | None:
    """Where the reply a fork of ``origin`` answers anew stands: the first reply of
    ``origin`` at or after the messages they share."""
    theirs, ours = list(origin.messages), list(fork.messages)
    common = 0
    for a, b in zip(theirs, ours, strict=False):
        if not same_message(a, b):
            break
        common += 1
    return next(
        (k for k in range(common, len(theirs)) if isinstance(theirs[k], AssistantResponse)), None
    )


class ReplyTreePanel:
    """The reply tree of a chat view: a panel ``BranchView`` holds (it knows the view only as a
    ``ChatHost``): ``show_tree``, ``tree``, and the page actions ``tree`` and ``tree_pick``."""

    def __init__(self, host: ChatHost) -> None:
        self._host = host
        self.tree: ReplyTree | None = None
        self._k = 0  # the reply's position in the turn's branches
        self._prefix: list[Any] = []  # the messages before it
        self._title = ""
        self._members: dict[str, Branch] = {}  # alternative key (branch id) -> branch
        self._subs: dict[str, Callable[[], None]] = {}  # branch id -> unsubscribe
        self._streams: dict[uuid.UUID, str] = {}  # a reply streaming -> its alternative
        self._tokens: dict[str, list[str]] = {}  # the token texts streamed so far
        self._texts: dict[str, StreamDelta] = {}  # the last text delta not applied yet
        self._seen: set[str] = set()  # branches shown: a fork opens the tree when first shown
        self._sent: list[TreeNode] = []
        self._sent_head: dict[str, Any] = {}
        self._note = ""
        self._v = 0  # counts the tree ops sent, across trees (the page keeps the newest)

    def actions(self) -> dict[str, Action]:
        """This panel's page actions (the view's ``ActionTable``)."""
        return {"tree": self._action_tree, "tree_pick": self._action_tree_pick}

    # ----- opening and closing ----------------------------------------------------------------
    def show_tree(self, index: int | None = None, *, open: bool = True) -> ReplyTree | None:
        """Open (or close) the tree of the turn of the reply at ``index`` of the shown branch
        (the last reply when None); returns the tree."""
        if not open:
            self.close()
            return None
        messages = list(self._host.branch.messages)
        if index is None:
            index = next(
                (i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "assistant"),
                None,
            )
            if index is None:
                raise ValueError("there is no reply to show the alternatives of")
        index %= len(messages)
        if not isinstance(messages[index], AssistantResponse):
            raise ValueError(f"message {index} is not a reply")
        self._open(self._host.branch, index)
        return self.tree

    def _open(self, origin: Branch, k: int) -> None:
        self._unsubscribe()
        self.tree = ReplyTree()
        self._k, self._prefix = k, list(origin.messages[:k])
        n = sum(1 for m in self._prefix if m.role == "assistant") + 1
        self._title = f"What could have been: the alternatives of reply {n}"
        self._sent, self._sent_head, self._note = [], {}, ""
        self._follow()
        self._push(reset=True)
        self._host.refresh_static()  # the saved notebook shows the tree

    def close(self) -> None:
        """Close the tree (the page drops it)."""
        if self.tree is None:
            return
        self._unsubscribe()
        self.tree = None
        self._host.channel.forget("reply-tree")
        self._host.set_quietly(tree_state={})
        self._v += 1
        self._host.channel.push(tree_op(self._v, open=False, reset=True))
        self._host.refresh_static()

    def _unsubscribe(self) -> None:
        for stop in self._subs.values():
            stop()
        self._subs.clear()
        self._members.clear()
        self._streams.clear()
        self._tokens.clear()
        self._texts.clear()

    # ----- following the conversation -----------------------------------------------------------
    def sync(self) -> None:
        """The view shows another branch, or its alternatives changed: a sample or token fork
        shown for the first time opens the tree of its turn; an open tree follows the
        conversation's new branches and marks the one shown."""
        shown = self._host.branch
        if not self._host.running:
            self._note = ""
        if str(shown.id) not in self._seen:
            self._seen.add(str(shown.id))
            self._open_for_fork(shown)
        if self.tree is not None:
            self._follow()
            self._push()

    def _open_for_fork(self, shown: Branch) -> None:
        if _label(shown)[1] == "reply":
            return
        origin_id = (shown.metadata.get("forked_from") or {}).get("branch_id")
        origin = next((b for b in self._host.conversation.branches if str(b.id) == origin_id), None)
        k = _reply_at(origin, shown) if origin is not None else None
        if origin is None or k is None:
            return
        if self.tree is None or k != self._k or not self._member(shown):
            self._open(origin, k)

    def _member(self, branch: Branch) -> bool:
        """``branch`` holds the turn's messages before the reply (a sample's fork may hold
        them up to the instruction it sends again)."""
        messages = list(branch.messages)
        k = self._k
        if len(messages) < k - 1:
            return False
        return all(same_message(a, b) for a, b in zip(messages[:k], self._prefix, strict=False))

    def _follow(self) -> None:
        assert self.tree is not None
        for branch in self._host.conversation.branches:
            key = str(branch.id)
            if key in self._subs or not self._member(branch):
                continue
            self._subs[key] = branch.subscribe(_SIGNALS, self._handler(key))
            self._members[key] = branch
            label, kind = _label(branch)
            reply = branch.messages[self._k] if len(branch.messages) > self._k else None
            if isinstance(reply, AssistantResponse):
                self._recorded(key, reply)
            elif kind != "reply":  # a sample or a fork about to be asked: it is on its way
                self.tree.update(key, label=label, kind=kind, state="waiting")

    def _handler(self, key: str) -> Callable[[Signal], None]:
        def on_signal(signal: Signal) -> None:
            if self.tree is None or key not in self._members:
                return
            if isinstance(signal, StreamDelta):
                self._on_delta(key, signal)
            elif isinstance(signal, CallStart):
                self._on_call_start(key, signal)
            elif isinstance(signal, MessageAdded):
                if signal.message.id in self._streams:
                    self._recorded(key, signal.message)
                    self._push()
            elif isinstance(signal, CallEnd) and signal.message_id in self._streams:
                self._on_call_end(key, signal)

        return on_signal

    def _on_call_start(self, key: str, signal: CallStart) -> None:
        assert self.tree is not None
        branch = self._members[key]
        k = self._k
        if len(branch.messages) > k:
            return  # its reply to this turn is in: this is a later turn
        ins = signal.instruction
        if len(branch.messages) < k and (ins is None or not same_message(ins, self._prefix[-1])):
            return  # another instruction: not this turn
        self._streams[signal.message_id] = key
        self._tokens[key] = []
        label, kind = _label(branch)
        self.tree.update(key, text="", label=label, kind=kind, state="streaming")
        self._push()

    def _on_delta(self, key: str, signal: StreamDelta) -> None:
        if self._streams.get(signal.message_id) != key:
            return
        if signal.kind == "text":
            self._texts[key] = signal  # its snapshot is read when the update goes out
        elif signal.kind == "tokens" and signal.tokens is not None:
            tokens = self._tokens.setdefault(key, [])
            if signal.token_index <= len(tokens):
                tokens[signal.token_index :] = [str(t.text) for t in signal.tokens]
                self._texts.pop(key, None)
                assert self.tree is not None
                self.tree.update(key, tokens=tokens)
        else:
            return
        self._host.channel.stream("reply-tree", self._ops)

    def _on_call_end(self, key: str, signal: CallEnd) -> None:
        assert self.tree is not None
        del self._streams[signal.message_id]
        if signal.recorded:
            return  # its MessageAdded came first
        self._texts.pop(key, None)
        if signal.outcome == "failed":  # a sample that failed leaves no fork
            self.tree.remove(key)
            self._members.pop(key, None)
        else:
            self.tree.update(key, state="stopped")
        self._push()

    def _recorded(self, key: str, reply: Any) -> None:
        assert self.tree is not None
        label, kind = _label(self._members[key])
        tokens = getattr(reply, "tokens", None)
        self._texts.pop(key, None)
        self.tree.update(
            key,
            text=reply.text,
            tokens=[str(t.text) for t in tokens] if tokens else None,
            label=label,
            kind=kind,
            state="stopped" if reply.metadata.get("stopped") else "done",
        )

    # ----- what the page is sent --------------------------------------------------------------
    def _push(self, *, reset: bool = False) -> None:
        if reset:
            self._host.channel.forget("reply-tree")
            self._host.channel.push(*self._ops(reset=True))
        else:
            self._host.channel.stream("reply-tree", self._ops)

    def _order(self) -> list[str]:
        tree = self.tree
        assert tree is not None
        return sorted(tree.alternatives, key=lambda key: tree.alternatives[key].order)

    def _head(self) -> dict[str, Any]:
        assert self.tree is not None
        order = self._order()
        shown = str(self._host.branch.id)
        return {
            "title": self._title,
            "head": self.tree.heading(),
            "alts": [self.tree.alternatives[k].words() for k in order],
            "shown": order.index(shown) if shown in order else -1,
            "note": self._note,
        }

    def _ops(self, *, reset: bool = False) -> list[TreeOp]:
        tree = self.tree
        if tree is None:
            return []
        for key, delta in self._texts.items():
            tree.update(key, text=delta.snapshot)
        self._texts.clear()
        nodes = tree.outline()
        before = [] if reset else self._sent
        changed, dropped = changes(before, nodes)
        head = self._head()
        fresh = dict(i for i in head.items() if reset or self._sent_head.get(i[0]) != i[1])
        if not (changed or dropped or fresh):
            return []
        index = dict(zip(self._order(), range(tree.size), strict=True))
        old = {n.id: n for n in before}
        fields: dict[str, Any] = dict(fresh)
        if changed:
            fields["nodes"] = [self._node(n, old.get(n.id), index, tree.noun()) for n in changed]
        if dropped:
            fields["drop"] = dropped
        if reset:
            fields.update(reset=True, open=True)
        self._sent, self._sent_head = nodes, head
        self._v += 1
        whole = [self._node(n, None, index, tree.noun()) for n in nodes]
        state = tree_op(self._v, reset=True, open=True, nodes=whole, **head)
        self._host.set_quietly(tree_state=state)  # what a page that attaches later draws
        return [tree_op(self._v, **fields)]

    @staticmethod
    def _node(node: TreeNode, old: TreeNode | None, index: dict[str, int], noun: str) -> TreeNodeOp:
        out: TreeNodeOp = {
            "id": node.id,
            "p": node.parent,
            "o": node.order,
            "b": [index[k] for k in node.keys],
            "e": [index[k] for k in node.ends],
            "of": node.of,
        }
        if old is None or not node.text.startswith(old.text):
            out["t"] = node.text
        elif node.text != old.text:
            out["a"] = node.text[len(old.text) :]
        words = node_words(node, noun, quote=False)
        if old is None or node_words(old, noun, quote=False) != words:
            out["w"] = words
        return out

    # ----- the page's asks ---------------------------------------------------------------------
    def _action_tree(self, content: dict[str, Any]) -> None:
        if not content.get("open", True):
            self.close()
            return
        index = index_of(self._host.branch, content)
        if index is not None:
            try:
                self.show_tree(index)
            except ValueError as exc:
                self._host.show_error(exc)

    def _action_tree_pick(self, content: dict[str, Any]) -> None:
        node = content.get("node")
        if self.tree is None or not isinstance(node, int):
            return
        key = self.tree.branch_at(node, prefer=str(self._host.branch.id))
        branch = self._members.get(key) if key is not None else None
        if branch is None:
            return
        if self._host.running:
            self._note = _BUSY
            self._push()
            return
        self._note = ""
        if branch is not self._host.branch:
            self._host.conversation.show(branch)
        self._push()

    # ----- the saved notebook ---------------------------------------------------------------
    def static_html(self) -> str:
        """The open tree as the saved notebook shows it (``render.reply_tree_html``)."""
        if self.tree is None or not self.tree.size:
            return ""
        return reply_tree_html(self.tree, title=self._title, shown=str(self._host.branch.id))
