"""Server-Sent Events, decoded sans-I/O (WHATWG HTML, "event stream interpretation").

``SSEDecoder().feed(bytes) -> list[SSEEvent]`` accepts the body in arbitrary pieces: a line
ending (``\\n``, ``\\r\\n`` or ``\\r``), a UTF-8 sequence or the leading BOM may be split between
two feeds and the events come out the same. ``finish()`` ends the stream; where the spec silently
drops an event that was never terminated by a blank line, we return it with ``complete=False``
so a caller can tell a stream cut mid-event from a clean end (and keep what arrived before).
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

__all__ = ["SSEDecoder", "SSEError", "SSEEvent"]

_EOL = re.compile(r"\r\n|\r|\n")


class SSEError(ValueError):
    """The stream cannot be decoded (a line longer than the decoder's limit)."""


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event. ``id`` is the last event id seen so far in the stream (the spec's
    "last event ID buffer", None if never set); ``retry`` is set when this event's block carried a
    valid ``retry`` field; ``complete`` is False only for the event ``finish()`` found cut off."""

    event: str = "message"
    data: str = ""
    id: str | None = None
    retry: int | None = None
    complete: bool = True


class SSEDecoder:
    """Incremental decoder. ``max_line_chars`` bounds memory on a hostile stream with no line
    breaks (raises ``SSEError`` when exceeded)."""

    def __init__(self, *, max_line_chars: int = 16 * 1024 * 1024) -> None:
        # errors="replace": the spec decodes with replacement; invalid UTF-8 never raises here.
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._max_line = max_line_chars
        self._line = ""  # text of the current, not yet terminated line
        self._started = False  # the BOM check happens on the first decoded character
        self._after_cr = False  # the last line ended with "\r": a leading "\n" belongs to it
        self._event = ""
        self._data: list[str] = []
        self._retry: int | None = None
        self._pending = False  # a field line was seen since the last blank line
        self.last_event_id: str | None = None
        self.retry: int | None = None  # the latest valid reconnection time, in milliseconds

    def feed(self, data: bytes) -> list[SSEEvent]:
        return self._feed_text(self._utf8.decode(data))

    def finish(self) -> list[SSEEvent]:
        """End of stream: returns events still buffered; an event not terminated by a blank line
        (or a partial last line) comes back with ``complete=False``. The decoder is then reset."""
        events = self._feed_text(self._utf8.decode(b"", final=True))
        if self._line:
            self._process(self._line)
            self._line = ""
        if self._pending:
            events.append(
                SSEEvent(
                    event=self._event or "message",
                    data="\n".join(self._data),
                    id=self.last_event_id,
                    retry=self._retry,
                    complete=False,
                )
            )
        self._event, self._data, self._retry, self._pending = "", [], None, False
        self._started = self._after_cr = False
        return events

    def _feed_text(self, text: str) -> list[SSEEvent]:
        if not text:
            return []
        if not self._started:
            self._started = True
            if text[0] == "\ufeff":
                text = text[1:]
        if self._after_cr and text:
            self._after_cr = False
            if text[0] == "\n":
                text = text[1:]
        events: list[SSEEvent] = []
        pos = 0
        end = len(text)
        while pos < end:
            match = _EOL.search(text, pos)
            if match is None:
                self._line += text[pos:]
                if len(self._line) > self._max_line:
                    raise SSEError(f"an event-stream line exceeds {self._max_line} characters")
                break
            line = self._line + text[pos : match.start()]
            self._line = ""
            # A "\r" as the last character may be the first half of a "\r\n" split across feeds.
            if match.end() == end and match.group() == "\r":
                self._after_cr = True
            pos = match.end()
            event = self._process(line)
            if event is not None:
                events.append(event)
        return events

    def _process(self, line: str) -> SSEEvent | None:
        if not line:
            return self._dispatch()
        if line[0] == ":":
            return None  # a comment (servers send them as keep-alives)
        field, colon, value = line.partition(":")
        if colon and value[:1] == " ":
            value = value[1:]
        self._pending = True
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
        elif field == "id":
            if "\0" not in value:
                self.last_event_id = value
        elif field == "retry":
            if value.isascii() and value.isdigit():
                self._retry = self.retry = int(value)
        # Any other field name is ignored, as the spec requires.
        return None

    def _dispatch(self) -> SSEEvent | None:
        data, event, retry = self._data, self._event, self._retry
        self._event, self._data, self._retry, self._pending = "", [], None, False
        if not data:
            return None  # the spec dispatches nothing for a block without data lines
        return SSEEvent(
            event=event or "message", data="\n".join(data), id=self.last_event_id, retry=retry
        )
