"""Checks that rendered HTML holds nothing a browser would execute or fetch.

Strict by construction: every element and attribute must be in the small vocabulary our
renderers emit, so an unexpected construct fails even if it is not on a deny-list. The
stylesheet ``<style data-lion-css>`` and ``<meta>`` are allowed only inside ``<head>`` of a
standalone export (model content always lands in ``<body>``)."""

from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path

CORPUS = json.loads((Path(__file__).parents[1] / "fixtures" / "xss_corpus.json").read_text())

TAGS = {
    "a",
    "blockquote",
    "br",
    "code",
    "del",
    "details",
    "div",
    "em",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "ins",
    "li",
    "ol",
    "p",
    "pre",
    "s",
    "span",
    "strong",
    "summary",
    "table",
    "tbody",
    "td",
    "th",
    "thead",
    "time",
    "tr",
    "ul",
}
DOCUMENT_TAGS = {"html", "head", "body", "title"}
ATTRS = {
    "class",
    "data-id",
    "data-role",
    "datetime",
    "title",
    "href",
    "target",
    "rel",
    "start",
    "open",
    "lang",
}
HEAD_ATTRS = {"charset", "http-equiv", "content", "name", "data-lion-css"}
URL_ATTRS = {
    "href",
    "src",
    "xlink:href",
    "action",
    "formaction",
    "data",
    "background",
    "poster",
    "srcset",
    "cite",
    "ping",
    "lowsrc",
    "dynsrc",
    "codebase",
}
_SCHEME = re.compile(r"^([a-z][a-z0-9+.\-]*):")


def url_problem(value: str) -> str | None:
    # Decode entities (again: conservative), drop what browsers ignore, then read the scheme.
    cleaned = re.sub(r"[\x00-\x20\x7f]", "", html.unescape(html.unescape(value))).lower()
    m = _SCHEME.match(cleaned)
    if m and m[1] not in ("http", "https", "mailto"):
        return f"URL scheme {m[1]!r}"
    return None


class _Inspector(HTMLParser):
    def __init__(self, *, document: bool, allow: frozenset[str] = frozenset()) -> None:
        super().__init__(convert_charrefs=True)
        self.document = document
        self.allow = allow  # inert attributes a renderer adds (data-*, aria-*, role)
        self.in_head = False
        self.styles = 0
        self.problems: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = {n.lower() for n, _ in attrs}
        if tag == "head":
            self.in_head = True
        head_ok = self.document and self.in_head
        if tag == "style":
            if not (head_ok and names == {"data-lion-css"} and self.styles == 0):
                self.problems.append("<style> outside our stylesheet slot")
            self.styles += 1
        elif tag == "meta":
            if not head_ok:
                self.problems.append("<meta> outside <head>")
        elif tag not in TAGS and not (self.document and tag in DOCUMENT_TAGS):
            self.problems.append(f"element <{tag}>")
        for name, value in attrs:
            name = name.lower()
            if name.startswith("on"):
                self.problems.append(f"event handler {name} on <{tag}>")
            elif name not in ATTRS | self.allow and not (head_ok and name in HEAD_ATTRS):
                self.problems.append(f"attribute {name} on <{tag}>")
            if name in URL_ATTRS and value and (p := url_problem(value)):
                self.problems.append(f"{p} in {name} on <{tag}>")
        if tag == "meta" and head_ok:
            attrs_d = {n.lower(): (v or "") for n, v in attrs}
            if attrs_d.get("http-equiv", "").lower() not in ("", "content-security-policy"):
                self.problems.append("<meta http-equiv> other than CSP")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag == "head":
            self.in_head = False

    def handle_comment(self, data: str) -> None:
        self.problems.append("comment")

    def handle_pi(self, data: str) -> None:
        self.problems.append("processing instruction")

    def unknown_decl(self, data: str) -> None:
        self.problems.append(f"declaration {data[:20]!r}")


def html_problems(
    markup: str, *, document: bool = False, allow: frozenset[str] = frozenset()
) -> list[str]:
    """Everything executable or fetching in ``markup``; [] when it is inert. ``allow``:
    inert attributes the renderer under test adds besides the shared vocabulary (never an
    ``on*`` handler, ``style`` or a URL attribute)."""
    assert not {a for a in allow if a.startswith("on") or a == "style" or a in URL_ATTRS}
    inspector = _Inspector(document=document, allow=allow)
    inspector.feed(markup)
    inspector.close()
    if document and inspector.styles != 1:
        inspector.problems.append(f"{inspector.styles} <style> elements (expected our one)")
    return inspector.problems
