"""The one HTML escape of the render layer.

Every piece of model, tool or user text that reaches HTML without going through Markdown
(names, JSON, tool output, attribute values) goes through ``escape``: control characters are
made visible (``text.visible_controls``) and ``& < > " '`` become entities, so the result is
safe in element content and in quoted attribute values alike.
"""

from __future__ import annotations

import html
from typing import Any

from lion_nb.render.text import visible_controls

__all__ = ["escape"]


def escape(value: Any) -> str:
    """``str(value)`` as HTML text, safe in element content and attribute values."""
    return html.escape(visible_controls(str(value)), quote=True)
