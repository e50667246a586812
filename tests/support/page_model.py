"""What ``widgets/lion_nb.js`` does with the channel's messages, in Python: ordered ops applied
to parts, gaps detected, the synced state rendered. Lets kernel-side tests check the protocol
without a browser (the browser tests check the module itself)."""

from __future__ import annotations

import html
import html as html_mod
import re
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Part:
    html: str | None  # as put; None once streamed into
    slots: dict[str, str] = field(default_factory=dict)
    tag: str = ""
    tokens: list[tuple[str, int]] = field(default_factory=list)  # the token view's
    top: dict[int, list[list[Any]]] = field(default_factory=dict)
    parent: str | None = None  # a nested part: the part it is in
    children: list[str] = field(default_factory=list)  # the nested parts in it, in order

    def shown(self) -> str:
        """The HTML the part shows (slot wrappers left out: they are display: contents)."""
        if self.html is not None:
            return self.html
        s = self.slots
        body = s["frozen"] + s["tail"]
        body_html = f'<div class="lion-body lion-md">{body}</div>'
        return f"{self.tag}{s['head']}{s['thinking']}{body_html}{s['tools']}</div>"


_MARKS = (
    '<div data-slot="head">',
    '</div><div data-slot="thinking">',
    '</div><div class="lion-body lion-md"><div data-slot="frozen">',
    '</div><div data-slot="tail" class="lion-tail">',
    '</div></div><div data-slot="tools">',
)


def _live(html: str) -> Part:
    """A live card (render.html.live_shell_html, filled or not) as slots."""
    tag, rest = html.split(_MARKS[0], 1)
    values = []
    for mark in _MARKS[1:]:
        value, rest = rest.split(mark, 1)
        values.append(value)
    values.append(rest[: -len("</div></div>")])
    return Part(
        None, dict(zip(("head", "thinking", "frozen", "tail", "tools"), values, strict=True)), tag
    )


