"""Messages as HTML cards, for the live views, ``_repr_html_``, the static fallback and export.

The card markup is ours; every piece of model, tool or user text inside it goes either through
``render.escape.escape`` (names, JSON, tool output, attribute values) or through
``render_markdown`` (markdown-it with raw HTML off, then the nh3 allow-list). Nothing is inserted
raw. Message ids appear as ``data-id`` so a view can update a card idempotently.

One card renderer draws every card: a recorded message (``message_html``), a reply still
streaming (``live_card_html`` with its pieces ``head_html``, ``body_html``,
``live_thinking_html``, ``live_tools_html``; ``streaming_html`` from whole snapshots) and a
prompt not recorded yet (``pending_prompt_html``) all go through ``card_html``.

Card shape (classes styled by ``widgets/lion_nb.css``)::

    <div class="lion-msg lion-<role>" data-id=".." data-role="<role>">
      <div class="lion-head">role · sender · model · usage · status · time</div>
      <details class="lion-thinking">..</details>      assistant only, collapsed
      <div class="lion-body">..</div>
    </div>
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from lion_nb.render.escape import escape
from lion_nb.render.markdown import render_markdown
from lion_nb.render.marks import context_cut_html, truncated_badge_html
from lion_nb.render.text import (
    as_text,
    format_time,
    format_usage,
    label,
    thinking_text,
    to_json,
)
from lion_nb.turns import continuations, is_truncated, last_cut

__all__ = [
    "CardParts",
    "assistant_parts",
    "body_html",
    "card_html",
    "css_style_tag",
    "head_html",
    "lion_css",
    "live_card_classes",
    "live_card_html",
    "live_shell_html",
    "live_thinking_html",
    "live_tools_html",
    "message_html",
    "pending_prompt_html",
    "streaming_html",
    "thinking_html",
    "transcript_cards",
    "transcript_html",
]

Status = Literal["streaming", "stopped", "done", "failed", "unrecorded"]
# "unrecorded": a stopped or failed call whose reply the branch does not hold (on_stop="discard",
# an error): shown until the next turn begins, never as kept
_STATUS_TEXT = {
    "streaming": "streaming…",
    "stopped": "stopped",
    "failed": "failed",
    "done": "",
    "unrecorded": "not recorded",
}

# Standalone exports refuse every script, plugin, frame, form and base URL even if something
# slipped through the sanitizer; only our inline stylesheet is allowed.
_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)


CSS_FILES = (
    "lion_nb.css",
    "tokens.css",
    "sampling.css",
    "tree.css",
    "prompt.css",
    "grid.css",
)  # the stylesheet's files, in order


@functools.cache
def lion_css() -> str:
    """The stylesheet (``CSS_FILES`` joined): packaged in the wheel, or ``widgets/`` of a
    source checkout."""
    return "\n".join(_css_file(name) for name in CSS_FILES)


def _css_file(name: str) -> str:
    packaged = resources.files("lion_nb").joinpath(f"widgets/static/{name}")
    if packaged.is_file():
        css = packaged.read_text(encoding="utf-8")
    else:
        source = Path(__file__).resolve().parents[2] / "widgets" / name
        if not source.is_file():
            raise FileNotFoundError(
                f"{name} is missing: expected lion_nb/widgets/static/{name} in the "
                f"installed package or {source} in a source checkout"
            )
        css = source.read_text(encoding="utf-8")
    if "</" in css:  # it is inlined into <style>; a closing tag inside would end it early
        raise ValueError(f"{name} must not contain '</'")
    return css


def css_style_tag() -> str:
    """``<style data-lion-css>…</style>`` for views that inline the stylesheet."""
    return f'<style data-lion-css="1">{lion_css()}</style>'


def _pre(text: str, cls: str) -> str:
    return f'<pre class="{cls}">{escape(text)}</pre>'


def _json_pre(value: Any, cls: str = "lion-json") -> str:
    return _pre(to_json(value), cls)


def _value_html(value: Any) -> str:
    """Strings are Markdown; any other value is shown as JSON."""
    if isinstance(value, str):
        return f'<div class="lion-md">{render_markdown(value)}</div>'
    return _json_pre(value)


def head_html(
    role: str,
    *,
    created_at: datetime | None = None,
    sender: str | None = None,
    model: str | None = None,
    usage: dict[str, Any] | None = None,
    status: Status | None = None,
    function: str | None = None,
    call_id: str | None = None,
    error: bool = False,
    replayed: dict[str, Any] | None = None,
    marks: str = "",
) -> str:
    """The heading row of a card (also used by live views for a card being built). A sender or
    model that only repeats what the row already says (``User user``, ``scripted scripted``) is
    left out; ``replayed`` (a cassette's note: cassette, call, line, recorded_at) adds a badge;
    ``marks`` (HTML from ``render.marks``) go beside who answered."""
    role_label = label(role)
    parts = [f'<span class="lion-role">{escape(role_label)}</span>']
    said = {role.lower(), role_label.lower()}
    if sender and sender.lower() in said:
        sender = None
    if sender:
        said.add(sender.lower())
    if model and (model.lower() in said or model.split("/")[0].lower() in said):
        model = None
    if function is not None:
        parts.append(f'<code class="lion-fn">{escape(function)}</code>')
    if call_id:
        parts.append(f'<span class="lion-call-id" title="call id">{escape(call_id)}</span>')
    if sender:
        parts.append(f'<span class="lion-sender">{escape(sender)}</span>')
    if model:
        parts.append(f'<span class="lion-model">{escape(model)}</span>')
    if marks:
        parts.append(marks)
    if error:
        parts.append('<span class="lion-status lion-error-badge">error</span>')
    if replayed is not None:
        parts.append(replayed_badge_html(replayed))
    if status and _STATUS_TEXT.get(status):
        parts.append(f'<span class="lion-status lion-{status}">{_STATUS_TEXT[status]}</span>')
    usage_text = format_usage(usage)
    if usage_text:
        parts.append(f'<span class="lion-usage">{escape(usage_text)}</span>')
    if created_at is not None:
        parts.append(
            f'<time class="lion-time" datetime="{escape(created_at.isoformat())}" '
            f'title="{escape(format_time(created_at))}">{escape(format_time(created_at, short=True))}</time>'
        )
    return f'<div class="lion-head">{"".join(parts)}</div>'


def replayed_badge_html(note: Any) -> str:
    """The small "replayed" badge of a reply that came from a cassette; its title says which
    cassette, call and line, and when it was recorded."""
    note = note if isinstance(note, dict) else {}
    bits = [
        f"{name} {note[key]}"
        for key, name in (("cassette", "cassette"), ("call", "call"), ("line", "line"))
        if note.get(key) not in (None, "")
    ]
    if note.get("recorded_at"):
        bits.append(f"recorded {note['recorded_at']}")
    title = "replayed from a cassette" + (": " + ", ".join(bits) if bits else "")
    return f'<span class="lion-badge lion-replayed" title="{escape(title)}">replayed</span>'


def thinking_html(text: str, *, open: bool = False) -> str:
    """Reasoning text, collapsed by default."""
    if not text:
        return ""
    attr = " open" if open else ""
    return (
        f'<details class="lion-thinking"{attr}><summary>Thinking</summary>'
        f'<div class="lion-md">{render_markdown(text)}</div></details>'
    )


# ----- the card ------------------------------------------------------------------------------
def card_html(
    role: str, inner: str, *, classes: tuple[str, ...] = (), message_id: Any = None
) -> str:
    """The one card wrapper, for a recorded message, a reply still streaming, a prompt not
    recorded yet: ``lion-msg lion-<role>`` plus ``classes``, the message id when known."""
    cls = " ".join(("lion-msg", f"lion-{role}", *classes))
    ident = f' data-id="{escape(message_id)}"' if message_id is not None else ""
    return f'<div class="{escape(cls)}"{ident} data-role="{escape(role)}">{inner}</div>'


def body_html(blocks_html: str) -> str:
    """A card's Markdown body from already rendered (sanitized) blocks; empty stays empty."""
    return f'<div class="lion-body lion-md">{blocks_html}</div>' if blocks_html else ""


def live_card_classes(status: Status) -> tuple[str, ...]:
    """The classes of an assistant card being streamed (also those of the widget box that
    holds a long one in pieces)."""
    return ("lion-msg", "lion-assistant", f"lion-{status}-msg", "lion-live")


def live_card_html(inner: str, status: Status) -> str:
    """An assistant card being streamed, in one piece: ``inner`` is its head and body."""
    return card_html("assistant", inner, classes=live_card_classes(status)[2:])


def live_shell_html(
    head: str,
    status: Status = "streaming",
    *,
    thinking: str = "",
    frozen: str = "",
    tail: str = "",
    tools: str = "",
) -> str:
    """An assistant card being streamed, as slots a front end fills in by name
    (``data-slot``): ``head``, ``thinking`` (a preview), ``frozen`` (finished Markdown blocks,
    appended once each), ``tail`` (the growing last block: sanitized HTML or text) and
    ``tools`` (tool-argument previews). All arguments are HTML rendered here already."""
    inner = (
        f'<div data-slot="head">{head}</div><div data-slot="thinking">{thinking}</div>'
        f'{_BODY_OPEN}<div data-slot="frozen">{frozen}</div>'
        f'<div data-slot="tail" class="lion-tail">{tail}</div></div>'
        f'<div data-slot="tools">{tools}</div>'
    )
    return live_card_html(inner, status)


_BODY_OPEN = '<div class="lion-body lion-md">'


@dataclass(frozen=True, slots=True)
class CardParts:
    """A recorded assistant card as the pieces a live card's slots hold, each rendered here:
    ``classes`` and ``attrs`` of the card element (data, not markup), ``head``, ``thinking``,
    ``body`` (the Markdown body's blocks; None: the card has no Markdown body) and ``after``
    (what follows the body). ``html()`` is ``message_html`` of the message, exactly."""

    classes: tuple[str, ...]
    attrs: dict[str, str]
    head: str
    thinking: str
    body: str | None
    after: str

    def html(self) -> str:
        inner = self.head + self.thinking
        inner += (
            body_html(self.body)
            if self.body
            else '<div class="lion-body lion-empty">(no text)</div>'
        )
        ident = "".join(f' {name}="{escape(value)}"' for name, value in self.attrs.items())
        return f'<div class="{escape(" ".join(self.classes))}"{ident}>{inner}{self.after}</div>'


def live_thinking_html(text: str, limit: int) -> str:
    """The reasoning of a reply being streamed: its last ``limit`` characters, as text."""
    more = "…" if len(text) > limit else ""
    return (
        f'<details class="lion-thinking lion-live-thinking"><summary>Thinking '
        f"({len(text):,} chars)</summary><pre>{more}{escape(text[-limit:])}</pre>"
        "</details>"
    )


def live_tools_html(calls: Iterable[tuple[str, str, int]], limit: int) -> str:
    """Tool calls being streamed, ``(name, arguments so far, their length)``: the last
    ``limit`` characters of each one's arguments, as text."""
    rows = []
    for name, args, length in calls:
        shown = ("…" if length > limit else "") + args[-limit:]
        rows.append(
            f'<div class="lion-live-tool"><code class="lion-fn">{escape(name)}'
            f"</code><code>{escape(shown)}</code></div>"
        )
    return "".join(rows)


def pending_prompt_html(text: str, *, recorded: bool = True) -> str:
    """A prompt shown as sent, before its Instruction is recorded; ``recorded=False``: its
    turn ended with nothing recorded (marked "not recorded" until the next turn begins)."""
    status: Status | None = None if recorded else "unrecorded"
    body = f'<div class="lion-body lion-md">{render_markdown(text)}</div>'
    classes = ("lion-pending",) if recorded else ("lion-pending", "lion-unrecorded-msg")
    return card_html("user", head_html("user", status=status) + body, classes=classes)


def _card(message: Any, head: str, body: str, extra_cls: str = "") -> str:
    classes = tuple(extra_cls.split())
    return card_html(str(message.role), head + body, classes=classes, message_id=message.id)


def assistant_parts(message: Any, continued_by: Any = None) -> CardParts:
    """An assistant message's card as its named pieces (``CardParts.html()`` is the card): what
    a live card is sealed with, slot by slot, without cutting rendered HTML apart."""
    meta = message.metadata or {}
    stopped = bool(meta.get("stopped"))
    replayed = meta.get("replayed")
    head = head_html(
        "assistant",
        created_at=message.created_at,
        sender=message.sender,
        model=str(meta["model"]) if meta.get("model") else None,
        usage=meta.get("usage"),
        status="stopped" if stopped else None,
        replayed=replayed if isinstance(replayed, dict) else None,
        marks=truncated_badge_html(continued_by) if is_truncated(message) else "",
    )
    after = ""
    if meta.get("result") is not None:
        after = (
            '<details class="lion-result"><summary>Parsed result</summary>'
            f"{_json_pre(meta['result'])}</details>"
        )
    classes = ("lion-msg", "lion-assistant", *(("lion-stopped-msg",) if stopped else ()))
    return CardParts(
        classes=classes,
        attrs={"data-id": str(message.id), "data-role": "assistant"},
        head=head,
        thinking=thinking_html(thinking_text(message)),
        body=render_markdown(message.response) if message.response else None,
        after=after,
    )


def _assistant(message: Any, continued_by: Any = None) -> str:
    return assistant_parts(message, continued_by).html()


def _instruction(message: Any) -> str:
    head = head_html("user", created_at=message.created_at, sender=message.sender)
    parts: list[str] = []
    if message.plain_content is not None:
        parts.append(f'<div class="lion-md">{render_markdown(message.plain_content)}</div>')
    else:
        if message.instruction not in (None, ""):
            parts.append(_value_html(message.instruction))
        if message.guidance not in (None, ""):
            parts.append(
                '<div class="lion-guidance"><span class="lion-label">Guidance</span>'
                f"{_value_html(message.guidance)}</div>"
            )
        if message.context:
            items = "".join(f"<li>{_value_html(c)}</li>" for c in message.context)
            parts.append(
                '<div class="lion-context"><span class="lion-label">Context</span>'
                f"<ol>{items}</ol></div>"
            )
        fmt = message.response_schema or message.request_fields
        if fmt:
            parts.append(
                '<details class="lion-format"><summary>Response format</summary>'
                f"{_json_pre(fmt)}</details>"
            )
    if message.images:
        n = len(message.images)
        parts.append(f'<div class="lion-images">{n} image{"s" if n != 1 else ""} attached</div>')
    return _card(message, head, f'<div class="lion-body">{"".join(parts)}</div>')


def _action_request(message: Any) -> str:
    head = head_html(
        "action_request",
        created_at=message.created_at,
        sender=message.sender,
        function=message.function,
        call_id=message.call_id,
    )
    body = f'<div class="lion-body">{_json_pre(message.arguments, "lion-json lion-args")}</div>'
    return _card(message, head, body)


def _action_response(message: Any) -> str:
    error = bool(message.is_error)
    head = head_html(
        "action_response",
        created_at=message.created_at,
        sender=message.sender,
        function=message.function,
        call_id=message.call_id,
        error=error,
    )
    out = message.output
    output = (
        _pre(out, "lion-output")
        if isinstance(out, str)
        else _json_pre(out, "lion-json lion-output")
    )
    args = ""
    if message.arguments:
        args = (
            '<details class="lion-args"><summary>Arguments</summary>'
            f"{_json_pre(message.arguments)}</details>"
        )
    return _card(
        message,
        head,
        f'<div class="lion-body">{args}{output}</div>',
        " lion-error" if error else "",
    )


def _system(message: Any) -> str:
    head = head_html("system", created_at=message.created_at, sender=message.sender)
    return _card(
        message, head, f'<div class="lion-body lion-md">{render_markdown(message.system)}</div>'
    )


_BY_ROLE = {
    "assistant": _assistant,
    "user": _instruction,
    "action_request": _action_request,
    "action_response": _action_response,
    "system": _system,
}


def message_html(message: Any, *, continued_by: Any = None) -> str:
    """One message as a card (a sanitized HTML fragment). ``continued_by``: the id of the
    instruction that continued this truncated reply (``lion_nb.turns.continuations``)."""
    role = str(getattr(message, "role", ""))
    if role == "assistant":
        return _assistant(message, continued_by)
    render = _BY_ROLE.get(role)
    if render is not None:
        return render(message)
    head = head_html(str(message.role), created_at=getattr(message, "created_at", None))
    text = as_text(getattr(message, "text", ""))
    return _card(message, head, f'<div class="lion-body">{_pre(text, "lion-output")}</div>')


def streaming_html(
    message_id: uuid.UUID | str,
    text: str = "",
    thinking: str = "",
    *,
    status: Status = "streaming",
    model: str | None = None,
    created_at: datetime | None = None,
) -> str:
    """An assistant card for a message still being built, from its text/thinking snapshots.

    Renders the whole snapshot; a live view that streams long replies should instead keep a
    ``MarkdownStream`` and place its frozen blocks under ``head_html(...)``."""
    head = head_html("assistant", created_at=created_at, model=model, status=status)
    body = thinking_html(thinking, open=not text and status == "streaming")
    body += f'<div class="lion-body lion-md">{render_markdown(text)}</div>'
    return card_html(
        "assistant", head + body, classes=(f"lion-{status}-msg",), message_id=message_id
    )


def transcript_cards(messages: Iterable[Any]) -> list[tuple[Any, str]]:
    """``(message id, HTML)`` in reading order: each card with its marks (truncated,
    continued), and the context-cut notice before the first message the last request sent
    after the system message (key ``"ctx-cut"``)."""
    messages = list(messages)
    continued = continuations(messages)
    cut = last_cut(messages)
    at = (cut.before or cut.instruction) if cut is not None else None
    out: list[tuple[Any, str]] = []
    for m in messages:
        if cut is not None and m.id == at:
            out.append(("ctx-cut", context_cut_html(cut.omitted)))
        out.append((m.id, message_html(m, continued_by=continued.get(str(m.id)))))
    return out


def transcript_html(
    messages: Iterable[Any],
    *,
    title: str | None = None,
    standalone: bool = False,
    footer: str = "",
) -> str:
    """All messages as cards, with their marks (``transcript_cards``); ``footer`` is HTML
    rendered here (a view's gauge). ``standalone=True`` gives a complete HTML document with
    the stylesheet inlined and a Content-Security-Policy that forbids scripts (for export)."""
    heading = f'<h2 class="lion-title">{escape(title)}</h2>' if title else ""
    cards = "\n".join(html_ for _, html_ in transcript_cards(messages))
    body = f'<div class="lion-transcript">{heading}\n{cards}\n{footer}</div>'
    if not standalone:
        return body
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(title or 'lion_nb transcript')}</title>\n{css_style_tag()}\n</head>\n"
        f'<body class="lion-standalone">\n{body}\n</body></html>\n'
    )
