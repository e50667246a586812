"""Notebook 10, the tokens lesson, presented in Voilà (as a teacher would): it runs from its
shipped cassette, and its views are drawn — what the model read, the reply's tokens, the tree of
the five samples — with no error on the page. In a module of its own: Voilà's page comes from
another playwright instance than JupyterLab's (tests/browser/conftest.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.front_ends import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def test_voila_presents_the_tokens_lesson(front_page, voila_root, voila):
    lesson = voila_root / "lesson"
    (lesson / "data").mkdir(parents=True)
    shutil.copy(NOTEBOOKS / "10_tokens.ipynb", lesson)
    shutil.copy(NOTEBOOKS / "data" / "10_tokens.cassette.jsonl", lesson / "data")
    front_page.goto(voila.url("voila/render/lesson/10_tokens.ipynb"))

    tree = front_page.locator(".lion-rtree-live")
    tree.locator(".lion-rtree-end").nth(5).wait_for(timeout=180_000)
    assert "6 replies · merged by tokens" in tree.locator(".lion-rtree-meta").inner_text()

    read = front_page.locator(".lion-read").first
    chips = read.locator(".lion-pt-msg .lion-pt")  # the legend's swatches aside
    chips.nth(26).wait_for(timeout=30_000)
    assert chips.count() == 27  # the 27 tokens the lesson prints
    assert read.locator(".lion-pt-msg .lion-pt-special").count() == 5
    assert "27 of 2,048 tokens" in read.inner_text()

    page_text = front_page.locator("body").inner_text()
    assert "survivors: 3 with llama.cpp's order, 5 with temperature first" in page_text
    assert "Traceback" not in page_text and "Error" not in page_text
    screenshot(front_page, "lesson_voila")
    assert front_page.watched.dialogs == []
