"""The parse view's state: a result, or the structured reply being parsed into a model type
while it streams, its validation errors per field and the parse attempts that led to it.

A live model (made from a model *type*) follows *one* structured reply and the parse of it,
then settles:

- it follows the text reply streaming on the branch (a newer reply replaces one that did not
  validate: a parse repair turn's reply is followed like the original), reading the reply from
  ``StreamDelta.snapshot``, so it shows a reply from its start even when it began earlier;
- it collects the ``ParseAttempt`` signals of the first parse that starts (attempt 0) after it
  was made; attempts of a parse already under way are ignored;
- it settles at that parse's valid attempt or its last failed one (``ParseAttempt.final``), or,
  when no parse settled it, at the end of a run in which it followed a reply. Settled, it takes
  no more signals.

``on_signal`` says what the view should do: ``"now"`` (show it at once), ``"later"`` (a
throttled update), ``"settled"`` (show it, stop listening, save the static output) or None.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from lion_nb.incremental.annotations import type_name
from lion_nb.incremental.live_parse import LiveParse
from lion_nb.signals import MessageAdded, ParseAttempt, RunEnd, RunFailed, Signal, StreamDelta
from lion_nb.viewmodels.parse_tree import TreeRow, errors_by_path, tree_rows
from lion_nb.viewmodels.stream import StreamText

__all__ = ["Effect", "ParseModel", "error_dicts", "live_rows"]

Effect = Literal["now", "later", "settled"] | None


def error_dicts(errors: Any) -> list[dict[str, Any]]:
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


def live_rows(parser: LiveParse) -> list[TreeRow]:
    """The rows of a reply being validated: what arrived, what is still to come."""
    value = parser.result if isinstance(parser.result, BaseModel) else parser.scanner.value
    return tree_rows(
        value,
        model_type=parser.model_type,
        errors=errors_by_path(parser.all_errors()),
        status=parser.field_status,
        partial=parser.scanner.partial_string(),
    )


class ParseModel:
    """A result (pydantic model instance, dict or list) or, given a model *type*, the live
    parse of the reply into it. A model type with ``errors`` is a finished parse that failed:
    its fields are listed with the failing ones marked (not live)."""

    def __init__(
        self,
        result_or_model_type: Any,
        *,
        errors: Any = None,
        attempts: list[dict[str, Any]] | None = None,
        title: str | None = None,
    ) -> None:
        target = result_or_model_type
        is_type = isinstance(target, type) and issubclass(target, BaseModel)
        self.live = is_type and errors is None
        self.model_type: type[BaseModel] | None = (
            target if is_type else (type(target) if isinstance(target, BaseModel) else None)
        )
        self.result: Any = None if is_type else target
        self.errors = error_dicts(errors)
        self.attempts: list[dict[str, Any]] = list(attempts or [])
        self.title = title or (type_name(self.model_type) if self.model_type else "Result")
        self.parser = LiveParse(self.model_type) if self.live else None
        self.message_id: Any = None  # the reply followed
        self._reply: StreamText | None = None  # its streamed text, read from snapshots
        self._text: list[str] = []  # what was fed since the last reset (compared with attempts)
        self._parse_started = False  # attempt 0 of the parse this model follows has arrived
        self.settled = False  # the followed reply/parse is over

    # ----- state ---------------------------------------------------------------------------
    @property
    def status(self) -> str:
        self.catch_up()
        if self.parser is not None and self.result is None:
            if self.errors:  # the followed parse gave up
                return "not-json" if self.parser.status == "not-json" else "invalid"
            return self.parser.status
        return "invalid" if self.errors else "valid"

    def rows(self) -> list[TreeRow]:
        self.catch_up()
        if self.parser is not None and self.result is None:
            return live_rows(self.parser)
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
        self.catch_up()
        if self.parser is not None and self.result is None and not self.errors:
            return self.parser.all_errors()
        return self.errors

    def detail(self) -> str:
        """Why the reply is not JSON, when it is not."""
        if self.parser is not None and self.parser.error and self.status == "not-json":
            return f" — {self.parser.error}"
        return ""

    # ----- input ---------------------------------------------------------------------------
    def feed(self, delta: str) -> Effect:
        """Add text of the structured reply (live mode)."""
        if self.parser is None:
            raise TypeError("feed() needs a live ParseView (made from a model type)")
        self._text.append(delta)
        self.parser.feed(delta)
        if self.parser.status == "valid":  # the object closed and validated
            self.result = self.parser.result
            return "now"
        return "later"

    def catch_up(self) -> Effect:
        """Feed what streamed of the followed reply since the last look."""
        if self._reply is None or self._reply.pending <= 0:
            return None
        return self.feed(self._reply.take())

    def finish(self) -> Any:
        """The reply ended: validate it whole; returns the result (or None)."""
        self.catch_up()
        if self.parser is None:
            return self.result
        result = self.parser.finish()
        if isinstance(result, BaseModel):
            self.result = result
        return result

    def set_result(self, result: Any, errors: Any = None) -> None:
        self.result = result
        self.errors = error_dicts(errors)

    def on_signal(self, signal: Signal) -> Effect:
        if self.settled or self.parser is None:
            return None
        if isinstance(signal, StreamDelta):
            return self._on_delta(signal)
        if isinstance(signal, MessageAdded):
            if signal.message.id == self.message_id:
                self.finish()
                return "now"
        elif isinstance(signal, ParseAttempt):
            return self._on_attempt(signal)
        elif isinstance(signal, RunEnd | RunFailed):
            if self.message_id is not None or self._parse_started:
                return self._settle(None)
            # else: a run that showed this model nothing yet; keep waiting for the reply
        return None

    def _on_delta(self, signal: StreamDelta) -> Effect:
        if signal.kind != "text" or self.parser is None:
            return None
        if signal.message_id != self.message_id:
            self.catch_up()
            if self.parser.status in ("valid", "invalid") and self.result is not None:
                return None  # keep a finished result; a later reply is someone else's
            self.message_id = signal.message_id  # a new reply: start over
            self._reply = StreamText()
            self._text = []
            self.parser.reset()
        assert self._reply is not None
        self._reply.update(signal)
        return self.catch_up()

    def _on_attempt(self, signal: ParseAttempt) -> Effect:
        if signal.attempt == 0:
            if self._parse_started:  # a second parse: the first ended without a final mark
                return self._settle(None)
            self._parse_started = True
        elif not self._parse_started:
            return None  # a repair attempt of a parse that began before this model was made
        self.catch_up()
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
            return self._settle(signal)
        return "now"

    def _settle(self, attempt: ParseAttempt | None) -> Effect:
        """The followed reply/parse is over: its outcome is what the model shows from now."""
        self.settled = True
        self.catch_up()
        parser = self.parser
        if parser is None:  # only a live model follows a parse
            return "settled"
        if parser.status == "streaming":  # a repair turn's reply is never recorded: end it here
            parser.finish()
        if attempt is not None:
            if not attempt.ok:
                self.errors = list(attempt.errors)  # what parse saw (after fuzzy key matching)
            elif self.result is None:
                self.result = (
                    parser.result if isinstance(parser.result, BaseModel) else attempt.value
                )
        return "settled"

    def _read(self, raw: str) -> None:
        """Show ``raw`` instead of what streamed, as if it had streamed whole."""
        if self.parser is None:
            return
        self.message_id = None
        self._reply = None
        self._text = []
        self.result = None
        self.parser.reset()
        self.feed(raw)
        self.finish()
