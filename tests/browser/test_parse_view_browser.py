"""``ParseView(result)`` of a finished result in JupyterLab: the page draws the tree the kernel
holds (it used to get an empty synced state: the view's state was set after its comm opened,
without an update message, and the ops sent before the page drew the view were lost)."""

from __future__ import annotations

import pytest

from tests.support.front_ends import screenshot
from tests.support.lab_notebooks import run_notebook_in_lab, shutdown_kernels, write_notebook

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(240)]

MODELS = """
from pydantic import BaseModel
from lion_nb.widgets.parse_view import ParseView

class Ingredient(BaseModel):
    name: str
    grams: int

class Recipe(BaseModel):
    title: str
    minutes: int
    ingredients: list[Ingredient]

recipe = Recipe(title="PARSE-RESULT-MARK soup", minutes=35,
                ingredients=[Ingredient(name="tomatoes", grams=800),
                             Ingredient(name="onion", grams=150)])
"""


@pytest.fixture(autouse=True)
def _no_kernels_left(jupyter_lab):
    yield
    shutdown_kernels(jupyter_lab)


def test_parse_view_of_a_result_shows_its_tree(page, jupyter_lab):
    nb = write_notebook(jupyter_lab, "parse_result.ipynb", [MODELS, "ParseView(recipe)"])
    run_notebook_in_lab(page, jupyter_lab, nb)
    view = page.locator(".lion-parse")
    view.first.wait_for(timeout=60_000)
    view.locator("tr.lion-parse-row").first.wait_for(timeout=30_000)
    text = view.inner_text()
    assert "PARSE-RESULT-MARK soup" in text
    assert "tomatoes" in text and "onion" in text
    # title, minutes, ingredients, 2 x (ingredient, name, grams)
    assert view.locator("tr.lion-parse-row").count() == 3 + 2 * 3
    assert "lion-parse-valid" in view.inner_html()
    screenshot(page, "parse_view_result")
    assert page.watched.dialogs == [] and page.watched.external_requests == []
