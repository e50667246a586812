"""Streaming Markdown: frozen blocks + tail render exactly like the whole text, with linear work."""

from __future__ import annotations

import random

import pytest

from lion_nb.render.markdown import MarkdownStream, render_markdown, split_markdown_blocks

DOCS = {
    "prose": "# Title\n\nFirst paragraph with *emphasis*\nand a second line.\n\n"
    "Second paragraph.\n\n## Section\nText right after a heading.\n\nThe end.",
    "fences": "Intro.\n\n```python\ndef f(x):\n\n\n    return x < 1\n```\nAfter the fence.\n\n"
    "~~~\nplain\n\n~~~\n\n````md\n```\nnot a close\n```\n````\n\nTail text.\n",
    "lists": "- a\n- b\n\n- c loose\n\n  continued in item\n\nAfter list.\n\n1. one\n2. two\n\n"
    "3. three\n\nDone.\n\n* x\n\n* y\n\n- z (new list)\n",
    "mixed": "> quote\n> more\n\n> another quote\n\n| a | b |\n|:--|--:|\n| 1 | 2 |\n\n"
    "    indented code\n\n    more code\n\nText <b>raw</b> & `code`.\n\n---\n\n"
    "Setext\n======\n\nLast *line* without newline",
    "references": "Intro [link][r] here.\n\n[r]: https://example.com/r\n\nUse again: [again][r].\n\n"
    '[s]: https://example.com/s "Title"\n\n[ok][s] and <https://example.com/auto>.',
    "crlf": "Line one\r\nline two\r\n\r\n```\r\ncode\r\n\r\nmore\r\n```\r\nafter\r\n",
    "unclosed-fence": "Before.\n\n```js\nlet a = 1;\n\nlet b = 2;\n",
    "list-fence": "- item\n\n  ```\n  code in item\n\n  still code\n  ```\n\n- next\n\nafter\n",
}


def _stream(doc: str, sizes: list[int]) -> tuple[list[str], str, list[str]]:
    stream = MarkdownStream()
    frozen: list[str] = []
    pos = i = 0
    while pos < len(doc):
        n = sizes[i % len(sizes)]
        frozen += stream.feed(doc[pos : pos + n])
        pos += n
        i += 1
    tail = stream.tail_html()
    return frozen, tail, stream.finish()


@pytest.mark.parametrize("name", DOCS)
@pytest.mark.parametrize("chunking", ["chars", "lines", "random", "whole"])
def test_frozen_blocks_plus_tail_equal_whole_render(name: str, chunking: str) -> None:
    doc = DOCS[name]
    if chunking == "chars":
        sizes = [1]
    elif chunking == "lines":
        sizes = [len(line) for line in doc.splitlines(keepends=True)]
    elif chunking == "random":
        rng = random.Random(name)
        sizes = [rng.randint(1, 12) for _ in range(50)]
    else:
        sizes = [len(doc)]
    frozen, tail, final = _stream(doc, sizes)
    whole = render_markdown(doc)
    assert "".join(frozen) + tail == whole
    assert "".join(frozen + final) == whole


def test_tail_mid_stream_matches_prefix_render() -> None:
    doc = DOCS["prose"] + "\n\n" + DOCS["fences"]
    stream = MarkdownStream()
    frozen: list[str] = []
    for i in range(0, len(doc), 7):
        frozen += stream.feed(doc[i : i + 7])
        assert "".join(frozen) + stream.tail_html() == render_markdown(doc[: i + 7])


def test_blocks_are_frozen_progressively() -> None:
    stream = MarkdownStream()
    assert stream.feed("First para.\n\n") == []  # the next block has not started yet
    assert stream.feed("Sec") == []
    assert stream.feed("ond.\n") == ["<p>First para.</p>\n"]
    assert stream.tail_html() == "<p>Second.</p>\n"
    assert stream.feed("```\nx\n\n") == []  # blank line inside an open fence ends nothing
    # The closing fence freezes at once (with the paragraph it interrupted).
    assert stream.feed("```\n") == [
        '<p>Second.</p>\n<pre class="lion-code"><code>x\n\n</code></pre>\n'
    ]
    assert stream.tail_html() == ""
    assert stream.feed("tail") == []
    assert stream.tail_html() == "<p>tail</p>\n"
    assert stream.finish() == ["<p>tail</p>\n"]
    assert stream.finish() == []
    assert stream.tail_html() == ""
    with pytest.raises(ValueError, match="after finish"):
        stream.feed("more")


