"""Messages as Markdown and plain text: ``_repr_markdown_``, Markdown export, the text/plain
part of a saved notebook's static fallback, and the formatting helpers the HTML and rich
renderers share (labels, times, usage, JSON).

Markdown produced here is handed to *other* renderers (JupyterLab's marked, GitHub, nbviewer)
that do not sanitize trusted output, so it must carry no raw HTML and no dangerous link.
``safe_markdown_source`` checks text with markdown-it (HTML enabled, every link reported) and
neutralises only the lines that need it, escaping ``<`` and ``[`` there; code blocks and clean
paragraphs are left byte for byte. The check repeats until a parse finds nothing, and the last
resort escapes every line, which is safe for any CommonMark renderer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from lion_nb.usage import format_cost

__all__ = [
    "format_usage",
    "message_markdown",
    "message_plain",
    "safe_markdown_source",
    "transcript_markdown",
    "transcript_plain",
    "unpriced_note",
]

ROLE_LABELS = {
    "system": "System",
    "user": "User",
    "assistant": "Assistant",
    "action_request": "Action request",
    "action_response": "Action response",
}
SAFE_SCHEMES = frozenset({"http", "https", "mailto"})

# C0 controls (except tab and newline), DEL and C1 controls become visible symbols, so model text
# cannot drive a terminal (ANSI/OSC escapes) or hide text. U+2400.. are the "control pictures".
_CONTROLS = {c: 0x2400 + c for c in range(0x20) if c not in (0x09, 0x0A)}
_CONTROLS[0x7F] = 0x2421
_CONTROLS.update({c: 0xFFFD for c in range(0x80, 0xA0)})


def visible_controls(text: str) -> str:
    """Newlines normalised to ``\\n``; other control characters made visible."""
    return text.replace("\r\n", "\n").translate(_CONTROLS)


def label(role: str) -> str:
    return ROLE_LABELS.get(role, role.replace("_", " ").capitalize())


def format_time(dt: datetime | None, *, short: bool = False) -> str:
    if dt is None:
        return ""
    if dt.tzinfo is not None:
        dt = dt.astimezone(UTC)
    return dt.strftime("%H:%M:%S") if short else dt.strftime("%Y-%m-%d %H:%M:%S UTC")


def format_usage(usage: dict[str, Any] | None) -> str:
    """``"1,234 in · 56 out · $0.0012"`` from a usage dict; "" when nothing is known."""
    if not usage:
        return ""
    parts = []
    tokens_in, tokens_out = usage.get("input_tokens"), usage.get("output_tokens")
    if isinstance(tokens_in, int) and not isinstance(tokens_in, bool):
        parts.append(f"{tokens_in:,} in")
    if isinstance(tokens_out, int) and not isinstance(tokens_out, bool):
        parts.append(f"{tokens_out:,} out")
    cost = usage.get("total_cost_usd")
    if isinstance(cost, int | float) and not isinstance(cost, bool):
        parts.append(format_cost(cost))
    return " · ".join(parts)


def unpriced_note(count: int, what: str) -> str:
    """What a summed cost leaves out: ``" + 1 unpriced node"`` (the sum of the priced ones is
    not the total, and no price is made up for the others); "" for none."""
    return f" + {count} unpriced {what}{'s' if count != 1 else ''}" if count else ""


def to_json(value: Any) -> str:
    """Pretty JSON for display; never raises (falls back to ``str``)."""
    if hasattr(value, "model_dump"):
        try:
            value = value.model_dump(mode="json")
        except Exception:  # a display helper must not fail on an odd model
            return str(value)
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def as_text(value: Any) -> str:
    return value if isinstance(value, str) else to_json(value)


def thinking_text(message: Any) -> str:
    thinking = (getattr(message, "metadata", None) or {}).get("thinking")
    if thinking in (None, "", [], {}):
        return ""
    return as_text(thinking)


# --- Markdown safety -------------------------------------------------------------------------

_SCHEME_RE = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.\-]*):")
_SPACE_RE = re.compile(r"[\x00-\x20]+")
_detector: Any = None


def _detector_md() -> Any:
    """markdown-it with raw HTML on and link validation off, to see what other renderers see."""
    global _detector
    if _detector is None:
        from lion_nb.render.markdown import build_markdown  # lazy: markdown-it costs ~40 ms

        md = build_markdown(html_enabled=True)
        # Report every link (we judge the scheme ourselves) as written, entity-decoded.
        md.validateLink = lambda url: True  # type: ignore[method-assign]  # markdown-it's override point
        md.normalizeLink = lambda url: url  # type: ignore[method-assign]  # markdown-it's override point
        _detector = md
    return _detector


def safe_url(url: str) -> bool:
    """True for relative URLs and http/https/mailto (browsers ignore tabs/newlines in URLs)."""
    m = _SCHEME_RE.match(_SPACE_RE.sub("", url))
    return m is None or m[1].lower() in SAFE_SCHEMES


def _inline_dirty(token: Any) -> bool:
    for child in token.children or ():
        # Images are dirty whatever their URL: loading one is a request the reader did not make.
        if child.type in ("html_inline", "image"):
            return True
        if child.type == "link_open" and not safe_url(str(child.attrGet("href") or "")):
            return True
    return False


def _dirty_lines(text: str) -> set[int] | None:
    """Line numbers to neutralise, or None if the text is already safe."""
    env: dict[str, Any] = {}
    tokens = _detector_md().parse(text, env)
    refs_safe = all(safe_url(str(r.get("href", ""))) for r in env.get("references", {}).values())
    keep: set[int] = set()
    dirty: set[int] = set()
    unsafe = not refs_safe
    for tok in tokens:
        if tok.map is None:
            continue
        lines = range(tok.map[0], tok.map[1])
        if tok.type in ("fence", "code_block"):
            keep.update(lines)
        elif tok.type == "inline":
            if _inline_dirty(tok):
                dirty.update(lines)
                unsafe = True
            else:
                keep.update(lines)
        elif tok.type == "html_block":
            dirty.update(lines)
            unsafe = True
    if not unsafe:
        return None
    count = text.count("\n") + 1
    # Lines no block claims (link definitions among them) are escaped too when a reference is bad.
    extra = () if refs_safe else (i for i in range(count) if i not in keep)
    return dirty.union(extra)


def _escape_line(line: str) -> str:
    # Backslashes first, so an existing "\\" cannot pair with ours and re-open a "[".
    return line.replace("\\", "\\\\").replace("<", "&lt;").replace("[", "\\[")


_SAFE_INFO = re.compile(r"[\w+#.-]*")


def _strip_unsafe_fence_info(text: str) -> str:
    """Drop a code fence's info string unless it is one plain language word: renderers put it
    in a ``class`` attribute, and some (JupyterLab's Markdown output) do so unescaped."""
    tokens = _detector_md().parse(text, {})
    bad = [
        t
        for t in tokens
        if t.type == "fence" and t.map is not None and not _SAFE_INFO.fullmatch(t.info.strip())
    ]
    if not bad:
        return text
    lines = text.split("\n")
    for tok in bad:
        opener = lines[tok.map[0]]
        indent = opener[: len(opener) - len(opener.lstrip())]
        lines[tok.map[0]] = indent + tok.markup
    return "\n".join(lines)


def safe_markdown_source(text: str) -> str:
    """Markdown with raw HTML, images and non-http(s)/mailto links neutralised (shown as
    text) and code-fence info strings limited to one language word. Code blocks and untouched
    paragraphs keep their bytes."""
    text = _strip_unsafe_fence_info(text)
    for _ in range(4):
        dirty = _dirty_lines(text)
        if dirty is None:
            return text
        lines = text.split("\n")
        text = "\n".join(_escape_line(s) if i in dirty else s for i, s in enumerate(lines))
    return "\n".join(_escape_line(s) for s in text.split("\n"))


def close_open_fence(text: str) -> str:
    """Append a closing fence if the text ends inside a top-level one, so nothing composed after
    it (the next message of a transcript) is swallowed into a code block."""
    tokens = _detector_md().parse(text, {})
    last = next((t for t in reversed(tokens) if t.level == 0 and t.map is not None), None)
    if last is None or last.type != "fence":
        return text
    lines = text.rstrip("\n").split("\n")
    closer = lines[-1].strip() if last.map[1] - last.map[0] > 1 else ""
    markup = last.markup
    if closer and set(closer) == {markup[0]} and len(closer) >= len(markup):
        return text
    return text.rstrip("\n") + "\n" + markup + "\n"


def fenced(text: str, lang: str = "") -> str:
    """A fence that ``text`` cannot close: longer than any backtick run inside it."""
    runs = [len(r) for r in re.findall(r"`+", text)]
    fence = "`" * max(3, max(runs, default=0) + 1)
    body = text if text.endswith("\n") else text + "\n"
    return f"{fence}{lang}\n{body}{fence}"


def code_span(text: str) -> str:
    text = " ".join(text.split("\n"))
    runs = [len(r) for r in re.findall(r"`+", text)]
    ticks = "`" * (max(runs, default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


# --- messages ----------------------------------------------------------------------------------


def _md_text(value: Any) -> str:
    """A model/user value as a Markdown block: strings as Markdown, anything else as JSON."""
    if isinstance(value, str):
        return close_open_fence(visible_controls(value)).rstrip("\n")
    return fenced(visible_controls(to_json(value)), "json")


def _header(message: Any, *extra: str) -> str:
    bits = [f"**{label(message.role)}**"]
    sender = getattr(message, "sender", None)
    if sender:
        bits.append(code_span(visible_controls(str(sender))))
    bits.extend(e for e in extra if e)
    bits.append(format_time(getattr(message, "created_at", None)))
    return " · ".join(b for b in bits if b)


def _markdown_parts(message: Any) -> list[str]:
    role = message.role
    meta = message.metadata or {}
    if role == "assistant":
        usage = format_usage(meta.get("usage"))
        model = code_span(visible_controls(str(meta["model"]))) if meta.get("model") else ""
        stopped = "*stopped*" if meta.get("stopped") else ""
        parts = [_header(message, model, usage, stopped)]
        thinking = thinking_text(message)
        if thinking:
            quoted = (f"> {s}" if s else ">" for s in _md_text(thinking).split("\n"))
            parts.append("> **Thinking**\n>\n" + "\n".join(quoted))
        parts.append(_md_text(message.response) if message.response else "*(no text)*")
        if meta.get("result") is not None:
            parts.append(
                "**Parsed result**\n\n" + fenced(visible_controls(to_json(meta["result"])), "json")
            )
        return parts
    if role == "user":
        parts = [_header(message)]
        if message.plain_content is not None:
            parts.append(_md_text(message.plain_content))
            return parts
        if message.instruction not in (None, ""):
            parts.append(_md_text(message.instruction))
        if message.guidance not in (None, ""):
            parts.append("**Guidance**\n\n" + _md_text(message.guidance))
        if message.context:
            parts.append(
                "**Context**\n\n" + fenced(visible_controls(to_json(message.context)), "json")
            )
        fmt = message.response_schema or message.request_fields
        if fmt:
            parts.append("**Response format**\n\n" + fenced(visible_controls(to_json(fmt)), "json"))
        if message.images:
            parts.append(f"*{len(message.images)} image(s) attached*")
        return parts
    if role == "action_request":
        call = f"({code_span(visible_controls(message.call_id))})" if message.call_id else ""
        return [
            _header(message, code_span(visible_controls(message.function)), call),
            fenced(visible_controls(to_json(message.arguments)), "json"),
        ]
    if role == "action_response":
        head = _header(
            message,
            code_span(visible_controls(message.function)),
            "**error**" if message.is_error else "",
        )
        out = message.output
        body = (
            fenced(visible_controls(out), "text")
            if isinstance(out, str)
            else fenced(visible_controls(to_json(out)), "json")
        )
        return [head, body]
    return [_header(message), _md_text(getattr(message, "text", ""))]


def message_markdown(message: Any) -> str:
    """One message as Markdown: a bold role heading with time and usage, then its content."""
    return safe_markdown_source("\n\n".join(_markdown_parts(message)) + "\n")


def transcript_markdown(messages: Iterable[Any], *, title: str | None = None) -> str:
    """All messages as one Markdown document (messages separated by rules)."""
    heading = f"# {visible_controls(title).replace(chr(10), ' ')}\n\n" if title else ""
    body = "\n\n---\n\n".join("\n\n".join(_markdown_parts(m)) for m in messages)
    return safe_markdown_source(heading + body + "\n")


# --- plain text --------------------------------------------------------------------------------


def plain_header(message: Any) -> str:
    meta = getattr(message, "metadata", None) or {}
    bits = [label(message.role)]
    if getattr(message, "sender", None):
        bits.append(str(message.sender))
    if message.role in ("action_request", "action_response"):
        bits.append(message.function)
    if message.role == "action_response" and message.is_error:
        bits.append("error")
    if message.role == "assistant":
        bits.extend(
            b
            for b in (
                str(meta.get("model") or ""),
                format_usage(meta.get("usage")),
                "stopped" if meta.get("stopped") else "",
            )
            if b
        )
    bits.append(format_time(getattr(message, "created_at", None)))
    return visible_controls(" · ".join(b for b in bits if b)).replace("\n", " ")


def plain_body(message: Any) -> str:
    role = message.role
    if role == "assistant":
        thinking = thinking_text(message)
        body = message.response
        if thinking:
            body = "(thinking) " + thinking + ("\n\n" + body if body else "")
        return visible_controls(body)
    if role == "action_request":
        return visible_controls(to_json(message.arguments))
    if role == "action_response":
        return visible_controls(as_text(message.output))
    return visible_controls(message.text)


def message_plain(message: Any) -> str:
    """One message as plain text: a header line, then the text."""
    return f"[{plain_header(message)}]\n{plain_body(message)}"


def transcript_plain(messages: Iterable[Any]) -> str:
    return "\n\n".join(message_plain(m) for m in messages)


def message_copy_text(message: Any) -> str:
    """What a message's copy control copies: its text as Markdown, without the heading line
    (a reply's Markdown as the model wrote it, a prompt as typed, a tool call's JSON)."""
    role = message.role
    if role == "assistant":
        return str(message.response or "")
    if role == "user" and message.plain_content is not None:
        return str(message.plain_content)
    return "\n\n".join(_markdown_parts(message)[1:])
