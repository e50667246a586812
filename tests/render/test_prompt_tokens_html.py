"""The prompt as the model reads it, as static HTML (``render/prompt_tokens_html.py``): a chip
per token tinted by its message's role, scaffolding neutral, special tokens outlined with their
text, each message's chips in a group named for it, a legend and the count against the window."""

from __future__ import annotations

import re

from lion_nb.models.prompt_tokens import PromptToken
from lion_nb.render.prompt_tokens_html import (
    count_text,
    prompt_note_html,
    prompt_tokens_html,
    role_class,
)
from tests.support.html_tree import parse

SMOL = [  # SmolLM2's template of [system "Be brief.", user "Hi <b>", user "Again"]
    PromptToken("<|im_start|>", 1, True, None),
    PromptToken("system", 9690, False, None),
    PromptToken("\n", 198, False, None),
    PromptToken("Be", 4387, False, 0),
    PromptToken(" brief.", 4541, False, 0),
    PromptToken("<|im_end|>", 2, True, None),
    PromptToken("\n", 198, False, None),
    PromptToken("<|im_start|>", 1, True, None),
    PromptToken("user", 4093, False, None),
    PromptToken("\n", 198, False, None),
    PromptToken("Hi <b>", 9000, False, 1),
    PromptToken("<|im_end|>", 2, True, None),
    PromptToken("<|im_start|>", 1, True, None),
    PromptToken("user\n", 4093, False, None),
    PromptToken("Again", 9001, False, 2),
    PromptToken("<|im_end|>", 2, True, None),
]
ROLES = ["system", "user", "user"]


def chips(html: str) -> list[tuple[str, str]]:
    """(class, text) of each token chip, in order."""
    return re.findall(r'<span class="(lion-pt [^"]*)" data-i="\d+"[^>]*>([^<]*)</span>', html)


def test_every_token_is_a_chip_tinted_by_its_messages_role() -> None:
    html = prompt_tokens_html(SMOL, ROLES, window=8192)
    found = chips(html)
    assert len(found) == len(SMOL)
    classes = [c for c, _ in found]
    assert "lion-pt-system" in classes[3] and "lion-pt-system" in classes[4]
    assert "lion-pt-user" in classes[10] and "lion-pt-user" in classes[14]
    for i, token in enumerate(SMOL):
        if token.message is None:
            assert "lion-pt-none" in classes[i], i  # the template's scaffolding: neutral
    # two messages of one role in a row: the second in the stronger step of its hue
    assert "lion-pt-alt" not in classes[10] and "lion-pt-alt" in classes[14]


def test_special_tokens_are_marked_and_show_their_text() -> None:
    found = chips(prompt_tokens_html(SMOL, ROLES))
    special = [(c, t) for c, t in found if "lion-pt-special" in c]
    assert [t for _, t in special] == [
        "&lt;|im_start|&gt;",
        "&lt;|im_end|&gt;",
        "&lt;|im_start|&gt;",
        "&lt;|im_end|&gt;",
        "&lt;|im_start|&gt;",
        "&lt;|im_end|&gt;",
    ]
    assert all("lion-pt-special" not in c for c, t in found if "im_" not in t)


def test_model_text_is_escaped_and_whitespace_is_visible() -> None:
    html = prompt_tokens_html(SMOL, ROLES)
    assert "<b>" not in html and "Hi &lt;b&gt;" in html
    assert ">↵</span><br>" in html  # a line break shows as ↵ and breaks the chip's line
    assert ">user↵</span><br>" in html
    assert ">∅</span>" in prompt_tokens_html([PromptToken("", 5, False, 0)], ["user"])


def test_each_message_is_a_named_group_and_the_legend_names_the_tints() -> None:
    tree = parse(prompt_tokens_html(SMOL, ROLES, window=8192))
    groups = [el.attrs.get("aria-label") for el in tree.find_all(cls="lion-pt-msg")]
    assert groups[:3] == ["Template scaffolding", "Message 1 · system", "Template scaffolding"]
    assert "Message 2 · user" in groups and "Message 3 · user" in groups
    legend = tree.find_all(cls="lion-read-legend")[0]
    assert legend.attrs["role"] == "list" and legend.attrs["aria-label"] == "Legend"
    assert [el.text() for el in legend.find_all(cls="lion-pt")] == [
        "system",
        "user",
        "template",
        "special token",
    ]
    region = tree.find_all(cls="lion-read")[0]
    assert region.attrs["role"] == "region" and region.attrs["aria-label"] == "What the model read"


def test_the_count_is_against_the_models_window() -> None:
    assert count_text(1234, 8192) == "1,234 of 8,192 tokens"
    assert count_text(1, None) == "1 token"
    assert count_text(9000, 8192) == "9,000 of 8,192 tokens — 808 more than the window holds"
    assert "16 of 8,192 tokens" in prompt_tokens_html(SMOL, ROLES, window=8192)
    assert "16 tokens" in prompt_tokens_html(SMOL, ROLES)


def test_roles_outside_the_palette_share_one_tint() -> None:
    assert role_class("user") == "lion-pt-user"
    assert role_class("developer") == "lion-pt-other"
    assert role_class(None) == "lion-pt-none"
    html = prompt_tokens_html([PromptToken("x", 1, False, 0)], [])  # roles not known
    assert "Message 1 · message" in html


def test_the_note_says_why_there_are_no_tokens() -> None:
    html = prompt_note_html("This model cannot show what it read. <use the local one>")
    assert "lion-read-note" in html and "&lt;use the local one&gt;" in html
    assert 'role="status"' in html
