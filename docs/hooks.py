"""MkDocs hooks of the docs site (``mkdocs.yml``: ``hooks``).

A tutorial page's views are HTML transcripts (chat cards, grid tables, token chips) written by
``docs/build.py`` to ``docs/tutorials/_outputs/<page>.json``; the page holds a marker per output.
They are put in after Markdown has run, so Markdown never rewrites their HTML (indented lines
as code, underscores as emphasis).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

MARKER = re.compile(r'<div class="nb-output" data-output="(\d+)"></div>')
# Each view's transcript carries the views' whole stylesheet (~50 KB), so that it reads alone;
# on one page the first copy serves every view.
STYLE = re.compile(r"<style\b[^>]*>.*?</style>", re.DOTALL)


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    """Replace each output marker of a tutorial page with its HTML."""
    source = Path(page.file.src_path)
    if source.parts[:1] != ("tutorials",):
        return html
    sidecar = Path(config["docs_dir"]) / "tutorials" / "_outputs" / f"{source.stem}.json"
    if not sidecar.is_file():
        return html
    outputs = json.loads(sidecar.read_text(encoding="utf-8"))

    def output(match: re.Match[str]) -> str:
        return f'<div class="nb-output">{outputs[int(match.group(1))]}</div>'

    return _first_copies_of_styles(MARKER.sub(output, html))


def _first_copies_of_styles(html: str) -> str:
    """The page with each distinct ``<style>`` block kept once (where it first appears)."""
    seen: set[str] = set()

    def once(match: re.Match[str]) -> str:
        if match.group(0) in seen:
            return ""
        seen.add(match.group(0))
        return match.group(0)

    return STYLE.sub(once, html)
