"""``StreamAssembler``: CLI agent chunks -> the messages ``run()`` records (ADR D3).

Sans-I/O: ``feed(chunk)`` returns the messages that chunk completes, ``finish()`` the ones the
end of the stream completes, ``flush()`` whatever text is pending right now (a stop, a failure,
a crash recovery). It records nothing and awaits nothing, so ``run()`` and ``recover_branch()``
replay the same chunks into the same messages.

Rules: thinking and text deltas accumulate; a ``tool_use`` flushes the pending text as an
``AssistantResponse`` and becomes an ``ActionRequest``; a ``tool_result`` whose id matches a
pending request becomes an ``ActionResponse`` (unmatched results are ignored); ``result``
metadata (usage, cost, turns, duration) rides on the next flushed response — the final one; an
``error`` chunk ends the stream (benign end-of-stream) or flushes the text and sets ``error``.

Message ids are derived from ``namespace`` (one per stream, kept in the persistence header) and
a counter, so a replay of the same chunks yields the same ids: recovery can tell which messages
a snapshot already holds. The response being built accumulates in one ``MessageStream`` made
for the id it will be recorded under (``stream_for(next_id)``, the branch port's, which emits
``StreamDelta`` with the running snapshot; a silent one without it).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

from lion_nb.errors import LionError, ProviderError
from lion_nb.messages import ActionRequest, ActionResponse, AssistantResponse, RoledMessage
from lion_nb.models.base import Chunk
from lion_nb.models.cli_stream import classify_error
from lion_nb.signals import MessageStream
from lion_nb.usage import Usage

logger = logging.getLogger(__name__)

EMPTY_ERROR = "(empty error)"
# Result fields some CLIs (codex) report per turn: summed over the stream, not overwritten.
_SUMMED = ("total_cost_usd", "num_turns")


def merge_result(into: dict[str, Any], metadata: dict[str, Any]) -> None:
    """Merge one ``result`` chunk's metadata: numbers in ``usage``, cost and turns add up;
    anything else takes the latest value."""
    for key, value in metadata.items():
        if key == "usage" and isinstance(value, dict):
            usage = into.setdefault("usage", {})
            for k, v in value.items():
                if _is_number(v) and _is_number(usage.get(k, 0)):
                    usage[k] = usage.get(k, 0) + v
                else:
                    usage[k] = v
        elif key in _SUMMED and _is_number(value) and _is_number(into.get(key, 0)):
            into[key] = into.get(key, 0) + value
        else:
            into[key] = value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def usage_of(metadata: dict[str, Any]) -> Usage:
    """The ``Usage`` one ``result`` chunk reports (cost from ``usage`` or the top level)."""
    found = metadata.get("usage")
    raw: dict[str, Any] = found if isinstance(found, dict) else {}
    cost = raw.get("total_cost_usd", metadata.get("total_cost_usd"))
    return Usage(
        input_tokens=raw.get("input_tokens") if _is_number(raw.get("input_tokens")) else None,
        output_tokens=raw.get("output_tokens") if _is_number(raw.get("output_tokens")) else None,
        total_cost_usd=cost if _is_number(cost) else None,
    )


def error_of(chunk: Chunk, provider: str | None) -> Exception:
    """The exception a non-benign ``error`` chunk stands for: the provider's classified error
    when it carries one, else one classified from the message ("(empty error)" when blank)."""
    err = chunk.error
    if isinstance(err, LionError):
        return err
    text = (chunk.text or "").strip() or (str(err).strip() if err is not None else "")
    text = text or EMPTY_ERROR
    if err is not None:  # an unclassified exception from a custom provider
        wrapped = ProviderError(text, provider=provider)
        wrapped.__cause__ = err
        return wrapped
    return classify_error(text, provider=provider)


class StreamAssembler:
    """Turns one stream's chunks into messages (see the module docstring).

    ``sender``: who speaks for the agent (the model label); ``recipient``: whom it answers
    (the instruction's sender). ``stream_for(message_id)`` makes the accumulator of the
    response that will be recorded under ``message_id``.
    """

    def __init__(
        self,
        *,
        sender: str | None = None,
        recipient: str | None = None,
        provider: str | None = None,
        namespace: uuid.UUID | None = None,
        stream_for: Callable[[uuid.UUID], MessageStream] | None = None,
    ) -> None:
        self.sender = sender
        self.recipient = recipient
        self.provider = provider
        self.namespace = namespace or uuid.uuid4()
        self._stream_for = stream_for
        self._seq = 0
        self.next_id = self._new_id()
        self._building: MessageStream | None = None  # the response being streamed
        self._result: dict[str, Any] = {}  # result metadata not yet attached to a response
        self._pending: dict[str, ActionRequest] = {}  # tool_id -> its request
        self.result: dict[str, Any] = {}  # every result chunk of the stream, merged
        self.session_id: str | None = None
        self.responses: list[AssistantResponse] = []  # assistant responses built so far
        self.chunks = 0
        self.replayed: dict[str, Any] | None = None  # the cassette call this stream replays
        self.ended = False  # an error chunk (benign or not) ended the stream
        self.error: Exception | None = None

    def _new_id(self) -> uuid.UUID:
        self._seq += 1
        return uuid.uuid5(self.namespace, str(self._seq))

    @property
    def has_pending(self) -> bool:
        return self._building is not None and bool(self._building)

    def _delta(self, kind: Any, text: str) -> None:
        if self._building is None:
            make = self._stream_for
            self._building = (
                make(self.next_id)
                if make is not None
                else MessageStream(self.namespace, self.next_id)
            )
        self._building(kind, text)

    def feed(self, chunk: Chunk) -> list[RoledMessage]:
        """The messages ``chunk`` completes, in the order to record them."""
        self.chunks += 1
        if chunk.replayed:
            self.replayed = chunk.replayed
        if chunk.session_id:
            self.session_id = chunk.session_id
        kind = chunk.type
        if kind == "text" or kind == "thinking":
            if chunk.text:
                self._delta(kind, chunk.text)
            return []
        if kind == "tool_use":
            out: list[RoledMessage] = list(self.flush())
            request = ActionRequest(
                id=self._new_id(),
                function=chunk.name or "",
                arguments=chunk.arguments or {},
                call_id=chunk.tool_id,
                sender=self.sender,
                recipient=chunk.name,
            )
            if chunk.tool_id:
                self._pending[chunk.tool_id] = request
            out.append(request)
            return out
        if kind == "tool_result":
            asked = self._pending.pop(chunk.tool_id, None) if chunk.tool_id else None
            if asked is None:  # a result for a call this stream never showed: ignored
                logger.debug("run: ignoring tool_result for unknown call %r", chunk.tool_id)
                return []
            return [
                ActionResponse(
                    id=self._new_id(),
                    function=asked.function,
                    arguments=asked.arguments,
                    output=chunk.output,
                    is_error=bool(chunk.is_error),
                    call_id=asked.call_id,
                    action_request_id=asked.id,
                    sender=asked.function,
                    recipient=self.sender,
                )
            ]
        if kind == "result":
            merge_result(self._result, chunk.metadata)
            merge_result(self.result, chunk.metadata)
            return []
        if kind == "error":
            self.ended = True
            if chunk.benign_eos:
                return []
            self.error = error_of(chunk, self.provider)
            return list(self.flush(error=str(self.error)))
        return []  # "system" (session id noted above) and any future informational type

    def flush(self, **metadata: Any) -> list[AssistantResponse]:
        """The pending text/thinking as a response (``[]`` if none); ``metadata`` is added,
        e.g. ``stopped=True`` or ``recovered=True``."""
        if not self.has_pending:
            return []
        return [self._response(metadata)]

    def finish(self, **metadata: Any) -> list[AssistantResponse]:
        """The normal end: the pending text, carrying the result metadata. A stream that ends
        with no text still reports its usage, on an empty response."""
        if self.has_pending or self._result:
            return [self._response(metadata)]
        return []

    def _response(self, extra: dict[str, Any]) -> AssistantResponse:
        building = self._building
        text = building.text() if building is not None else ""
        thinking = building.text("thinking") if building is not None else ""
        metadata: dict[str, Any] = {}
        if self.sender:
            metadata["model"] = self.sender
        if thinking:
            metadata["thinking"] = thinking
        if self._result:
            metadata.update(self._result)
            self._result = {}  # attached once: a later response must not count it again
        if self.session_id:
            metadata["session_id"] = self.session_id
        if self.replayed:
            metadata["replayed"] = self.replayed
        metadata.update(extra)
        response = AssistantResponse(
            id=self.next_id,
            response=text,
            metadata=metadata,
            sender=self.sender,
            recipient=self.recipient,
        )
        self.next_id = self._new_id()
        self._building = None
        self.responses.append(response)
        return response

    def collected_text(self) -> str | None:
        """Non-empty assistant texts so far, joined by a blank line (``None`` if none)."""
        texts = [r.response for r in self.responses if r.response.strip()]
        return "\n\n".join(texts) if texts else None
