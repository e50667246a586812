"""The protocol between a live view's kernel side and its front end (``widgets/lion_nb.js``):
the one reference for its names. A test (``tests/widgets/test_protocol.py``) reads the module's
op handlers and page actions and checks they are exactly these.

**Messages, kernel -> page.** Every update is one custom comm message ``{"seq": n, "ops":
[...]}`` (``message``); ``n`` counts up by one per message. Each op addresses a *part* of the
view by its key (a message id, ``live:<id>``, ``pending:<id>``, a round...), except ``chrome``,
``draft`` and ``clip``. One ``TypedDict`` per op, below; ``OPS`` names them.

**Nested parts.** A part may sit inside another one (``put`` with ``parent``): a round's
pieces inside the round's box, a tree's rows inside its table. It goes in the element of the
parent marked ``data-parts`` (the parent's own element when it is marked), and it *is* the first
element of its HTML (no wrapper: a table row stays a row). Every op addresses it by its key like
any part; dropping or replacing a part drops the parts inside it. So a live view changes only the
piece that changed and streams text into a piece with ``add``/``tail`` as the chat view does: no
view re-sends its whole content per update.

**Sequence and resync.** The page applies a message only when its ``seq`` is the next one; one
already covered by the synced state (``seq <= applied``) is ignored; a gap means messages were
missed: the page sends ``{"action": "resync", "have": applied}`` once and ignores the stream
until the kernel sends the complete state (the synced traits ``parts``: ``[key, html]`` per
part, ``[key, html, parent]`` per nested part after its parent, and ``seq``, plus the
``CHROME`` traits), which it renders and continues from. The complete state is also what a view
that attaches later renders (a reload, a second view, a late front end): custom messages are
not replayed. The kernel syncs it (without sending) when the view comes to rest, and sends it
when a page asks or the saved output is refreshed. A page keeps the newest ``seq`` it has heard
per widget even while no view of it is drawn (a view made in one cell and shown in a later one):
a view drawn with an older synced state asks for the complete state at once (``resync``).

**Envelope budget.** Each message costs ~``ENVELOPE_BYTES`` of envelope on the wire (Jupyter's
header, parent header and signature), more than most ops it carries: updates are coalesced
(structural ops at once, streamed text at most ``max_rate`` times a second), ops that can wait
are held a moment to share a message, and the traffic of a streamed reply stays within
``BYTES_BUDGET_RATIO`` x its final HTML plus ``BYTES_BUDGET_PER_S`` per streaming second
(``benchmarks/bench_widget_traffic.py`` measures it).

**Actions, page -> kernel.** ``{"action": name, ...}``, with ``"key"`` (a part's key) for
per-message actions; the widget dispatches ``name`` through its one action table
(``chat_host.ActionTable``, keyed by ``ACTIONS``), which holds its ``_action_<name>`` methods
(``Front``: resync, copy, leave; the flow view open and stop; the inspector open, fork, page,
goto, filter and collapse) and, for the chat view, its panels' (the rest). ``ACTIONS`` names
them.

**What the page is given.** The synced trait ``protocol`` (``Front.protocol``) is ``PAGE``:
the op names, the action names and the chrome trait names, so the module holds no second list.
"""

from __future__ import annotations

from typing import Any, Final, Literal, NotRequired, TypedDict

__all__ = [
    "ACTIONS",
    "BYTES_BUDGET_PER_S",
    "BYTES_BUDGET_RATIO",
    "CHROME",
    "ENVELOPE_BYTES",
    "OPS",
    "PAGE",
    "TOP_CHUNK",
    "add_op",
    "attrs_op",
    "chrome_op",
    "clip_op",
    "draft_op",
    "drop_op",
    "message",
    "put_op",
    "sampler_op",
    "seal_op",
    "slot_op",
    "tail_op",
    "tokens_op",
    "tree_op",
]

ENVELOPE_BYTES = 550  # a comm message's envelope (header, parent header, signature)
BYTES_BUDGET_RATIO = 1.5  # a streamed reply's traffic: <= 1.5 x its final HTML ...
BYTES_BUDGET_PER_S = 16 * 1024  # ... + 16 KB per streaming second


