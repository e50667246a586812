"""The tree of what could have been in Voilà: Voilà runs the notebook, then draws its views,
so the tree a Sample ×5 made comes from the synced state (``tree_state``), not from ops. In a
module of its own: Voilà's page comes from another playwright instance than JupyterLab's
(``front_page``), and one module keeps one (tests/browser/conftest.py).
"""

from __future__ import annotations

import pytest

from tests.browser.test_front_ends_browser import write_ipynb
from tests.browser.test_reply_tree_browser import SETUP
from tests.support.front_ends import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]


VOILA_SAMPLE = """
await view.asend("Tell me about the sea")
await view.asample(5)
"""


def test_voila_draws_the_tree_the_notebook_made(front_page, voila_root, voila):
    """Voilà draws the views after the notebook ran: the tree comes from the synced state."""
    write_ipynb(voila_root / "reply_tree.ipynb", [SETUP, VOILA_SAMPLE])
    front_page.goto(voila.url("voila/render/reply_tree.ipynb"))
    tree = front_page.locator(".lion-rtree-live")
    tree.locator(".lion-rtree-end").nth(5).wait_for(timeout=120_000)
    assert tree.locator(".lion-rtree-end").count() == 6
    assert "6 replies · merged by tokens" in tree.locator(".lion-rtree-meta").inner_text()
    shown = tree.locator("[role=treeitem][aria-selected=true] .lion-rtree-shown")
    assert shown.inner_text() == "sample 1/5 · shown"
    screenshot(front_page, "reply_tree_voila")
    assert front_page.watched.dialogs == []
