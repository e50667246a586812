"""Markdown -> sanitized HTML, whole (``render_markdown``) or streamed (``MarkdownStream``).

Model text is untrusted. It is parsed by markdown-it-py (CommonMark + tables + strikethrough)
with ``html=False``, so raw HTML in the text is escaped and shown as text; code fences are
highlighted by pygments into class-only spans; then the HTML goes through nh3 (Ammonia) with an
explicit allow-list as a second line of defence:

- tags: the ones CommonMark/GFM tables produce (no ``img``, no ``div``, no ``style``);
- attributes: ``href``/``title`` on links, ``start`` on ordered lists, nothing else — no
  ``style`` (table alignment becomes ``lion-al-*`` classes), no ``on*``;
- classes: only pygments token classes, ``lion-code``, ``lion-img-link``, ``lion-al-*``;
- URLs: absolute http/https/mailto only; relative, ``javascript:``, ``data:``, ``vbscript:``
  etc. are removed. Links get ``rel="noopener noreferrer nofollow"`` and ``target="_blank"``.
- Images are never loaded: ``![alt](url)`` renders as a link "[image: alt]" (a remote image is a
  network request the reader did not ask for — a tracking pixel — and the R1 tests forbid it).

Streaming: ``MarkdownStream`` freezes completed top-level blocks so a live view renders each
block once and re-renders only the growing tail. A cheap line scanner proposes boundaries
(a non-indented line after a blank line or heading, outside a fence; the close of a fence) and
markdown-it confirms each one by checking that a top-level block starts exactly there, so a
frozen block renders exactly as it does inside the whole document. Link reference definitions
are carried forward to later blocks; a reference *used before* its definition resolves only in
the final ``render_markdown`` of the whole text (the live view shows it as text until then).
"""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Sequence
from typing import Any

import nh3
from markdown_it import MarkdownIt
from markdown_it.token import Token
from pygments import highlight as _pygments_highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.token import STANDARD_TYPES
from pygments.util import ClassNotFound

__all__ = ["MarkdownStream", "render_markdown", "split_markdown_blocks", "warm_up"]

_LANG_RE = re.compile(r"^[\w+#.-]{1,40}$")
_FORMATTER = HtmlFormatter(nowrap=True)
_TOKEN_CLASSES = frozenset(c for c in STANDARD_TYPES.values() if c)
_ALIGN = {
    "text-align:left": "lion-al-left",
    "text-align:center": "lion-al-center",
    "text-align:right": "lion-al-right",
}


