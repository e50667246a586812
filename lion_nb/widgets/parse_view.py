"""``ParseView``: a structured result as a tree table, its validation errors per field, and the
parse attempts that led to it — filled in live while a structured reply streams.

    ParseView(order)                               # a validated result
    ParseView(Order, branch=branch)                # live: follows the branch's next reply
    ParseView(Order, errors=exc)                   # a ValidationError / ParseError, per field

Live mode validates each JSON value as it completes (``incremental.live_parse.LiveParse``),
never the accumulated text per chunk; the page is updated at most ``1 / refresh_interval`` times
a second through the view's channel (``widgets.channel``, to the shared front end
``widgets/lion_nb.js``), each row of the tree a part of its own inside the table (a nested
part): an update sends only the rows that changed, and the page reveals what one brought over
the frames until the next; the view is ``busy`` while a reply streams into it, and its settling
update (busy false) shows at once. Its complete state is synced too. The state is ``viewmodels.parse.ParseModel``; the HTML comes from
``render.parse_tree``; this class only maps them to widgets.

A live view with a ``branch`` follows *one* structured reply and the parse of it, then settles:

- it shows the text reply streaming on the branch (a newer reply replaces one that did not
  validate: a parse repair turn's reply is followed like the original), from the reply's
  snapshot, so a view made while the reply streams shows it from its start;
- it collects the ``ParseAttempt`` signals of the first parse that starts (attempt 0) after the
  view was made; attempts of a parse already under way are ignored;
- it settles at that parse's valid attempt or its last failed one (``ParseAttempt.final``:
  retries used up, whatever ``handle_validation`` then does), or, when no parse settled it, at
  the end of a run in which it followed a reply (a reply without ``response_format``, a run that
  failed mid-reply). Settled, it stops listening - later replies, parses and runs on the branch
  do not change it - and replaces its saved static output (``refresh_static``), so a notebook
  saved afterwards holds the parsed result even when no run ended (``branch.parse``).

A text that never streamed here (``branch.parse(text, ...)``, a non-streaming model) is read
from the settling attempt's ``raw`` text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from lion_nb.render.parse_tree import (
    attempts_html,
    errors_html,
    parse_header_html,
    parse_view_html,
    tree_frame_html,
    tree_row_html,
)
from lion_nb.signals import MessageAdded, ParseAttempt, RunEnd, RunFailed, Signal, StreamDelta
from lion_nb.viewmodels.parse import Effect, ParseModel
from lion_nb.viewmodels.parse_tree import TreeRow
from lion_nb.widgets.channel import MAX_RATE, Op, in_order
from lion_nb.widgets.front import Front
from lion_nb.widgets.protocol import PutOp, drop_op, put_op

if TYPE_CHECKING:
    from lion_nb.incremental.live_parse import LiveParse
    from lion_nb.session.branch import Branch

__all__ = ["ParseView"]

_SIGNALS = (StreamDelta, MessageAdded, ParseAttempt, RunEnd, RunFailed)


class ParseView(Front):
    """A structured result as a tree table, its validation errors per field, and the parse
    attempts that led to it; given a model *type*, filled in live as the reply streams.

    Three ways to make one: a result (a pydantic model instance, dict or list) shows it;
    a model type with ``branch`` follows the branch's next structured reply and the parse of
    it (each field appears as its JSON value completes), then settles and stops listening;
    a model type with ``errors`` shows a finished parse that failed, its fields listed with
    the failing ones marked. A saved notebook keeps the settled result as HTML.

    Args:
        result_or_model_type: The result to show, or the pydantic model class a reply is
            parsed into (live mode).
        branch: The branch whose next reply and ``ParseAttempt`` signals feed live mode.
        errors: A ``ValidationError``, a ``ParseError`` caused by one, or a list of pydantic
            error dicts: the errors of a finished parse.
        attempts: The attempts of a finished parse (dicts with ``attempt``, ``ok``, ``raw``,
            ``errors``).
        title: The heading; default: the model's name.
        refresh_interval: Seconds between live updates of the page at most.

    Raises:
        ValueError: Both ``errors`` and ``branch`` given with a model type (a finished
            parse, or the next one: not both).

    Example:
        ```python
        view = ParseView(Order, branch=branch)  # shows the next reply as it is parsed
        view
        order = await branch.communicate("Order two apples.", response_format=Order)
        view.result  # the same Order, once the view has settled
        ```
    """

    def __init__(
        self,
        result_or_model_type: Any,
        *,
        branch: Branch | None = None,
        errors: Any = None,
        attempts: list[dict[str, Any]] | None = None,
        title: str | None = None,
        refresh_interval: float = 1 / MAX_RATE,
    ) -> None:
        target = result_or_model_type
        is_type = isinstance(target, type) and issubclass(target, BaseModel)
        if is_type and errors is not None and branch is not None:
            raise ValueError(
                "errors= shows a finished parse, branch= follows the next one: give one of them"
            )
        super().__init__(kind="parse")
        self.model = ParseModel(target, errors=errors, attempts=attempts, title=title)
        self.branch = branch
        self.channel.interval = refresh_interval  # one throttle: the channel's
        self._shown: dict[str, str] = {}  # the view's parts: key -> HTML
        self._rows: dict[str, str] = {}  # the tree's rows (parts in part "tree"), in order
        self._row_keys: dict[Any, str] = {}  # a row's path -> its part's key
        self._unsubscribe: Callable[[], None] = lambda: None
        if branch is not None:
            self._unsubscribe = branch.subscribe(_SIGNALS, self._on_signal)
        self._render()
        # the comm opened (in ``Front.__init__``) with empty parts, and the ops just pushed
        # reach no page yet (custom messages are not replayed to a view drawn later): send
        # the state, or a finished result, which sends nothing more, stays an empty box
        self.sync_state(send=True)
        self._ready = True

    # ----- the view model's state ------------------------------------------------------------
    @property
    def live(self) -> bool:
        """Whether the view follows a reply being parsed (made from a model type, no errors)."""
        return self.model.live

    @property
    def model_type(self) -> type[BaseModel] | None:
        """The pydantic model the result is (or is being parsed into); None for a dict or list."""
        return self.model.model_type

    @property
    def parser(self) -> LiveParse | None:
        """The incremental parser of the streamed reply in live mode, else None."""
        return self.model.parser

    @property
    def result(self) -> Any:
        """The result given, or in live mode the validated model once the reply validates."""
        self.model.catch_up()
        return self.model.result

    @property
    def errors(self) -> list[dict[str, Any]]:
        """The finished parse's errors as pydantic error dicts (``loc``, ``msg``, ``type``)."""
        return self.model.errors

    @property
    def attempts(self) -> list[dict[str, Any]]:
        """The parse attempts seen or given, in order (``attempt``, ``ok``, ``raw``, ``errors``)."""
        return self.model.attempts

    @property
    def settled(self) -> bool:
        """Whether the followed reply and its parse are over (the view no longer changes)."""
        return self.model.settled

    @property
    def status(self) -> str:
        """``"waiting"``, ``"streaming"``, ``"valid"``, ``"invalid"`` or ``"not-json"``."""
        return self.model.status

    def rows(self) -> list[TreeRow]:
        """The tree table's rows, depth first: what arrived and, live, what is still to come."""
        return self.model.rows()

    def current_errors(self) -> list[dict[str, Any]]:
        """The errors shown now: the live parser's while a reply streams, else ``errors``."""
        return self.model.current_errors()

    # ----- input -------------------------------------------------------------------------
    def feed(self, delta: str) -> None:
        """Add text of the structured reply (live mode)."""
        self._apply(self.model.feed(delta))

    def finish(self) -> Any:
        """The reply ended: validate it whole; returns the result (or None)."""
        result = self.model.finish()
        self._busy(False)
        self._render()
        return result

    def set_result(self, result: Any, errors: Any = None) -> None:
        """Show a finished result (and its errors, if any)."""
        self.model.set_result(result, errors)
        self._render()

    def _on_signal(self, signal: Signal) -> None:
        if not self.closed:
            self._apply(self.model.on_signal(signal))

    def _apply(self, effect: Effect) -> None:
        if effect == "later":
            self._busy(True)
            self.channel.stream("tree", self._ops)  # throttled by the channel
        elif effect == "now":
            self._render()
        elif effect == "settled":
            # a parse emits no RunEnd of its own: the saved output is replaced here
            self._unsubscribe()
            self._busy(False)
            self._render()
            self.refresh_static()

    def _busy(self, busy: bool) -> None:
        """A reply streams into the view (the page reveals each update's values over the
        frames until the next), or the parse settled: its last update shows at once, exact. The
        chrome op goes with the update of the same moment."""
        if self.chrome_value("busy") != busy:
            self.set_chrome(busy=busy)

    # ----- output ------------------------------------------------------------------------
    def header_html(self) -> str:
        """The view's heading as HTML: the title, the status and why a reply is not JSON."""
        return parse_header_html(self.title, self.status, self.model.detail())

    def _pieces(self) -> dict[str, str]:
        return {
            "header": self.header_html(),
            "tree": tree_frame_html(),
            "errors": errors_html(self.current_errors()),
            "attempts": attempts_html(self.attempts),
        }

    def _render(self) -> None:
        """Send what changed now (not waiting for the throttle)."""
        if self.closed:
            return
        self.channel.forget("tree")
        ops = self._ops()
        if ops:
            self.channel.push(*ops)
        if self.model.settled or not self.live:
            self.sync_state()

    def _ops(self) -> list[Op]:
        """The ops that bring the page up to date: the parts and rows that changed."""
        if self.closed:
            return []
        self.model.catch_up()
        if self.title != self.model.title:
            self.title = self.model.title
        pieces = self._pieces()
        ops: list[Op] = [
            put_op(key, value, before=None)
            for key, value in pieces.items()
            if self._shown.get(key) != value
        ]
        self._shown = pieces
        return ops + self._row_ops(self.rows())

    def _row_ops(self, rows: list[TreeRow]) -> list[Op]:
        new: dict[str, str] = {}
        for row in rows:
            ident = ("more",) if row.kind == "more" else row.path
            key = self._row_keys.setdefault(ident, f"t{len(self._row_keys)}")
            new[key] = tree_row_html(row)
        ops: list[Op] = [drop_op(key) for key in self._rows if key not in new]
        keys = list(new)
        for at, (key, value) in enumerate(new.items()):
            old = self._rows.get(key)
            if old == value:
                continue
            op: PutOp = put_op(key, value)
            if old is None:
                op["parent"] = "tree"
                later = next((k for k in keys[at + 1 :] if k in self._rows), None)
                if later is not None:  # else at the end
                    op["before"] = later
            self._rows[key] = value
            ops.append(op)
        self._rows = in_order(self._rows, keys)
        return ops

    def state_parts(self) -> list[list[str]]:
        """The view's parts as the page holds them: ``[key, html]``, each tree row as
        ``[key, html, "tree"]`` (a part inside the table)."""
        parts = [[key, value] for key, value in self._shown.items()]
        return parts + [[key, value, "tree"] for key, value in self._rows.items()]

    def static_html(self) -> str:
        """The view as HTML for a saved notebook: heading, tree, errors and attempts."""
        return parse_view_html(
            self.header_html(), self.rows(), self.current_errors(), self.attempts
        )

    def static_text(self) -> str:
        """The view as plain text: the title and status, a line per row, a line per error."""
        lines = [f"{self.title}: {self.status}"]
        for row in self.rows():
            value = "" if row.value is None else f" = {row.value}"
            lines.append(f"{'  ' * row.depth}{row.key}: {row.type}{value}")
        lines.extend(
            f"error at {'.'.join(map(str, e.get('loc') or [])) or '(root)'}: {e.get('msg')}"
            for e in self.current_errors()
        )
        return "\n".join(lines)

    def _release(self) -> None:
        self._unsubscribe()
        self.channel.forget("tree")

    def __repr__(self) -> str:
        return f"<ParseView {self.title} {self.status}>"
