"""``ParseView``: a structured result as a tree table, its validation errors per field, and the
parse attempts that led to it — filled in live while a structured reply streams.

    ParseView(order)                               # a validated result
    ParseView(Order, branch=branch)                # live: follows the branch's next reply
    ParseView(Order, errors=exc)                   # a ValidationError / ParseError, per field

Live mode validates each JSON value as it completes (``render.live_parse.LiveParse``), never
the accumulated text per chunk; the table re-renders at most ``1 / refresh_interval`` times a
second. HTML comes from ``render.parse_tree``.

A live view with a ``branch`` follows *one* structured reply and the parse of it, then settles:

- it shows the text reply streaming on the branch (a newer reply replaces one that did not
  validate: a parse repair turn's reply is followed like the original);
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

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import ipywidgets
from pydantic import BaseModel, ValidationError

from lion_nb.render.live_parse import LiveParse
from lion_nb.render.parse_tree import (
    _e,
    attempts_html,
    errors_by_path,
    errors_html,
    tree_html,
    tree_rows,
    type_name,
)
from lion_nb.signals import MessageAdded, ParseAttempt, RunEnd, RunFailed, Signal, StreamDelta
from lion_nb.widgets.live import WidgetKit
from lion_nb.widgets.viewbase import StaticFallback, Throttle

if TYPE_CHECKING:
    from lion_nb.session.branch import Branch

__all__ = ["ParseView"]

_CSS = (
    ".lion-parse-tree,.lion-parse-errors{border-collapse:collapse;font-size:0.88em;width:100%}"
    ".lion-parse-tree td,.lion-parse-tree th,.lion-parse-errors td,.lion-parse-errors th"
    "{border-bottom:1px solid var(--lion-border);padding:0.15rem 0.5rem;text-align:left;"
    "vertical-align:top}"
    ".lion-parse-pending td{color:var(--lion-fg-muted)}"
    ".lion-parse-invalid td{background:var(--lion-error-bg)}"
    ".lion-parse-value{white-space:pre-wrap}"
    ".lion-parse-partial{white-space:pre-wrap;font-style:italic}"
    ".lion-parse-attempts{padding-left:1.2rem;font-size:0.9em}"
)


def _error_dicts(errors: Any) -> list[dict[str, Any]]:
    """A ValidationError, a ParseError caused by one, or a list of error dicts."""
    if errors is None:
        return []
    if isinstance(errors, list):
        return [dict(e) for e in errors]
    exc: BaseException | None = errors
    while exc is not None and not isinstance(exc, ValidationError):
        exc = exc.__cause__
    if isinstance(exc, ValidationError):
        return [
            {"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]}
            for e in exc.errors(include_url=False)
        ]
    return [{"loc": [], "msg": str(errors), "type": type(errors).__name__}]


class ParseView(StaticFallback, ipywidgets.VBox):
    """A result (pydantic model instance, dict or list) or, given a model *type*, a live view
    of the reply being parsed into it. ``branch`` feeds live mode from its signals (the next
    reply's text deltas, its ParseAttempt rounds); ``errors`` and ``attempts`` can be given
    for a finished parse. A model type with ``errors`` is a finished parse that failed: its
    fields are listed with the failing ones marked (no live mode, so no ``branch``)."""

    view_css = _CSS

    def __init__(
        self,
        result_or_model_type: Any,
        *,
        branch: Branch | None = None,
        errors: Any = None,
        attempts: list[dict[str, Any]] | None = None,
        title: str | None = None,
        refresh_interval: float = 0.1,
    ) -> None:
        target = result_or_model_type
        is_type = isinstance(target, type) and issubclass(target, BaseModel)
        if is_type and errors is not None and branch is not None:
            raise ValueError(
                "errors= shows a finished parse, branch= follows the next one: give one of them"
            )
        self.live = is_type and errors is None
        self.model_type: type[BaseModel] | None = (
            target if is_type else (type(target) if isinstance(target, BaseModel) else None)
        )
        self.result: Any = None if is_type else target
        self.errors = _error_dicts(errors)
        self.attempts: list[dict[str, Any]] = list(attempts or [])
        self.title = title or (type_name(self.model_type) if self.model_type else "Result")
        self.parser = LiveParse(self.model_type) if self.live else None
        self.branch = branch
        self._message_id: Any = None
        self._text: list[str] = []  # what was fed since the last reset (compared with attempts)
        self._parse_started = False  # attempt 0 of the parse this view follows has arrived
        self.settled = False  # the followed reply/parse is over; no longer listening
        self.closed = False
        self._kit = WidgetKit()
        self._style = self._kit.html(self.style_html())
        self._header = self._kit.html("")
        self._tree = self._kit.html("")
        self._errors = self._kit.html("")
        self._attempts = self._kit.html("")
        super().__init__(
            children=(self._style, self._header, self._tree, self._errors, self._attempts),
            _dom_classes=("lion-view", "lion-parse"),
        )
        self._refresh = Throttle(self._render, refresh_interval)
        self._unsubscribe: Callable[[], None] = lambda: None
        if branch is not None:
            self._unsubscribe = branch._observers.subscribe(
                (StreamDelta, MessageAdded, ParseAttempt, RunEnd, RunFailed), self._on_signal
            )
        self._render()
        self._ready = True

    # ----- input -------------------------------------------------------------------------
    @property
    def status(self) -> str:
        if self.parser is not None and self.result is None:
            if self.errors:  # the followed parse gave up
                return "not-json" if self.parser.status == "not-json" else "invalid"
            return self.parser.status
        return "invalid" if self.errors else "valid"

    def feed(self, delta: str) -> None:
        """Add text of the structured reply (live mode)."""
        if self.parser is None:
            raise TypeError("feed() needs a live ParseView (made from a model type)")
        self._text.append(delta)
        self.parser.feed(delta)
        if self.parser.status == "valid":  # the object closed and validated
            self.result = self.parser.result
            self._refresh.flush()
            return
        self._refresh.request()

    def finish(self) -> Any:
        """The reply ended: validate it whole; returns the result (or None)."""
        if self.parser is None:
            return self.result
        result = self.parser.finish()
        if isinstance(result, BaseModel):
            self.result = result
        self._refresh.flush()
        return result

    def set_result(self, result: Any, errors: Any = None) -> None:
        """Show a finished result (and its errors, if any)."""
        self.result = result
        self.errors = _error_dicts(errors)
        self._refresh.flush()

    def _on_signal(self, signal: Signal) -> None:
        if self.closed or self.settled or self.parser is None:
            return
        if isinstance(signal, StreamDelta):
            if signal.kind != "text":
                return
            if signal.message_id != self._message_id:
                if self.parser.status in ("valid", "invalid") and self.result is not None:
                    return  # keep a finished result; a later reply is someone else's
                self._message_id = signal.message_id  # a new reply: start over
                self._text = []
                self.parser.reset()
            self.feed(signal.delta)
        elif isinstance(signal, MessageAdded):
            if signal.message.id == self._message_id:
                self.finish()
        elif isinstance(signal, ParseAttempt):
            self._on_attempt(signal)
        elif isinstance(signal, RunEnd | RunFailed):
            if self._message_id is not None or self._parse_started:
                self._settle(None)
            # else: a run that showed this view nothing yet; keep waiting for the reply

    def _on_attempt(self, signal: ParseAttempt) -> None:
        if signal.attempt == 0:
            if self._parse_started:  # a second parse: the first ended without a final mark
                self._settle(None)
                return
            self._parse_started = True
        elif not self._parse_started:
            return  # a repair attempt of a parse that began before this view was made
        self.attempts.append(
            {
                "attempt": signal.attempt,
                "ok": signal.ok,
                "raw": signal.raw,
                "errors": list(signal.errors),
                "target": signal.target,
            }
        )
        if "".join(self._text) != signal.raw:
            # What streamed here is not what this attempt parsed (a given text, a reply of a
            # parse already under way, a non-streaming model): show the attempt's text.
            self._read(signal.raw)
        if signal.ok or signal.final:
            self._settle(signal)
        else:
            self._refresh.flush()

    def _settle(self, attempt: ParseAttempt | None) -> None:
        """The followed reply/parse is over: show its outcome, stop listening, and replace
        the saved static output (a parse emits no RunEnd of its own)."""
        self.settled = True
        self._unsubscribe()
        parser = self.parser
        if parser is None:  # only a live view follows a parse
            return
        if parser.status == "streaming":  # a repair turn's reply is never recorded: end it here
            parser.finish()
        if attempt is not None:
            if not attempt.ok:
                self.errors = list(attempt.errors)  # what parse saw (after fuzzy key matching)
            elif self.result is None:
                self.result = (
                    parser.result
                    if isinstance(parser.result, BaseModel)
                    else self._validated(attempt.raw)
                )
        self._refresh.flush()
        self.refresh_static()

    def _read(self, raw: str) -> None:
        """Show ``raw`` instead of what streamed, as if it had streamed whole."""
        if self.parser is None:  # only a live view follows a parse
            return
        self._message_id = None
        self._text = []
        self.result = None
        self.parser.reset()
        self.feed(raw)
        self.finish()

    def _validated(self, raw: str) -> Any:
        """The value ``parse`` got from ``raw`` (its local step: JSON found in the text, keys
        fuzzy-matched), or None when the parse was into another type."""
        from lion_nb.operations.parse import parse_locally
        from lion_nb.operations.types import ParseParam

        try:
            return parse_locally(raw, self.model_type, ParseParam(response_format=self.model_type))
        except ValueError:
            return None

    # ----- output ------------------------------------------------------------------------
    def rows(self) -> list[Any]:
        if self.parser is not None and self.result is None:
            return self.parser.rows()
        errors = errors_by_path(self.errors)
        if self.result is None and self.model_type is not None:
            # errors without the data (a ValidationError keeps no input): the model's fields,
            # the failing ones marked; nothing is "still to come"
            return [
                replace(r, kind="field", status="invalid" if r.errors else "")
                if r.kind == "pending"
                else r
                for r in tree_rows({}, model_type=self.model_type, errors=errors)
            ]
        return tree_rows(self.result, model_type=self.model_type, errors=errors)

    def current_errors(self) -> list[dict[str, Any]]:
        if self.parser is not None and self.result is None and not self.errors:
            return self.parser.all_errors()
        return self.errors

    def header_html(self) -> str:
        status = self.status
        detail = ""
        if self.parser is not None and self.parser.error and status == "not-json":
            detail = f" — {self.parser.error}"
        return (
            f'<div class="lion-round-head"><span class="lion-round-title">'
            f'{_e(self.title)}</span><span class="lion-status lion-parse-{_e(status)}">'
            f'{_e(status)}</span><span class="lion-meta">{_e(detail)}</span></div>'
        )

    def _render(self) -> None:
        if self.closed:
            return
        self._header.value = self.header_html()
        self._tree.value = tree_html(self.rows())
        self._errors.value = errors_html(self.current_errors())
        self._attempts.value = attempts_html(self.attempts)

    def static_html(self) -> str:
        return (
            f'<div class="lion-view lion-parse">{self.header_html()}'
            f"{tree_html(self.rows())}{errors_html(self.current_errors())}"
            f"{attempts_html(self.attempts)}</div>"
        )

    def static_text(self) -> str:
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
        self._refresh.cancel()

    def _owned_widgets(self) -> Iterable[Any]:
        return (
            self._style,
            self._header,
            self._tree,
            self._errors,
            self._attempts,
            self._kit.layout,
            self._kit.style,
        )

    def __repr__(self) -> str:
        return f"<ParseView {self.title} {self.status}>"
