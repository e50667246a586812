"""render_markdown: CommonMark + tables, pygments fences, nh3 allow-list."""

from __future__ import annotations

import pytest

from lion_nb.render.markdown import render_markdown, sanitize_html

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