class Page:
    def __init__(
        self,
        state: list[list[str]] | None = None,
        seq: int = 0,
        templates: dict[str, str] | None = None,
    ) -> None:
        self.templates = dict(templates or {})  # the view's synced templates
        self.order: list[str] = []
        self.parts: dict[str, Part] = {}
        self.sampler: dict[str, dict[str, Any]] = {}  # key -> the sampler op
        self.applied = seq
        self.resyncs = 0
        self.updates = 0
        if state is not None:
            self.from_state(state, seq)

    def from_state(self, state: list[list[str]], seq: int) -> None:
        self.order, self.parts = [], {}
        for key, value, *parent in state:
            self.parts[key] = _part(value, parent[0] if parent else None)
            if parent:
                self.parts[parent[0]].children.append(key)
            else:
                self.order.append(key)
        self.applied = seq

    def receive(self, msg: dict[str, Any]) -> None:
        if msg["seq"] <= self.applied:
            return
        if msg["seq"] != self.applied + 1:
            self.resyncs += 1
            return
        for op in msg["ops"]:
            self.apply(op)
        self.applied = msg["seq"]
        self.updates += 1

    def apply(self, op: dict[str, Any]) -> None:
        """One op, as the module's switch applies it (one method per op kind)."""
        kind = op["op"]
        if kind == "put":
            self._put(op)
        elif kind == "sampler":  # the settings a sampling panel starts at (widgets/sampling.js)
            self.sampler[op["key"]] = op
        elif kind not in ("clip", "draft", "chrome"):
            getattr(self, f"_{kind}")(op, self.parts[op.get("key")])

    def _tokens(self, op: dict[str, Any], part: Part) -> None:
        """The token view (``widgets/tokens.js``): deltas from ``at``, alternatives by chunk."""
        if "t" in op:
            if op["at"] == 0:
                part.tokens = []
            assert op["at"] == len(part.tokens), (op["at"], len(part.tokens))  # a delta
            part.tokens.extend(zip(op["t"], op["s"], strict=True))
        for k, alts in enumerate(op.get("top", [])):
            part.top[op["at"] + k] = alts

    def _put(self, op: dict[str, Any]) -> None:
        key = op.get("key")
        html = op["html"] if "tpl" not in op else self.templates[op["tpl"]]
        old_key = op.get("replace") if op.get("replace") in self.parts else None
        old_key = old_key or (key if key in self.parts else None)
        if old_key is not None:  # in its place (the parts in it go with it)
            old = self.parts[old_key]
            part = _part(html, old.parent)
            siblings = self._siblings(old.parent)
            siblings[siblings.index(old_key)] = key
            self._forget(old_key)
        else:
            part = _part(html, op.get("parent"))
            siblings = self._siblings(part.parent)
            before = op.get("before")
            at = siblings.index(before) if before in siblings else len(siblings)
            siblings.insert(at, key)
        self.parts[key] = part

    def _siblings(self, parent: str | None) -> list[str]:
        return self.order if parent is None else self.parts[parent].children

    def _forget(self, key: str) -> None:
        for child in self.parts.pop(key).children:
            self._forget(child)

    def _attrs(self, op: dict[str, Any], part: Part) -> None:
        """The part's first tag takes the classes and attributes (the others keep their
        place)."""
        html = part.html or ""
        end = html.index(">")
        attrs = re.findall(r'\s([\w-]+)(?:="([^"]*)")?', html[:end])
        values = dict(attrs) | {"class": html_mod.escape(op["cls"])}
        values |= {k: html_mod.escape(v) for k, v in op.get("attrs", {}).items()}
        tag = html[1:].split(None, 1)[0].rstrip(">")
        out = "".join(
            f' {k}="{v}"' if v or k != "data-parts" else f" {k}" for k, v in values.items()
        )
        part.html = f"<{tag}{out}{html[end:]}"

    def _drop(self, op: dict[str, Any], part: Part) -> None:
        self._siblings(part.parent).remove(op["key"])
        self._forget(op["key"])

    def _add(self, op: dict[str, Any], part: Part) -> None:
        part.slots["frozen"] += op["html"]
        tail, keep = part.slots["tail"], op.get("keep", 0)  # keep: UTF-16 code units
        units = tail.encode("utf-16-le")
        part.slots["tail"] = units[len(units) - 2 * keep :].decode("utf-16-le") if keep else ""
        part.slots["tail"] += op.get("text", "")

    def _tail(self, op: dict[str, Any], part: Part) -> None:
        if "html" in op:
            part.slots["tail"] = op["html"]
        elif op["add"]:
            part.slots["tail"] += op["text"]
        else:
            part.slots["tail"] = op["text"]

    def _slot(self, op: dict[str, Any], part: Part) -> None:
        part.slots[op["slot"]] = op["html"]

    def _seal(self, op: dict[str, Any], part: Part) -> None:
        key = op["key"]
        part.slots["head"] = op["head"]
        if "thinking" in op:
            part.slots["thinking"] = op["thinking"]
        part.slots["frozen"] += op.get("add", "")
        part.slots["tail"] = ""
        if "after" in op:
            part.slots["tools"] = op["after"]
        if "attrs" in op:  # the recorded card's classes and attributes, as data
            attrs = {"class": op["cls"], **op["attrs"]}
            ident = "".join(f' {k}="{html.escape(v)}"' for k, v in attrs.items())
            part.tag = f"<div{ident}>"
        elif "cls" in op:  # the card's new classes (its other attributes stay)
            part.tag = re.sub(r'class="[^"]*"', f'class="{html.escape(op["cls"])}"', part.tag)
        if op.get("id") and op["id"] != key:
            siblings = self._siblings(part.parent)
            siblings[siblings.index(key)] = op["id"]
            self.parts[op["id"]] = self.parts.pop(key)

    def html(self) -> str:
        return "".join(self._shown(k) for k in self.order)

    def _shown(self, key: str) -> str:
        """A part as shown, the parts in it inside its element marked ``data-parts``."""
        part = self.parts[key]
        html = part.shown()
        if not part.children:
            return html
        inner = "".join(self._shown(k) for k in part.children)
        return html.replace("data-parts>", "data-parts>" + inner, 1)


def _part(html: str, parent: str | None) -> Part:
    part = _live(html) if 'data-slot="frozen"' in html else Part(html)
    part.parent = parent
    return part
