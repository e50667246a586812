"""One-line plain-text previews of Markdown (the inspector's rows): what a reader sees, not
the Markdown source — ``## Step 176`` becomes "Step 176", a fenced block its code, a link its
text, ``**bold**`` plain "bold".

Parsed by markdown-it-py with the same CommonMark + tables + strikethrough rules (and
``html=False``) as ``render.markdown``, so a preview reads as the rendered card does. Only a
prefix of a long text is parsed: a preview shows about a line of it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from markdown_it import MarkdownIt
from markdown_it.token import Token

__all__ = ["markdown_plain", "plain_preview"]

_MD = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
_PARSED_PER_CHAR = 4  # characters of source parsed per character of preview (Markdown syntax)


def _inline_text(children: Iterable[Token]) -> Iterable[str]:
    for token in children:
        if token.type in ("text", "code_inline"):
            yield token.content
        elif token.type in ("softbreak", "hardbreak"):
            yield " "
        elif token.type == "image":  # its alt text, as the card's "[image: alt]" link says
            alt = "".join(_inline_text(token.children or ()))
            yield f"[image: {alt}]" if alt else "[image]"


def markdown_plain(text: str) -> str:
    """The text of ``text`` read as Markdown, one space between blocks and words."""
    parts: list[str] = []
    for token in _MD.parse(text):
        if token.type == "inline":
            parts.append("".join(_inline_text(token.children or ())))
        elif token.type in ("fence", "code_block"):
            parts.append(token.content)
    return " ".join(" ".join(parts).split())


@functools.lru_cache(maxsize=1024)
def _plain_prefix(source: str) -> str:
    return markdown_plain(source)


def plain_preview(text: str, limit: int = 110) -> str:
    """``markdown_plain`` of ``text`` cut to ``limit`` characters (with "…" when cut). Pages
    of the inspector are re-filled often: previews are cached by the prefix they parse."""
    source = text[: limit * _PARSED_PER_CHAR + 200]
    plain = _plain_prefix(source)
    if len(plain) > limit:
        return plain[: limit - 1] + "…"
    return plain + "…" if len(source) < len(text) else plain  # the rest was not parsed
