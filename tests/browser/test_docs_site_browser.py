"""The docs site (``make docs`` → ``site/``) tested like a view: every page opened in chromium
with every request off the loopback host blocked, over http and from ``file://``.

Checked: no page fails to load anything or logs an error, no page asks for anything outside the
site, each tutorial shows its views' static transcripts (chat messages, the grid's cells, the
token chips — never "Loading widget…"), the API page names every ``lion_nb.__all__`` name with
its docstring's first line, and search finds ``fit_context``, served or opened as a file.

``make test`` builds the site before pytest; run alone, the module builds it when missing.
"""

from __future__ import annotations

import functools
import http.server
import inspect
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.front_ends import watched_page

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "site"

# What each tutorial's views must show in the page (CSS selector → what it is).
TRANSCRIPTS = {
    "01_quickstart": {".lion-msg": "the chat view's messages"},
    "02_streaming_run": {".lion-msg": "the streamed run's messages"},
    "03_react_rounds": {".lion-round": "the ReAct rounds"},
    "05_progression_and_forks": {".lion-msg": "the chat view's messages"},
    "10_tokens": {".lion-tok": "the token view's tokens", ".lion-pt": "what the model read"},
    "11_grid": {".lion-grid-table td": "the grid's cells"},
}
NEVER_SHOWN = ("Loading widget", "Error displaying widget", "Model not found")


@pytest.fixture(scope="module")
def site() -> Path:
    # run alone: build it (make test builds it first) — also over a site built with
    # `docs/build.py --no-execute`, whose tutorials have no outputs to test
    quickstart = SITE / "tutorials" / "01_quickstart.html"
    if not quickstart.is_file() or 'class="nb-output"' not in quickstart.read_text("utf-8"):
        subprocess.run([sys.executable, str(ROOT / "docs" / "build.py")], cwd=ROOT, check=True)
    return SITE


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    """``site/`` over http on a free loopback port."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def site_page(plain_browser: Any) -> Iterator[Any]:
    """A watched page (requests off 127.0.0.1 aborted and recorded) that also records failed
    requests and error responses, and lets ``file://`` through."""
    with watched_page(plain_browser) as page:
        page.failures = []
        page.on("requestfailed", lambda r: page.failures.append(f"{r.url}: {r.failure}"))
        page.on(
            "response",
            lambda r: r.status >= 400 and page.failures.append(f"{r.url}: HTTP {r.status}"),
        )
        page.route(
            "**/*",
            lambda route: (
                route.continue_() if route.request.url.startswith("file:") else route.fallback()
            ),
        )
        yield page


def pages(site: Path) -> list[str]:
    return sorted(str(p.relative_to(site)) for p in site.rglob("*.html"))


def test_the_site_has_a_page_per_notebook_concept_and_module(site: Path):
    built = pages(site)
    notebooks = sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert [f"tutorials/{n}.html" for n in notebooks] == [
        p for p in built if p.startswith("tutorials/")
    ]
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        import public_api
    finally:
        sys.path.remove(str(ROOT / "docs"))
    for module in public_api.PUBLIC_MODULES:
        assert f"reference/{module}.html" in built
    for section in ("concepts", "how-to"):
        assert any(p.startswith(f"{section}/") for p in built), section
    for page in ("index.html", "performance.html", "changelog.html", "security.html"):
        assert page in built
    assert (site / "search" / "search_index.json").is_file()


def test_no_page_loads_anything_from_outside_the_site(site: Path):
    """No ``<script src>``, ``<link>`` (stylesheet, icon, font, preload), image or frame from
    another host, in any page."""
    remote = re.compile(
        r"<(?:script|img|iframe|source)\b[^>]*\bsrc=[\"'](?:https?:)?//[^>]*>"
        r"|<link\b[^>]*\bhref=[\"'](?:https?:)?//[^>]*>",
        re.IGNORECASE,
    )
    offenders = {}
    for page in pages(site):
        found = remote.findall((site / page).read_text(encoding="utf-8"))
        if found:
            offenders[page] = found[:3]
    assert not offenders, offenders
    css_urls = re.compile(r"url\(\s*[\"']?(?:https?:)?//")
    for sheet in site.rglob("*.css"):
        assert not css_urls.search(sheet.read_text(encoding="utf-8")), sheet


@pytest.mark.timeout(600)
def test_every_page_opens_with_the_network_blocked(site: Path, served: str, site_page: Any):
    problems = {}
    for page in pages(site):
        site_page.goto(f"{served}/{page}", wait_until="load")
        site_page.wait_for_load_state("networkidle")
        seen = (
            site_page.failures
            + site_page.watched.external_requests
            + site_page.watched.console_errors
            + site_page.watched.dialogs
        )
        if seen and page != "404.html":
            problems[page] = list(seen)
        for log in (
            site_page.failures,
            site_page.watched.external_requests,
            site_page.watched.console_errors,
            site_page.watched.dialogs,
        ):
            log.clear()
    assert not problems, problems


