"""Pure rendering: messages and view models -> sanitized HTML cards, Markdown, plain text, rich
renderables. Renderers only: the state they draw comes from ``lion_nb.viewmodels``, and no
module here imports an operation or a provider.

Names resolve lazily, so importing ``lion_nb.render`` loads neither markdown-it, nh3, pygments
nor rich until a renderer is used.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_LAZY = {
    "render_markdown": "lion_nb.render.markdown",
    "split_markdown_blocks": "lion_nb.render.markdown",
    "MarkdownStream": "lion_nb.render.markdown",
    "escape": "lion_nb.render.escape",
    "card_html": "lion_nb.render.html",
    "message_html": "lion_nb.render.html",
    "transcript_html": "lion_nb.render.html",
    "streaming_html": "lion_nb.render.html",
    "head_html": "lion_nb.render.html",
    "thinking_html": "lion_nb.render.html",
    "lion_css": "lion_nb.render.html",
    "css_style_tag": "lion_nb.render.html",
    "message_markdown": "lion_nb.render.text",
    "transcript_markdown": "lion_nb.render.text",
    "message_plain": "lion_nb.render.text",
    "transcript_plain": "lion_nb.render.text",
    "safe_markdown_source": "lion_nb.render.text",
    "MessageRenderable": "lion_nb.render.rich",
    "TranscriptRenderable": "lion_nb.render.rich",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'lion_nb.render' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
