"""The chat view's reply tree (``widgets/reply_tree_panel.py``): Sample ×5 opens the tree of
the turn by itself and the samples grow in it as they stream (deltas: a growing node's new text
only), token forks join the same tree, picking a node shows that alternative, and what the
page is sent adds up to the synced state a page attaching later draws."""

from __future__ import annotations

import asyncio
import math
from typing import Any

from lion_nb import Session, iModel
from lion_nb.widgets.chat_view import BranchView

ANSWERS = [
    "The sky is blue today.",
    "The sky is grey today.",
    "The sea is calm.",
    "The sky!",
    "The end.",
]


def tree_ops(sent: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [op for msg in sent for op in msg["ops"] if op["op"] == "tree"]


class PageTree:
    """What tree.js keeps of the ops: nodes by id (text, parent, alternatives), the head."""

    def __init__(self) -> None:
        self.v = 0
        self.open = False
        self.nodes: dict[int, dict[str, Any]] = {}
        self.head: dict[str, Any] = {}

    def apply(self, op: dict[str, Any]) -> None:
        if op["v"] <= self.v:
            return
        self.v = op["v"]
        if op.get("open") is False:
            self.open, self.nodes, self.head = False, {}, {}
            return
        if op.get("reset"):
            self.open, self.nodes = True, {}
        for name in ("title", "head", "alts", "shown", "note"):
            if name in op:
                self.head[name] = op[name]
        for n in op.get("nodes", []):
            node = self.nodes.setdefault(n["id"], {"text": ""})
            node.update({k: n[k] for k in ("p", "o", "b", "e", "of")})
            if "t" in n:
                node["text"] = n["t"]
            node["text"] += n.get("a", "")
            if "w" in n:
                node["w"] = n["w"]
        for gone in op.get("drop", []):
            self.nodes.pop(gone, None)

    def texts(self) -> list[str]:
        return sorted(n["text"] for n in self.nodes.values())


def sampled_view(delay: float = 0.01, **model: Any) -> tuple[BranchView, list[dict[str, Any]]]:
    replies = ["First answer.", *[{"text": a, "delay": delay} for a in ANSWERS]]
    branch = Session().new_branch(chat_model=iModel(provider="scripted", replies=replies, **model))
    view = BranchView(branch)
    sent: list[dict[str, Any]] = []
    view.channel._send = sent.append
    return view, sent


async def test_sample_five_opens_the_tree_and_the_samples_grow_in_it() -> None:
    view, sent = sampled_view(delay=0.05)  # ~0.25 s a reply: several throttled updates
    await view.asend("Hi")
    assert tree_ops(sent) == [] and view.reply_tree is None  # nothing to merge yet
    samples = await view.asample(5)
    await asyncio.sleep(0.2)
    ops = tree_ops(sent)
    assert ops[0]["reset"] and ops[0]["open"]
    assert ops[0]["alts"][1:] == [f"sample {i}/5 · waiting" for i in range(1, 6)]
    growing = [op for op in ops if any("a" in n for n in op.get("nodes", []))]
    assert len(growing) >= 2  # text arrived in several updates, as deltas
    tree = view.reply_tree
    assert tree is not None and tree.size == 6  # the reply and its five samples
    by_text = {n.text: n for n in tree.outline()}
    assert by_text["The"].count == 5 and by_text["The"].of == 6
    assert by_text[" sky is"].count == 2 and by_text[" sky is"].of == 5  # " sky!" differs
    leaves = sorted(k for n in tree.outline() for k in n.ends)
    assert leaves == sorted(str(b.id) for b in [*samples.branches, view.conversation.origin])
    assert tree.heading() == "6 replies · merged by words"
    # the page that applied the ops shows what the kernel's synced state holds
    page, late = PageTree(), PageTree()
    for op in ops:
        page.apply(op)
    late.apply(view.tree_state)
    assert page.texts() == late.texts() == sorted(n.text for n in tree.outline())
    assert page.nodes == late.nodes and page.head == late.head
    # the leaves name their samples; the shown one is marked
    assert page.head["alts"][1:] == [f"sample {i}/5" for i in range(1, 6)]
    assert page.head["shown"] == 1 + samples.branches.index(view.branch)
    view.close()


async def test_picking_a_node_shows_that_alternative() -> None:
    view, sent = sampled_view(delay=0.0)
    await view.asend("Hi")
    await view.asample(5)
    tree = view.reply_tree
    assert tree is not None
    grey = next(n for n in tree.outline() if "grey" in n.text)
    view.actions["tree_pick"]({"action": "tree_pick", "node": grey.id})
    assert view.branch.messages[-1].text == "The sky is grey today."
    assert view.title.startswith("Alternative 3 of 6")  # the switcher counts it as ever
    await asyncio.sleep(0.05)
    page = PageTree()
    for op in tree_ops(sent):
        page.apply(op)
    assert page.head["alts"][page.head["shown"]] == "sample 2/5"
    # a node shared by several: the one shown stays shown when it passes there
    top = tree.outline()[1]
    assert top.text == "The"
    view.actions["tree_pick"]({"action": "tree_pick", "node": top.id})
    assert view.branch.messages[-1].text == "The sky is grey today."
    # the first reply is an alternative too
    first = next(n for n in tree.outline() if n.text == "First answer.")
    view.actions["tree_pick"]({"action": "tree_pick", "node": first.id})
    assert view.branch is view.conversation.origin
    view.close()


async def test_a_pick_while_the_samples_stream_says_to_wait() -> None:
    view, sent = sampled_view(delay=0.05)
    await view.asend("Hi")
    task = asyncio.get_running_loop().create_task(view.asample(5))
    await asyncio.sleep(0.12)
    tree = view.reply_tree
    assert tree is not None and any(a.state == "streaming" for a in tree.alternatives.values())
    shown = view.branch
    view.actions["tree_pick"]({"action": "tree_pick", "node": tree.outline()[0].id})
    assert view.branch is shown
    await task
    await asyncio.sleep(0.05)
    notes = [op["note"] for op in tree_ops(sent) if "note" in op]
    assert notes and "still coming" in notes[-2] and notes[-1] == ""  # said, then cleared
    view.close()


def tok(text: str, p: float, *alts: tuple[str, float]) -> dict[str, Any]:
    top = sorted([(text, math.log(p)), *[(t, math.log(q)) for t, q in alts]], key=lambda a: -a[1])
    return {"text": text, "logprob": math.log(p), "top": [list(a) for a in top]}


async def test_a_token_fork_and_samples_in_one_tree_merged_by_tokens() -> None:
    story = [
        tok("The", 0.9),
        tok(" cat", 0.7, (" dog", 0.2)),
        tok(" sat", 0.5, (" ran", 0.4)),
        tok(".", 0.9),
    ]
    rest = [tok(" away", 0.8), tok(".", 0.9)]
    sampled = [[tok("The", 0.9), tok(" cat", 0.7), tok(" slept", 0.2), tok(".", 0.9)]] * 2
    replies = [{"tokens": story}, {"tokens": rest}, *[{"tokens": s} for s in sampled]]
    branch = Session().new_branch(
        chat_model=iModel(provider="scripted", logprobs=3, replies=replies)
    )
    view = BranchView(branch)
    view.channel._send = lambda _msg: None
    await view.asend("A story")
    fork = await view.afork_at_token(-1, 2, " ran")  # the fork opens the tree of its turn
    tree = view.reply_tree
    assert tree is not None and view.branch is fork
    assert fork.messages[-1].text == "The cat ran away."
    await view.asample(2, index=-1)
    assert tree is view.reply_tree and tree.size == 4  # the same turn: the same tree
    assert tree.mode == "tokens"
    shape = [(n.depth, n.text, n.count, len(n.ends)) for n in tree.outline()]
    assert shape == [
        (1, "The cat", 4, 0),
        (2, " sat.", 1, 1),
        (2, " ran away.", 1, 1),
        (2, " slept.", 2, 2),  # the two samples said the same
    ]
    labels = sorted(a.words() for a in tree.alternatives.values())
    assert labels == ["fork at token 3: “ ran”", "reply 1", "sample 1/2", "sample 2/2"]
    view.close()


async def test_the_tree_control_opens_and_closes_it_and_the_saved_notebook_shows_it() -> None:
    view, sent = sampled_view(delay=0.0)
    await view.asend("Hi")
    await view.aregenerate(temperature=0.8)  # a regenerate does not open the tree by itself
    assert view.reply_tree is None
    key = str(view.branch.messages[-1].id)
    view.actions["tree"]({"action": "tree", "key": key, "open": True})
    tree = view.reply_tree
    assert tree is not None and tree.size == 2
    labels = [a.words() for a in tree.alternatives.values()]
    assert labels == ["reply 1", "regenerated at temperature 0.8"]
    assert 'class="lion-rtree"' in view.static_html()
    view.actions["tree"]({"action": "tree", "key": "", "open": False})
    assert view.reply_tree is None and view.tree_state == {}
    await asyncio.sleep(0.01)
    assert tree_ops(sent)[-1]["open"] is False
    assert "lion-rtree" not in view.static_html()
    view.close()


def test_show_tree_needs_a_reply() -> None:
    view, _ = sampled_view()
    try:
        view.show_tree()
    except ValueError as exc:
        assert "no reply" in str(exc)
    else:
        raise AssertionError("no reply: nothing to show")
    view.close()


async def test_samples_stopped_midway_stay_in_the_tree_marked_stopped() -> None:
    view, _ = sampled_view(delay=0.1)
    await view.asend("Hi")
    task = asyncio.get_running_loop().create_task(view.asample(5))
    await asyncio.sleep(0.25)
    view.stop()
    try:
        await task
    except asyncio.CancelledError:
        pass
    await asyncio.sleep(0.05)
    tree = view.reply_tree
    assert tree is not None
    alts = list(tree.alternatives.values())
    # the long replies were cut (what they said stays), the short ones may have finished
    cut = [a for a in alts if a.text not in ("First answer.", *ANSWERS)]
    assert cut and all(a.state == "stopped" and "stopped" in a.words() for a in cut)
    assert all(a.state == "done" for a in alts if a not in cut)
    assert all(n.text for n in tree.outline())
    view.close()