# ----- ops: kernel -> page -----------------------------------------------------------------------
class PutOp(TypedDict):
    """Show part ``key``: sanitized HTML ``html`` (or ``tpl``: the name of a synced template,
    ``Front.templates``, the page holds already) before part ``before`` (None: at the end), or
    in place of part ``replace`` / of its own old self. ``parent``: a nested part, inside part
    ``parent`` (``before``: one of its other nested parts)."""

    op: Literal["put"]
    key: str
    html: NotRequired[str]
    tpl: NotRequired[str]
    before: NotRequired[str | None]
    replace: NotRequired[str]
    parent: NotRequired[str]


class DropOp(TypedDict):
    """Remove part ``key``."""

    op: Literal["drop"]
    key: str


class AddOp(TypedDict):
    """Finished Markdown blocks of a streaming card, appended to its ``frozen`` slot (each
    rendered once, by the kernel); the card's tail is emptied but for the last ``keep``
    characters (UTF-16 code units) of its text: the start of the next block, not sent again;
    then ``text`` is appended to the tail (what the next block grew by since: the page
    showed the blocks' text already, so without it the update shows nothing new)."""

    op: Literal["add"]
    key: str
    html: str
    keep: NotRequired[int]
    text: NotRequired[str]


class TailOp(TypedDict):
    """The growing last block of a streaming card: its re-rendered HTML while it is small
    (``html``), else the text that arrived (``text``; ``add``: after what it shows, else
    instead of it), set as ``textContent``."""

    op: Literal["tail"]
    key: str
    html: NotRequired[str]
    text: NotRequired[str]
    add: NotRequired[bool]


class SlotOp(TypedDict):
    """Slot ``slot`` of a streaming card (``head``, ``thinking``, ``tools``) becomes ``html``."""

    op: Literal["slot"]
    key: str
    slot: Literal["head", "thinking", "tools"]
    html: str


class SealOp(TypedDict):
    """A streaming card becomes the recorded card (``LiveMessage.seal_op``,
    ``LiveMessage.finish``), from pieces the kernel rendered separately
    (``render.html.assistant_parts``): the card element's classes ``cls`` and attributes
    ``attrs`` (data, not markup), its ``head``, ``thinking``, the blocks the page lacks
    (``add``), what follows the body (``after``); the part is renamed ``id``; ``fp`` is the
    ``fingerprint`` of the whole recorded card, so the synced state need not be re-sent."""

    op: Literal["seal"]
    key: str
    cls: str
    head: str
    add: str
    attrs: NotRequired[dict[str, str]]
    thinking: NotRequired[str]
    after: NotRequired[str]
    id: NotRequired[str]
    fp: NotRequired[int]


class AttrsOp(TypedDict):
    """Part ``key``'s element takes the classes ``cls`` and the attributes ``attrs`` (data, not
    markup), its content and the parts inside it staying: a round's box when its status
    changes."""

    op: Literal["attrs"]
    key: str
    cls: str
    attrs: NotRequired[dict[str, str]]


class ChromeOp(TypedDict):
    """New values of some ``CHROME`` traits (already the kernel's state). ``busy`` false: the
    view's run ended (a chat run, a parse settled), so what this message brought shows at once,
    not revealed over the next frames."""

    op: Literal["chrome"]
    values: dict[str, Any]


class DraftOp(TypedDict):
    """The prompt box's text. ``restore``: a Send that recorded nothing failed and gives its
    text back; the page keeps what the user typed since instead, if anything."""

    op: Literal["draft"]
    text: str
    restore: NotRequired[bool]


class ClipOp(TypedDict):
    """The text the copy control of part ``key`` asked for (``copy``)."""

    op: Literal["clip"]
    key: str
    text: str


class TokensOp(TypedDict):
    """The token view of reply ``key`` (``widgets.token_panels``; drawn by
    ``widgets/tokens.js``): tokens ``at``, ``at + 1``, ... — their texts ``t`` and surprise
    ``s`` (-log p in hundredths of a nat, an int) as they arrive (a delta: the page has the
    tokens before ``at``; ``at`` 0 starts the view afresh), and/or the alternatives ``top`` of
    those tokens (per token ``[[text, p], ...]``, p to 4 decimals, most likely first), sent
    when the page asks for them (``token_top``), not while the reply streams. ``e``: beside
    ``s``, the entropy of each token's stored alternatives (hundredths of a nat, -1 where none
    were stored), the surprise strip's second line."""

    op: Literal["tokens"]
    key: str
    at: int
    t: NotRequired[list[str]]
    s: NotRequired[list[int]]
    e: NotRequired[list[int]]
    top: NotRequired[list[list[list[str | float]]]]