@functools.lru_cache(maxsize=128)
def _lexer(lang: str) -> Any:
    if not _LANG_RE.match(lang):
        return None
    try:
        # stripnl=False keeps leading blank lines of the block, as the plain rendering does.
        return get_lexer_by_name(lang.lower(), stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None


@functools.cache
def warm_up() -> None:
    """Highlight a line of Python once: the first code block costs ~0.2 s (pygments loads and
    compiles its lexer), which would otherwise hold back the first text of the first reply that
    opens with code. Live views run it in a thread when they are created."""
    lexer = _lexer("python")
    if lexer is not None:
        _pygments_highlight("x = 1\n", lexer, _FORMATTER)


def _highlight(code: str, lang: str, _attrs: str) -> str:
    lexer = _lexer(lang) if lang else None
    body = (
        html.escape(code, quote=False)
        if lexer is None
        else _pygments_highlight(code, lexer, _FORMATTER)
    )
    return f'<pre class="lion-code"><code>{body}</code></pre>'


def _code_block(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    return _highlight(tokens[idx].content, "", "") + "\n"


def _image(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    alt = self.renderInlineAsText(token.children or [], options, env)
    src = str(token.attrGet("src") or "")
    title = token.attrGet("title")
    title_attr = f' title="{html.escape(str(title))}"' if title else ""
    label = f"[image: {html.escape(alt, quote=False)}]" if alt else "[image]"
    return f'<a class="lion-img-link" href="{html.escape(src)}"{title_attr}>{label}</a>'


def _cell_open(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    cls = _ALIGN.get(str(token.attrGet("style") or ""))
    return f'<{token.tag} class="{cls}">' if cls else f"<{token.tag}>"


def build_markdown(*, html_enabled: bool = False) -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": html_enabled, "highlight": _highlight})
    md.enable(["table", "strikethrough"])
    md.add_render_rule("code_block", _code_block)
    md.add_render_rule("image", _image)
    md.add_render_rule("th_open", _cell_open)
    md.add_render_rule("td_open", _cell_open)
    return md


MD = build_markdown()

_CLEANER = nh3.Cleaner(
    tags={
        "a",
        "blockquote",
        "br",
        "code",
        "em",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "hr",
        "li",
        "ol",
        "p",
        "pre",
        "s",
        "span",
        "strong",
        "table",
        "tbody",
        "td",
        "th",
        "thead",
        "tr",
        "ul",
    },
    clean_content_tags={"script", "style"},
    attributes={"a": {"href", "title"}, "ol": {"start"}},
    allowed_classes={
        "span": set(_TOKEN_CLASSES),
        "pre": {"lion-code"},
        "a": {"lion-img-link"},
        "th": set(_ALIGN.values()),
        "td": set(_ALIGN.values()),
    },
    url_schemes={"http", "https", "mailto"},
    url_relative="deny",
    link_rel="noopener noreferrer nofollow",
    set_tag_attribute_values={"a": {"target": "_blank"}},
    strip_comments=True,
)


def sanitize_html(fragment: str) -> str:
    """Run HTML through the Markdown allow-list (nh3). Anything outside it is removed."""
    return _CLEANER.clean(fragment)


def _render(text: str, env: dict[str, Any]) -> str:
    return sanitize_html(MD.render(text, env))


def render_markdown(text: str) -> str:
    """Markdown (untrusted) -> sanitized HTML fragment, safe to insert into a page."""
    return _render(text, {})


# --- streaming -------------------------------------------------------------------------------

_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_LIST_RE = re.compile(r"^ {0,3}(?:[-+*]|\d{1,9}[.)])(?:[ \t]|$)")
_ATX_RE = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")


class _BlockSplitter:
    """Splits growing Markdown into frozen chunks (source + tokens) and a tail.

    Work is linear in the text: each complete line is classified once; markdown-it parses a
    chunk when it is frozen, and a rejected boundary is not re-checked until the tail has
    doubled, so rejected checks cost at most about the text length too.
    """

    def __init__(self) -> None:
        self.env: dict[str, Any] = {}  # link references defined by frozen chunks
        self.parsed_chars = 0  # characters handed to markdown-it; linear-work evidence in tests
        self._lines: list[str] = []  # complete lines of the tail, each ending in "\n"
        self._chars = 0  # total length of self._lines
        self._partial: list[str] = []  # pieces of the current incomplete line
        self._cr = False  # a delta ended in "\r": it may be the first half of "\r\n"
        self._fence: tuple[str, int] | None = None
        self._prev_blank = False
        self._prev_heading = False
        self._has_list = False
        self._retry_at = 0

    def tail(self) -> str:
        return "".join(self._lines) + "".join(self._partial)

    @property
    def tail_chars(self) -> int:
        return self._chars + sum(map(len, self._partial))

    def feed(self, delta: str) -> list[tuple[str, list[Token]]]:
        # Normalise newlines as markdown-it does, so our line numbers match its token maps.
        if self._cr:
            delta, self._cr = "\r" + delta, False
        if delta.endswith("\r"):
            delta, self._cr = delta[:-1], True
        delta = delta.replace("\r\n", "\n").replace("\r", "\n")
        out: list[tuple[str, list[Token]]] = []
        if "\n" not in delta:
            if delta:
                self._partial.append(delta)
            return out
        pieces = delta.split("\n")
        self._partial.append(pieces[0])
        self._line_done("".join(self._partial) + "\n", out)
        self._partial = []
        for piece in pieces[1:-1]:
            self._line_done(piece + "\n", out)
        if pieces[-1]:
            self._partial.append(pieces[-1])
        return out

    def finish(self) -> tuple[str, list[Token]] | None:
        """The rest as a last chunk (None if it is empty); the splitter is empty afterwards."""
        if self._cr:
            self._cr = False
            self._partial.append("\n")
        rest = self.tail()
        self._lines, self._partial, self._chars = [], [], 0
        if not rest:
            return None
        self.parsed_chars += len(rest)
        return rest, MD.parse(rest, self.env)

    def _line_done(self, line: str, out: list[tuple[str, list[Token]]]) -> None:
        self._lines.append(line)
        self._chars += len(line)
        number = len(self._lines) - 1
        text = line[:-1]
        if self._fence is not None:
            char, length = self._fence
            m = _FENCE_RE.match(text)
            if m and m[1][0] == char and len(m[1]) >= length and not m[2].strip(" \t"):
                self._fence = None
                if self._chars >= self._retry_at:
                    chunk = self._try_close(number, char, len(m[1]))
                    if chunk is not None:
                        out.append(chunk)
            return
        if not text.strip(" \t"):
            self._prev_blank = True
            return
        is_list = _LIST_RE.match(text) is not None
        if (
            number > 0
            and (self._prev_blank or self._prev_heading)
            and text[0] not in " \t"
            and not (is_list and self._has_list)
            and self._chars >= self._retry_at
        ):
            chunk = self._try_split(number)
            if chunk is not None:
                out.append(chunk)
        m = _FENCE_RE.match(text)
        if m and (m[1][0] == "~" or "`" not in m[2]):
            self._fence = (m[1][0], len(m[1]))
        self._has_list = self._has_list or is_list
        self._prev_blank = False
        self._prev_heading = _ATX_RE.match(text) is not None

    def _parse(self) -> tuple[list[Token], dict[str, Any]]:
        # A scratch env: references are adopted only when the chunk is really frozen.
        env = {"references": dict(self.env.get("references", {}))}
        src = "".join(self._lines)
        self.parsed_chars += len(src)
        return MD.parse(src, env), env

    def _reject(self) -> None:
        self._retry_at = 2 * self._chars

    def _freeze(
        self, count: int, tokens: list[Token], env: dict[str, Any]
    ) -> tuple[str, list[Token]]:
        source = "".join(self._lines[:count])
        self._lines = self._lines[count:]
        self._chars -= len(source)
        self.env = env
        self._retry_at = 0
        self._has_list = self._prev_heading = self._prev_blank = False
        self._fence = None
        return source, tokens

    def _try_split(self, number: int) -> tuple[str, list[Token]] | None:
        """Freeze the lines before line ``number`` if a top-level block starts exactly there."""
        tokens, env = self._parse()
        for i, tok in enumerate(tokens):
            if tok.level == 0 and tok.map is not None and tok.map[0] >= number:
                if tok.map[0] == number:
                    return self._freeze(number, tokens[:i], env)
                break
        self._reject()
        return None

    def _try_close(self, number: int, char: str, length: int) -> tuple[str, list[Token]] | None:
        """Freeze everything through line ``number`` if it closes a top-level fence."""
        tokens, env = self._parse()
        last = next((t for t in reversed(tokens) if t.level == 0 and t.map is not None), None)
        if (
            last is not None
            and last.type == "fence"
            and last.map is not None
            and last.map[0] < number
            and last.map[1] == number + 1
            and last.markup[0] == char
            and len(last.markup) <= length
        ):
            return self._freeze(number + 1, tokens, env)
        self._reject()
        return None


def split_markdown_blocks(text: str) -> tuple[list[str], str]:
    """Split Markdown into completed top-level blocks and the still-growing tail.

    ``"".join(blocks) + tail`` equals ``text`` with newlines normalised to ``"\\n"``. A blank
    line inside an open code fence does not end a block."""
    splitter = _BlockSplitter()
    blocks = [source for source, _ in splitter.feed(text)]
    return blocks, splitter.tail() + ("\n" if splitter._cr else "")


class MarkdownStream:
    """Incremental Markdown rendering for a live view.

    ``feed(delta)`` returns the HTML of blocks that became final (render each once and keep
    it); ``tail_html()`` renders the unfinished tail (call it at the view's throttle rate);
    ``finish()`` returns the HTML of the remaining text. All frozen HTML joined, plus the tail,
    equals ``render_markdown`` of the whole text (see the module note on forward references).
    """

    def __init__(self) -> None:
        self._splitter = _BlockSplitter()
        self._finished = False
        self._tail_cache: str | None = ""

    @property
    def parsed_chars(self) -> int:
        """Characters parsed so far for frozen blocks (tail renders excluded)."""
        return self._splitter.parsed_chars

    @property
    def tail_chars(self) -> int:
        """Characters of the unfinished tail (what ``tail_html`` renders)."""
        return self._splitter.tail_chars

    def _chunk_html(self, tokens: list[Token]) -> str:
        return sanitize_html(MD.renderer.render(tokens, MD.options, self._splitter.env))

    def feed(self, delta: str) -> list[str]:
        if self._finished:
            raise ValueError("MarkdownStream.feed() after finish()")
        if not delta:
            return []
        self._tail_cache = None
        chunks = self._splitter.feed(delta)
        return [h for _, tokens in chunks if (h := self._chunk_html(tokens))]

    def tail_text(self) -> str:
        """The unfinished tail's Markdown source (what ``tail_html`` renders)."""
        return self._splitter.tail()

    def tail_html(self) -> str:
        if self._tail_cache is None:
            env = {"references": dict(self._splitter.env.get("references", {}))}
            self._tail_cache = _render(self._splitter.tail(), env)
        return self._tail_cache

    def finish(self) -> list[str]:
        if self._finished:
            return []
        self._finished = True
        self._tail_cache = ""
        last = self._splitter.finish()
        if last is None:
            return []
        html_ = self._chunk_html(last[1])
        return [html_] if html_ else []