@pytest.mark.parametrize("tutorial", sorted(TRANSCRIPTS))
def test_tutorials_show_their_views_transcripts(served: str, site_page: Any, tutorial: str):
    site_page.goto(f"{served}/tutorials/{tutorial}.html", wait_until="load")
    for selector, what in TRANSCRIPTS[tutorial].items():
        shown = site_page.locator(f".nb-output {selector}")
        assert shown.count() > 0, f"{tutorial}: no {what} ({selector}) in the page"
        assert shown.first.is_visible(), f"{tutorial}: {what} are in the page but not visible"
    text = site_page.locator("article").inner_text()
    for bad in NEVER_SHOWN:
        assert bad not in text, f"{tutorial} shows {bad!r}"


def test_every_tutorial_page_shows_outputs_and_no_widget_placeholder(site: Path):
    for page in sorted((site / "tutorials").glob("*.html")):
        html = page.read_text(encoding="utf-8")
        assert 'class="nb-output"' in html or "```text" not in html, page.name
        for bad in NEVER_SHOWN:
            assert bad not in html, (page.name, bad)
        assert "application/vnd.jupyter.widget-view+json" not in html, page.name
        assert re.search(r"\b\w+View\(\s*(?:layout|children|_model)", html) is None, page.name


def test_the_api_page_names_every_exported_name_with_its_docstring(site: Path):
    import lion_nb

    html = (site / "reference" / "lion_nb.html").read_text(encoding="utf-8")
    text = re.sub(r"<[^>]+>", "", html)
    text = re.sub(r"\s+", " ", text)
    missing = []
    for name in lion_nb.__all__:
        obj = getattr(lion_nb, name)
        if name == "__version__":
            continue
        first_words = " ".join(re.sub(r"[`*]", "", (inspect.getdoc(obj) or "")).split()[:4])
        if name not in text or first_words not in text:
            missing.append((name, first_words))
    assert not missing, missing


def _search(page: Any, query: str) -> list[str]:
    page.locator("label.md-search__icon, .md-search__input").first.click()
    # typed key by key: the search box answers keystrokes, as a person types
    page.locator(".md-search__input").press_sequentially(query, delay=30)
    # each keystroke asks the search worker again: wait for the answer to the whole query, then
    # read the list in one look (a later answer may redraw it between two reads)
    results = page.locator(".md-search-result__item")
    results.filter(has_text=query).first.wait_for(state="attached", timeout=30_000)
    return results.evaluate_all("els => els.slice(0, 10).map((e) => e.innerText)")


def test_search_finds_fit_context_served(served: str, site_page: Any):
    site_page.goto(f"{served}/index.html", wait_until="load")
    found = _search(site_page, "fit_context")
    assert any("fit_context" in item for item in found), found
    assert not site_page.watched.external_requests


def test_search_finds_fit_context_from_a_file(site: Path, site_page: Any):
    """Opened from a file manager: no server, so no Web Worker; the site's own shim runs the
    search in a frame (docs/javascripts/iframe-worker-file.js), nothing from a CDN."""
    site_page.goto((site / "index.html").as_uri(), wait_until="load")
    found = _search(site_page, "fit_context")
    assert any("fit_context" in item for item in found), found
    assert not site_page.watched.external_requests
    assert not site_page.watched.console_errors, site_page.watched.console_errors


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_transcripts_follow_the_site_theme_and_read_in_both(
    served: str, site_page: Any, scheme: str
):
    """The transcripts take the site palette's colours (Light or Dark, as the reader's system
    asks on a first visit), and every text in them reads at WCAG AA on what it is drawn on."""
    from tests.support.page_measure import contrast_failures

    site_page.emulate_media(color_scheme=scheme)
    expected = {"light": "default", "dark": "slate"}[scheme]
    for tutorial in ("01_quickstart", "10_tokens", "11_grid"):
        site_page.goto(f"{served}/tutorials/{tutorial}.html", wait_until="load")
        assert site_page.get_attribute("body", "data-md-color-scheme") == expected
        views = site_page.locator(".nb-output:has([class^='lion-'])")
        assert views.count() > 0, tutorial
        for i in range(views.count()):
            texts, failures = contrast_failures(site_page, views.nth(i))
            assert texts > 0 and not failures, (tutorial, i, failures[:5])