class SamplerOp(TypedDict):
    """The sampling settings reply ``key`` was asked with, where its sampling panel starts
    (``widgets.sampling_panel``; drawn by ``widgets/sampling.js``): llama.cpp's defaults for
    what neither the turn nor the model says; ``given`` names the settings that are the
    model's (or the turn's) own. ``top_k`` 0: no cut."""

    op: Literal["sampler"]
    key: str
    temperature: float
    top_k: int
    top_p: float
    min_p: float
    given: list[str]


class TreeNodeOp(TypedDict):
    """One node of the reply tree as the page is sent it (``viewmodels.reply_tree.TreeNode``):
    its id, parent ``p`` (0: the turn's start), sibling order ``o``, the indexes (into ``alts``)
    of the alternatives through it ``b`` and ending at it ``e``, its count out of its parent's
    ``of``; its text whole (``t``) or what it grew by (``a``: appended to what the page has);
    ``w``, what a screen reader says before the text ("3 of 5 samples continue"), when it
    changed."""

    id: int
    p: int
    o: int
    b: list[int]
    e: list[int]
    of: int
    t: NotRequired[str]
    a: NotRequired[str]
    w: NotRequired[str]


class TreeOp(TypedDict):
    """The chat view's tree of what could have been (``widgets.reply_tree_panel``; drawn by
    ``widgets/tree.js``), version ``v``: ``reset`` drops what the page has first (a new turn;
    the synced trait ``tree_state`` is a reset op holding everything); ``open`` false closes
    it. ``title``, ``head`` (what it holds: "5 samples · merged by tokens · 2 streaming"),
    ``alts`` (each alternative's words: "sample 2/5 · streaming"), ``shown`` (the index of
    the alternative the chat view shows, -1: none), ``note`` (a line the page says) when they
    change; the nodes new or changed (a parent before its children) and those ``drop``ped."""

    op: Literal["tree"]
    v: int
    reset: NotRequired[bool]
    open: NotRequired[bool]
    title: NotRequired[str]
    head: NotRequired[str]
    alts: NotRequired[list[str]]
    shown: NotRequired[int]
    note: NotRequired[str]
    nodes: NotRequired[list[TreeNodeOp]]
    drop: NotRequired[list[int]]


Op = (
    PutOp
    | DropOp
    | AddOp
    | TailOp
    | SlotOp
    | SealOp
    | AttrsOp
    | ChromeOp
    | DraftOp
    | ClipOp
    | TokensOp
    | SamplerOp
    | TreeOp
)

OPS: dict[str, type] = {
    "put": PutOp,
    "drop": DropOp,
    "add": AddOp,
    "tail": TailOp,
    "slot": SlotOp,
    "seal": SealOp,
    "attrs": AttrsOp,
    "chrome": ChromeOp,
    "draft": DraftOp,
    "clip": ClipOp,
    "tokens": TokensOp,
    "sampler": SamplerOp,
    "tree": TreeOp,
}


# ----- op constructors: every op the kernel sends is built here, typed -----------------------------
class _Omitted:
    """A field left out of an op (``put_op``'s ``before``: None says "at the end", a field left
    out says "in the part's old place")."""

    def __repr__(self) -> str:
        return "<omitted>"


_OMITTED: Final = _Omitted()


def put_op(
    key: str,
    html: str | None = None,
    *,
    tpl: str | None = None,
    before: str | _Omitted | None = _OMITTED,
    replace: str | None = None,
    parent: str | None = None,
) -> PutOp:
    """A ``put``: ``before=None`` puts the part at the end; no ``before`` leaves it in its old
    place (or at the end when new)."""
    op: PutOp = {"op": "put", "key": key}
    if html is not None:
        op["html"] = html
    if tpl is not None:
        op["tpl"] = tpl
    if not isinstance(before, _Omitted):
        op["before"] = before
    if replace is not None:
        op["replace"] = replace
    if parent is not None:
        op["parent"] = parent
    return op


def drop_op(key: str) -> DropOp:
    return {"op": "drop", "key": key}


