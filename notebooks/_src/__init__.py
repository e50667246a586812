"""Cell sources of the tutorial notebooks (assembled by ``notebooks/_build.py``)."""

from __future__ import annotations

from textwrap import dedent


def md(text: str) -> tuple[str, str]:
    """A Markdown cell."""
    return ("md", dedent(text).strip())


def code(text: str) -> tuple[str, str]:
    """A code cell."""
    return ("code", dedent(text).strip())
