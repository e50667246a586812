"""render.markdown: CommonMark + tables, pygments fences, nh3 allow-list; and streaming
Markdown (frozen blocks + tail render exactly like the whole text, with linear work)."""

from __future__ import annotations

import random

import pytest

from lion_nb.render.markdown import (
    MarkdownStream,
    render_markdown,
    sanitize_html,
    split_markdown_blocks,
)

LINK = 'target="_blank" rel="noopener noreferrer nofollow"'


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("Hello **world**", "<p>Hello <strong>world</strong></p>\n"),
        ("# Title\n\ntext", "<h1>Title</h1>\n<p>text</p>\n"),
        ("~~gone~~ *em*", "<p><s>gone</s> <em>em</em></p>\n"),
        ("3. c", '<ol start="3">\n<li>c</li>\n</ol>\n'),
        ("> q", "<blockquote>\n<p>q</p>\n</blockquote>\n"),
        # raw HTML is text, not markup
        (
            "a <b onclick=x>b</b> <!-- c -->",
            "<p>a &lt;b onclick=x&gt;b&lt;/b&gt; &lt;!-- c --&gt;</p>\n",
        ),
        ("<div>\nblock\n</div>", "<p>&lt;div&gt;\nblock\n&lt;/div&gt;</p>\n"),
        # links: absolute http(s)/mailto kept; relative and fragment hrefs dropped, text kept
        (
            "[a](https://x.org/p?q=1&r=2)",
            f'<p><a href="https://x.org/p?q=1&amp;r=2" {LINK}>a</a></p>\n',
        ),
        ("[m](mailto:a@b.c)", f'<p><a href="mailto:a@b.c" {LINK}>m</a></p>\n'),
        (
            "<https://auto.example>",
            f'<p><a href="https://auto.example" {LINK}>https://auto.example</a></p>\n',
        ),
        ("[rel](foo/bar) [frag](#x)", f"<p><a {LINK}>rel</a> <a {LINK}>frag</a></p>\n"),
        (
            '[t](https://x.org "a \\"title\\"")',
            f'<p><a href="https://x.org" title="a &quot;title&quot;" {LINK}>t</a></p>\n',
        ),
        # dangerous links are not links at all
        ("[x](javascript:alert(1))", "<p>[x](javascript:alert(1))</p>\n"),
        ("<javascript:alert(1)>", "<p>&lt;javascript:alert(1)&gt;</p>\n"),
        # images become links and are never loaded
        (
            '![alt *t*](https://i.example/x.png "T")',
            f'<p><a class="lion-img-link" href="https://i.example/x.png" title="T" {LINK}>'
            "[image: alt t]</a></p>\n",
        ),
        ("![](data:image/png;base64,AA)", f'<p><a class="lion-img-link" {LINK}>[image]</a></p>\n'),
        ("    indented <b>\n", '<pre class="lion-code"><code>indented &lt;b&gt;\n</code></pre>\n'),
        (
            "```nosuchlang\n<b>x</b>\n```",
            '<pre class="lion-code"><code>&lt;b&gt;x&lt;/b&gt;\n</code></pre>\n',
        ),
        ('```"><script>\nx\n```', '<pre class="lion-code"><code>x\n</code></pre>\n'),
        ("", ""),
    ],
)
def test_render(source: str, expected: str) -> None:
    assert render_markdown(source) == expected


def test_table_alignment_uses_classes_not_styles() -> None:
    out = render_markdown("| a | b | c |\n|:-|:-:|-:|\n| 1 | 2 | 3 |")
    assert '<th class="lion-al-left">a</th>' in out
    assert '<th class="lion-al-center">b</th>' in out
    assert '<td class="lion-al-right">3</td>' in out
    assert "style" not in out


def test_code_fence_is_highlighted_with_classes_only() -> None:
    out = render_markdown("```python\ndef f(x):\n\n    return x < 1\n```")
    assert out.startswith('<pre class="lion-code"><code><span class="k">def</span>')
    assert '<span class="nf">f</span>' in out
    assert '<span class="o">&lt;</span>' in out
    assert "\n\n" in out  # the blank line inside the block survives
    assert "style=" not in out
    # language names are matched case-insensitively; odd ones fall back to plain text
    assert '<span class="k">def</span>' in render_markdown("```Python\ndef f(): pass\n```")
    assert render_markdown("```py{evil}\n<x>\n```") == (
        '<pre class="lion-code"><code>&lt;x&gt;\n</code></pre>\n'
    )


def test_sanitizer_allow_list() -> None:
    assert sanitize_html('<p style="color:red" onclick="x" class="y">t</p>') == "<p>t</p>"
    assert sanitize_html("<script>alert(1)</script><style>p{}</style>ok") == "ok"
    assert sanitize_html('<img src="https://x/y.png">') == ""
    assert sanitize_html('<span class="k evil">x</span>') == '<span class="k">x</span>'
    assert sanitize_html('<a href="javascript:alert(1)">x</a>') == f"<a {LINK}>x</a>"
    assert sanitize_html('<a href="data:text/html,x">x</a>') == f"<a {LINK}>x</a>"
    assert sanitize_html('<iframe src="https://x"></iframe><svg onload=x></svg>z') == "z"


# ----- streaming: MarkdownStream -------------------------------------------------------------
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


def test_the_stream_knows_the_length_of_its_tail() -> None:
    stream = MarkdownStream()
    stream.feed("```\ncode")  # an open fence: nothing freezes
    assert stream.tail_chars == len("```\ncode")
    stream.feed(" more\nline")
    assert stream.tail_chars == len("```\ncode more\nline")
    stream.finish()
    assert stream.tail_chars == 0


def test_warm_up_loads_the_python_lexer_a_first_code_block_uses():
    from lion_nb.render.markdown import _lexer, warm_up

    _lexer.cache_clear()
    warm_up.cache_clear()
    warm_up()
    before = _lexer.cache_info()
    assert before.currsize == 1
    render_markdown("```python\nprint(1)\n```\n")
    after = _lexer.cache_info()
    assert after.hits == before.hits + 1 and after.misses == before.misses  # loaded already