def add_op(key: str, html: str) -> AddOp:
    return {"op": "add", "key": key, "html": html}


def tail_op(
    key: str, *, html: str | None = None, text: str | None = None, add: bool | None = None
) -> TailOp:
    op: TailOp = {"op": "tail", "key": key}
    if html is not None:
        op["html"] = html
    if text is not None:
        op["text"] = text
    if add is not None:
        op["add"] = add
    return op


def slot_op(key: str, slot: Literal["head", "thinking", "tools"], html: str) -> SlotOp:
    return {"op": "slot", "key": key, "slot": slot, "html": html}


def seal_op(
    key: str,
    *,
    cls: str,
    head: str,
    add: str,
    id: str | None = None,
    attrs: dict[str, str] | None = None,
    thinking: str | None = None,
    after: str | None = None,
    fp: int | None = None,
) -> SealOp:
    op: SealOp = {"op": "seal", "key": key, "cls": cls, "head": head, "add": add}
    if id is not None:
        op["id"] = id
    if attrs is not None:
        op["attrs"] = attrs
    if thinking is not None:
        op["thinking"] = thinking
    if after is not None:
        op["after"] = after
    if fp is not None:
        op["fp"] = fp
    return op


def attrs_op(key: str, cls: str, attrs: dict[str, str] | None = None) -> AttrsOp:
    op: AttrsOp = {"op": "attrs", "key": key, "cls": cls}
    if attrs is not None:
        op["attrs"] = attrs
    return op


def chrome_op(values: dict[str, Any]) -> ChromeOp:
    return {"op": "chrome", "values": values}


def draft_op(text: str, *, restore: bool = False) -> DraftOp:
    op: DraftOp = {"op": "draft", "text": text}
    if restore:
        op["restore"] = True
    return op


def clip_op(key: str, text: str) -> ClipOp:
    return {"op": "clip", "key": key, "text": text}


def tokens_op(
    key: str,
    at: int,
    *,
    t: list[str] | None = None,
    s: list[int] | None = None,
    top: list[list[list[str | float]]] | None = None,
    e: list[int] | None = None,
) -> TokensOp:
    op: TokensOp = {"op": "tokens", "key": key, "at": at}
    if t is not None:
        op["t"] = t
    if s is not None:
        op["s"] = s
    if e is not None:
        op["e"] = e
    if top is not None:
        op["top"] = top
    return op


def sampler_op(
    key: str, *, temperature: float, top_k: int, top_p: float, min_p: float, given: list[str]
) -> SamplerOp:
    return {
        "op": "sampler",
        "key": key,
        "temperature": temperature,
        "top_k": top_k,
        "top_p": top_p,
        "min_p": min_p,
        "given": given,
    }


def tree_op(v: int, **fields: Any) -> TreeOp:
    """A ``tree`` op of version ``v``; ``fields`` are ``TreeOp``'s optional ones (those given,
    and only those, travel)."""
    unknown = set(fields) - set(TreeOp.__annotations__)
    if unknown:
        raise TypeError(f"not fields of a tree op: {sorted(unknown)}")
    op: TreeOp = {"op": "tree", "v": v}
    op.update(fields)  # type: ignore[typeddict-item]
    return op


# ----- actions: page -> kernel -------------------------------------------------------------------
class ResyncAction(TypedDict):
    """The page saw a gap in ``seq`` (it has applied ``have``): send the complete state."""

    action: Literal["resync"]
    have: int


class CopyAction(TypedDict):
    """A message's copy control: the kernel answers with a ``clip`` op."""

    action: Literal["copy"]
    key: str


class LeaveAction(TypedDict):
    """Focus left the view: a saved-output refresh waiting for that may go now."""

    action: Literal["leave"]


class SendAction(TypedDict):
    """Send ``text`` (Enter or Send)."""

    action: Literal["send"]
    text: str


class StopAction(TypedDict):
    """Stop the running reply (Esc or Stop)."""

    action: Literal["stop"]


class ClearAction(TypedDict):
    """Start afresh (a running reply is stopped first)."""

    action: Literal["clear"]


class RegenerateAction(TypedDict):
    """Answer the turn of reply ``key`` again, on a new alternative; ``temperature``: sampled
    at that temperature (offered while the model is at 0: the chrome trait ``sampling``)."""

    action: Literal["regenerate"]
    key: str
    temperature: NotRequired[float]


