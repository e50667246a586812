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

    return MARKER.sub(output, html)