def test_split_markdown_blocks() -> None:
    doc = "a\n\n```\nx\n\ny\n```\nb\n\n- l1\n\n- l2\n\nc\n\nd"
    blocks, tail = split_markdown_blocks(doc)
    # "c" stays in the tail until the line after it is complete (it could still continue "c").
    assert blocks == ["a\n\n", "```\nx\n\ny\n```\n", "b\n\n", "- l1\n\n- l2\n\n"]
    assert tail == "c\n\nd"
    assert "".join(blocks) + tail == doc
    assert split_markdown_blocks("") == ([], "")
    assert split_markdown_blocks("one line\n") == ([], "one line\n")
    # Newlines are normalised like markdown-it does; a trailing "\r" is a line end.
    assert split_markdown_blocks("p\r\n\r\nq\r\nr\r") == (["p\n\n"], "q\nr\n")


def test_open_fence_keeps_everything_in_the_tail() -> None:
    blocks, tail = split_markdown_blocks("```\na\n\nb\n\nc\n")
    assert blocks == []
    assert tail == "```\na\n\nb\n\nc\n"


def test_references_defined_earlier_resolve_in_later_blocks() -> None:
    stream = MarkdownStream()
    out = stream.feed("[r]: https://example.com/\n\nSee [here][r].\n\nEnd.\n")
    assert "".join(out) == (
        '<p>See <a href="https://example.com/" target="_blank" '
        'rel="noopener noreferrer nofollow">here</a>.</p>\n'
    )


def _linear_doc(n_blocks: int) -> str:
    parts = []
    for i in range(n_blocks):
        kind = i % 5
        if kind == 0:
            parts.append(f"Paragraph {i} with **bold** and `code` and a [link](https://x/{i}).")
        elif kind == 1:
            parts.append(f"```python\nx = {i}\n\n\ny = x * 2\n```")
        elif kind == 2:
            parts.append(f"- item {i}\n- item\n  continued")
        elif kind == 3:
            parts.append(f"## Heading {i}\nText under the heading.")
        else:
            parts.append(f"| a | b |\n|---|---|\n| {i} | x |")
    return "\n\n".join(parts) + "\n"


def _parsed_per_char(doc: str, step: int) -> float:
    stream = MarkdownStream()
    for i in range(0, len(doc), step):
        stream.feed(doc[i : i + step])
    return stream.parsed_chars / len(doc)


@pytest.mark.parametrize("step", [1, 4, 50])
def test_frozen_parsing_is_linear(step: int) -> None:
    """Characters parsed for frozen blocks stay a small constant times the text length, at
    any size (quadratic work would grow with the document)."""
    small, large = _linear_doc(40), _linear_doc(400)
    ratio_small, ratio_large = _parsed_per_char(small, step), _parsed_per_char(large, step)
    assert ratio_large <= 2.5
    assert ratio_large <= ratio_small * 1.2


@pytest.mark.parametrize(
    "doc",
    [
        # every line after a blank looks like a boundary but is a link definition (no block starts)
        "".join(f"[r{i}]: https://example.com/{i}\n\n" for i in range(600)),
        # a loose list: items after blank lines continue one list
        "".join(f"{i + 1}. item {i}\n\n" for i in range(600)),
        # a long fence with many blank lines
        "```\n" + "".join(f"line {i}\n\n" for i in range(600)) + "```\n",
    ],
    ids=["ref-definitions", "loose-list", "long-fence"],
)
def test_rejected_boundaries_stay_linear(doc: str) -> None:
    assert _parsed_per_char(doc, 5) <= 4.0
    frozen, tail, _ = _stream(doc, [5])
    assert "".join(frozen) + tail == render_markdown(doc)