class EditAction(TypedDict):
    """Send prompt ``key`` again as ``text``, on a new alternative."""

    action: Literal["edit"]
    key: str
    text: str


class ContinueAction(TypedDict):
    """Ask for the rest of the truncated reply ``key``."""

    action: Literal["continue"]
    key: str


class SwitchAction(TypedDict):
    """Show the previous (``step`` -1) or next (1) alternative at message ``key``."""

    action: Literal["switch"]
    key: str
    step: int


class CompareAction(TypedDict):
    """Open the comparison of the alternative at ``key`` with the previous one."""

    action: Literal["compare"]
    key: str


class CompareCloseAction(TypedDict):
    """Close the comparison."""

    action: Literal["compare_close"]


class TokensAction(TypedDict):
    """Open (``open`` true: send its tokens from the first) or close the token view of reply
    ``key``."""

    action: Literal["tokens"]
    key: str
    open: bool


class TokenTopAction(TypedDict):
    """Send the alternatives of token ``at`` of reply ``key``: a ``tokens`` op with ``top``
    for the ``TOP_CHUNK`` tokens of the chunk holding it."""

    action: Literal["token_top"]
    key: str
    at: int


class ForkTokenAction(TypedDict):
    """Fork the conversation at token ``index`` of reply ``key``: the reply's first ``index``
    tokens, then ``text`` (an alternative), and the model continues from there
    (``Conversation.afork_at_token``); the view shows the fork."""

    action: Literal["fork_token"]
    key: str
    index: int
    text: str


class SampleAction(TypedDict):
    """Answer the turn of reply ``key`` ``n`` times at once, as forks (``view.asample``), at
    ``temperature`` and ``top_p`` (the page's controls; absent: the chrome trait
    ``sample_at``)."""

    action: Literal["sample"]
    key: str
    n: int
    temperature: NotRequired[float]
    top_p: NotRequired[float]


class SamplerAction(TypedDict):
    """Send the sampling settings reply ``key`` was asked with (a ``sampler`` op): the page
    asks once, when a token's pop-up first offers its sampling panel."""

    action: Literal["sampler"]
    key: str


class TreeAction(TypedDict):
    """Open (``open`` true) or close the tree of what could have been of reply ``key``'s turn:
    its alternatives (samples, forks from tokens) merged into one prefix tree."""

    action: Literal["tree"]
    key: str
    open: bool


class TreePickAction(TypedDict):
    """Show the alternative through node ``node`` of the reply tree in the chat view (the one
    shown when it passes there, else the first that ends there)."""

    action: Literal["tree_pick"]
    node: int


class OpenAction(TypedDict):
    """Show (or, shown, close) the detail of part ``key`` (a flow node's transcript; an
    inspector row: ``key`` is its message's position, the detail its card, payload and
    provenance)."""

    action: Literal["open"]
    key: str


class ForkAction(TypedDict):
    """Fork the branch at message ``key`` (its position) and show the fork (the inspector's
    "Fork here")."""

    action: Literal["fork"]
    key: str


class PageAction(TypedDict):
    """Show another page of the inspector's rows: ``to`` is "first", "prev", "next" or
    "last"."""

    action: Literal["page"]
    to: Literal["first", "prev", "next", "last"]


class GotoAction(TypedDict):
    """Show the page holding message ``index`` and expand it (the inspector's go-to box)."""

    action: Literal["goto"]
    index: int


class FilterAction(TypedDict):
    """List only the roles of filter ``name`` (the inspector's role filter)."""

    action: Literal["filter"]
    name: str


class CollapseAction(TypedDict):
    """Collapse every expanded row (the inspector's "Collapse all")."""

    action: Literal["collapse"]


ACTIONS: dict[str, type] = {
    "resync": ResyncAction,
    "copy": CopyAction,
    "leave": LeaveAction,
    "send": SendAction,
    "stop": StopAction,
    "clear": ClearAction,
    "regenerate": RegenerateAction,
    "edit": EditAction,
    "continue": ContinueAction,
    "switch": SwitchAction,
    "compare": CompareAction,
    "compare_close": CompareCloseAction,
    "tokens": TokensAction,
    "token_top": TokenTopAction,
    "fork_token": ForkTokenAction,
    "sample": SampleAction,
    "sampler": SamplerAction,
    "tree": TreeAction,
    "tree_pick": TreePickAction,
    "open": OpenAction,
    "fork": ForkAction,
    "page": PageAction,
    "goto": GotoAction,
    "filter": FilterAction,
    "collapse": CollapseAction,
}


