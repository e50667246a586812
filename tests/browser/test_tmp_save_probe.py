import time

import pytest

from tests.browser.conftest import run_notebook_in_lab, shutdown_kernels, write_notebook

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(240)]


@pytest.mark.parametrize("cells", [["x = 1\nx"], ["import ipywidgets\nipywidgets.HTML('hi')"]])
def test_probe(page, jupyter_lab, cells):
    nb = write_notebook(jupyter_lab, "probe.ipynb", cells)
    run_notebook_in_lab(page, jupyter_lab, nb)
    time.sleep(3)
    page.locator(".jp-Notebook >> visible=true").first.click()
    page.keyboard.press("Escape")
    t0 = time.monotonic()
    page.keyboard.press("Control+s")
    while time.monotonic() - t0 < 90:
        if '"outputs": []' not in (jupyter_lab.root / nb).read_text():
            break
        time.sleep(0.25)
    print("SAVED after", round(time.monotonic() - t0, 1))
    shutdown_kernels(jupyter_lab)
