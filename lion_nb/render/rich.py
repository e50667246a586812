"""Rich renderables for terminals: ``rich.print(MessageRenderable(m))`` or a transcript.

Each message is a role-coloured rule heading (role, function, usage, time) followed by its
content: assistant text as ``rich.markdown.Markdown``, thinking dimmed in a panel, tool
arguments and non-text values as ``rich.json.JSON``. Model text is passed as ``Text`` objects
(never as console markup) with control characters made visible, so it cannot inject rich markup
or terminal escape sequences. rich is imported here only; ``import lion_nb`` never loads it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from rich.console import Console, ConsoleOptions, NewLine, RenderResult
from rich.json import JSON
from rich.markdown import Markdown
from rich.panel import Panel
from rich.rule import Rule
from rich.text import Text

from lion_nb.render.text import (
    format_time,
    format_usage,
    label,
    thinking_text,
    to_json,
    visible_controls,
)

__all__ = ["MessageRenderable", "TranscriptRenderable"]

ROLE_STYLES = {
    "system": "magenta",
    "user": "cyan",
    "assistant": "green",
    "action_request": "yellow",
    "action_response": "blue",
}


def _text(value: str, style: str = "") -> Text:
    return Text(visible_controls(value), style=style)


def _json(value: Any) -> JSON | Text:
    try:
        return JSON(json.dumps(json.loads(to_json(value)), indent=2, ensure_ascii=False))
    except ValueError:  # to_json fell back to str(): show it as text
        return _text(to_json(value))


def _markdown(value: str) -> Markdown:
    # hyperlinks=False prints each link's URL next to its text: the reader sees the destination.
    return Markdown(visible_controls(value), hyperlinks=False)


def _value(value: Any) -> Markdown | JSON | Text:
    if isinstance(value, str):
        return _markdown(value)
    return _json(value)


class MessageRenderable:
    """One message for a rich ``Console``."""

    __slots__ = ("message",)

    def __init__(self, message: Any) -> None:
        self.message = message

    def _heading(self) -> Rule:
        m = self.message
        meta = m.metadata or {}
        error = m.role == "action_response" and m.is_error
        style = "red" if error else ROLE_STYLES.get(m.role, "white")
        title = Text(label(m.role), style=f"bold {style}")
        bits: list[str] = []
        if m.role in ("action_request", "action_response"):
            bits.append(m.function)
        if error:
            bits.append("error")
        if m.sender:
            bits.append(str(m.sender))
        if m.role == "assistant" and meta.get("model"):
            bits.append(str(meta["model"]))
        bits.append(format_time(m.created_at, short=True))
        for bit in bits:
            if bit:
                title.append(" · ", style="dim")
                title.append(visible_controls(bit).replace("\n", " "))
        return Rule(title, style=style, align="left")

    def _body(self) -> Iterable[Any]:
        m = self.message
        role = m.role
        if role == "assistant":
            meta = m.metadata or {}
            # Usage goes under the rule, not in it: a 60-column rule would truncate it.
            info = " · ".join(
                b
                for b in (format_usage(meta.get("usage")), "stopped" if meta.get("stopped") else "")
                if b
            )
            if info:
                yield _text(info, "dim")
            thinking = thinking_text(m)
            if thinking:
                yield Panel(
                    _text(thinking, "dim italic"),
                    title="thinking",
                    title_align="left",
                    border_style="dim",
                )
            yield _markdown(m.response) if m.response else _text("(no text)", "dim")
            if meta.get("result") is not None:
                yield _text("parsed result:", "dim")
                yield _json(meta["result"])
        elif role == "user":
            if m.plain_content is not None:
                yield _value(m.plain_content)
                return
            if m.instruction not in (None, ""):
                yield _value(m.instruction)
            if m.guidance not in (None, ""):
                yield _text("guidance:", "dim")
                yield _value(m.guidance)
            if m.context:
                yield _text("context:", "dim")
                yield _json(m.context)
            if m.images:
                yield _text(f"{len(m.images)} image(s) attached", "dim")
        elif role == "action_request":
            yield _json(m.arguments)
        elif role == "action_response":
            out = m.output
            yield _text(out, "red" if m.is_error else "") if isinstance(out, str) else _json(out)
        elif role == "system":
            yield _markdown(m.system)
        else:
            yield _text(str(getattr(m, "text", "")))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self._heading()
        yield from self._body()


class TranscriptRenderable:
    """All messages of a conversation, in order, separated by blank lines."""

    __slots__ = ("messages", "title")

    def __init__(self, messages: Iterable[Any], *, title: str | None = None) -> None:
        self.messages = list(messages)
        self.title = title

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self.title:
            yield Rule(
                Text(visible_controls(self.title).replace("\n", " "), style="bold"), characters="═"
            )
        for i, message in enumerate(self.messages):
            if i or self.title:
                yield NewLine()
            yield MessageRenderable(message)
