"""render.preview: Markdown read as plain text for one-line previews."""

from __future__ import annotations

from lion_nb.render.preview import markdown_plain, plain_preview


def test_markdown_markup_is_not_in_the_plain_text() -> None:
    text = (
        "## Step 176\n\nHere is **the** _code_ and `x = 1`:\n\n```python\nprint(1)\n```\n\n"
        "- a [link](https://example.org) ~~gone~~\n- ![a chart](https://example.org/c.png)\n\n"
        "| a | b |\n|---|---|\n| 1 | 2 |\n\n> quoted\n\n    indented code\n"
    )
    assert markdown_plain(text) == (
        "Step 176 Here is the code and x = 1: print(1) a link gone [image: a chart] "
        "a b 1 2 quoted indented code"
    )


def test_raw_html_and_entities_stay_text() -> None:
    # html=False as in render.markdown: tags are text (escaped later), entities decoded
    assert markdown_plain("<b>hi</b> &amp; 1 < 2") == "<b>hi</b> & 1 < 2"


def test_a_preview_is_cut_to_its_limit() -> None:
    assert plain_preview("# Title\n\nshort", 110) == "Title short"
    long = "**word** " * 400
    preview = plain_preview(long, 50)
    assert len(preview) == 50 and preview.endswith("…") and "*" not in preview
    # only a prefix is parsed: a long text whose start reads short still says it goes on
    text = "hi\n\n[ref]: https://example.org/" + "a" * 500 + "\n\nmore text after it"
    assert plain_preview(text, 20) == "hi…"