# ----- the prompt as the model reads it (``widgets.prompt_view``, drawn by ``widgets/prompt.js``) -----
class PromptTokensOp(TypedDict):
    """The prompt a model read, token by token, for part ``key`` (a reply of the chat view, an
    inspector row's detail ``d<n>``, the standalone view's ``prompt``): the tokens' texts ``t``,
    the message each spells ``m`` (its index in ``roles``; -1: the template's scaffolding), the
    indices of the special tokens ``sp``, each message's role ``roles`` and the model's context
    window ``window`` (None: not known); or ``note``, in plain words, why there are no tokens
    (the model cannot tokenize, the call failed)."""

    op: Literal["prompt_tokens"]
    key: str
    t: NotRequired[list[str]]
    m: NotRequired[list[int]]
    sp: NotRequired[list[int]]
    roles: NotRequired[list[str]]
    window: NotRequired[int | None]
    note: NotRequired[str]


class PromptTokensAction(TypedDict):
    """Send the prompt part ``key`` was generated from, as the model read it (a
    ``prompt_tokens`` op): "What the model read"."""

    action: Literal["prompt_tokens"]
    key: str


def prompt_tokens_op(
    key: str,
    *,
    t: list[str] | None = None,
    m: list[int] | None = None,
    sp: list[int] | None = None,
    roles: list[str] | None = None,
    window: int | None = None,
    note: str | None = None,
) -> PromptTokensOp:
    op: PromptTokensOp = {"op": "prompt_tokens", "key": key}
    if note is not None:
        op["note"] = note
        return op
    op["t"], op["m"], op["sp"] = t or [], m or [], sp or []
    op["roles"], op["window"] = roles or [], window
    return op


OPS["prompt_tokens"] = PromptTokensOp
ACTIONS["prompt_tokens"] = PromptTokensAction
__all__ += ["prompt_tokens_op"]


# ----- the grid view (``widgets.grid_view``, drawn by ``widgets/grid.js``) ---------------------------
class GridRunAction(TypedDict):
    """Run cells ``[[row, column], ...]``, rows or columns of the grid again, afresh
    (``grid.run(cells=..., rows=..., columns=...)``, a task the view owns)."""

    action: Literal["grid_run"]
    cells: NotRequired[list[list[int]]]
    rows: NotRequired[list[int]]
    columns: NotRequired[list[int]]


class GridShowAction(TypedDict):
    """Show cell ``key``'s full text (``what`` "text") or its word diff against the baseline
    column (``"diff"``) in the panel under the grid; ``""`` closes the panel."""

    action: Literal["grid_show"]
    key: str
    what: Literal["text", "diff", ""]


class GridWindowAction(TypedDict):
    """The page shows rows ``first`` .. ``first + count`` of a large grid: put those (and a
    few around) on the page, drop the rest."""

    action: Literal["grid_window"]
    first: int
    count: int


ACTIONS["grid_run"] = GridRunAction
ACTIONS["grid_show"] = GridShowAction
ACTIONS["grid_window"] = GridWindowAction

# ----- synced traits -----------------------------------------------------------------------------
# the view's small traits, sent as ``chrome`` ops (and with the state on a resync)
CHROME = (
    "status_line",
    "error_box",
    "busy",
    "can_stop",
    "alt_marks",
    "cut_marks",
    "ctx",
    "compare_html",
    "token_marks",
    "pager",
    "cassette",
    "token_open",
    "sampling",
    "sample_at",
    "tree_state",
)

TOP_CHUNK = 64  # the alternatives of this many tokens go in one ``tokens`` op

# what the page is given (the synced trait ``protocol``): the names it needs, from here only
PAGE: dict[str, list[str]] = {
    "ops": list(OPS),
    "actions": list(ACTIONS),
    "chrome": list(CHROME),
}


def message(seq: int, ops: list[Any]) -> dict[str, Any]:
    """One update as it goes on the comm."""
    return {"seq": seq, "ops": ops}
