"""In a real browser: every hostile payload of the corpus, through every view, executes
nothing in chromium.

One notebook puts each payload of ``tests/fixtures/xss_corpus.json`` (plus sentinel payloads
that would set ``window.__pwned`` or fetch a ``pwned-*`` URL) everywhere model text can reach:

- ``BranchView`` over messages of every role (system text, instruction / guidance / context,
  assistant Markdown, thinking, parse results, usage labels, tool names, arguments, outputs,
  errors), plus a reply streamed live (text, thinking and tool-argument deltas, so the live
  Markdown tail is exercised) and the prompt shown while it is pending;
- ``ProgressionInspector`` with every row on one page, payload messages expanded and their
  "what the model saw" JSON open;
- ``ReActRoundsView`` filled live by a ReAct run whose analysis, tool arguments, tool outputs
  and answer are payloads;
- ``ParseView`` filled live from a streamed structured reply (payload values and keys), its
  repair round (raw payload text), and a static one with per-field errors keyed by payloads;
- ``CompareView`` of two branches differing in payload turns;
- the Branch's own ``_repr_html_`` and ``export_markdown`` shown as a Markdown output.

It runs in JupyterLab (``test_every_view_in_jupyterlab_executes_nothing``); the same notebook
executed with nbclient, converted with ``jupyter nbconvert --to html`` (with and without widget
state) and served from a loopback server (``test_static_fallback_...``), and the pages written by
``lion_nb.export.export_html`` (``test_export_html_...``) are opened in chromium too.

"Nothing executes" means: no dialog (the corpus calls ``alert``), ``window.__pwned`` still
``false`` (set by an init script in every frame before anything runs), no console message from
a payload, no request to another origin and none to a payload URL on the server's own origin
(relative ``src``/``url()`` payloads would hit it), and no element or attribute outside the
renderers' vocabulary in the rendered model content. Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import copy
import functools
import http.server
import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from tests.support.front_ends import screenshot
from tests.support.lab_notebooks import run_notebook_in_lab, shutdown_kernels, write_notebook


def in_browser(test: Any) -> Any:
    return pytest.mark.browser(pytest.mark.slow(pytest.mark.timeout(300)(test)))


CORPUS = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures" / "xss_corpus.json").read_text()
)
# Sentinels: each would leave a trace (window.__pwned, a console message, a request whose
# URL contains "pwned") if it ran or loaded.
SENTINELS = [
    "<img src=x onerror=\"window.__pwned='img'\">",
    "<script>window.__pwned='script'</script>",
    "<svg onload=\"window.__pwned='svg'\"></svg>",
    "<details open ontoggle=\"window.__pwned='toggle'\"><summary>t</summary>x</details>",
    "<iframe srcdoc=\"<script>parent.__pwned='iframe'</script>\"></iframe>",
    "<video src=x autoplay onerror=\"window.__pwned='video'\"></video>",
    "<audio src=x onerror=\"window.__pwned='audio'\"></audio>",
    "<input autofocus onfocus=\"window.__pwned='focus'\">",
    "<marquee onstart=\"window.__pwned='marquee'\">m</marquee>",
    "<body onpageshow=\"window.__pwned='body'\">",
    "<img src=x onerror=\"console.error('PWNED-CONSOLE')\">",
    "<img src=x onerror=\"fetch('/pwned-fetch')\">",
    '<img src="pwned-relative.png">',
    '<img srcset="pwned-srcset.png 1x">',
    '<div style="background:url(/pwned-css.png)">css</div>',
    '<style>@import "pwned-import.css"; .jp-Notebook{display:none}</style>',
    '<link rel="stylesheet" href="pwned-link.css">',
    '<object data="pwned-object.html"></object>',
    "![pwned](pwned-md-image.png)",
    "<a href=\"javascript:window.__pwned='link'\">click</a>",
    "<form><button formaction=\"javascript:window.__pwned='form'\">go</button></form>",
]
# alert(1) becomes alert(1000 + i) (same syntax, digits only) so a dialog names its payload
PAYLOADS = [c["payload"].replace("alert(1)", f"alert({1000 + i})") for i, c in enumerate(CORPUS)]
PAYLOADS += SENTINELS


def payload_name(dialog: str) -> str:
    """ "alert: 1017" -> the corpus entry it came from."""
    m = re.search(r"\b1(\d{3})\b", dialog)
    return CORPUS[int(m[1])]["name"] if m and int(m[1]) < len(CORPUS) else dialog


def wait_for_text(node: Any, text: str, timeout: float = 60.0) -> str:
    """The node's text once it contains ``text`` (or what it shows after ``timeout`` s)."""
    deadline = time.monotonic() + timeout
    shown = node.text_content() or ""
    while text not in shown and time.monotonic() < deadline:
        time.sleep(0.2)
        shown = node.text_content() or ""
    return shown


DONE = "ALL-VIEWS-RENDERED"
MARK = "onerror=\"window.__pwned='img'\""  # the first sentinel, as text a reader sees

CELLS = [
    # 0: payloads and helpers
    """
import json, asyncio
from pathlib import Path
from pydantic import BaseModel, ValidationError
from lion_nb import Branch, BranchView, Session, iModel
from lion_nb.messages import ActionRequest, ActionResponse, AssistantResponse, Instruction
from lion_nb.widgets.inspector import ProgressionInspector
from lion_nb.widgets.rounds_view import ReActRoundsView
from lion_nb.widgets.parse_view import ParseView
from lion_nb.widgets.compare_view import CompareView
from lion_nb.export import export_html, export_markdown

P = json.loads(Path("xss_payloads.json").read_text())
JOINED = "\\n\\n".join(P)

def groups(items, n=12):
    return [items[i:i + n] for i in range(0, len(items), n)]

def pieces(text, n=7):  # small deltas: tags and links arrive split across them
    return [text[i:i + n] for i in range(0, len(text), n)]
""",
    # 1: a branch holding every role, each carrying payloads, in a live chat view
    """
session = Session()
roles = session.new_branch(system=JOINED, name="roles <img src=x onerror=alert(1)>")
for i, p in enumerate(P):
    roles.add_message(Instruction(instruction=p, guidance=p, context=[p, {"k": p}]))
    roles.add_message(AssistantResponse(response=p, metadata={
        "thinking": p, "model": p, "result": {"field": p, p[:30]: [p]},
        "usage": {"input_tokens": i, "output_tokens": 1}}))
for g in groups(P):
    roles.add_message(ActionRequest(function=g[0], arguments={p: p for p in g}, call_id=g[1]))
    roles.add_message(ActionResponse(function=g[0], arguments={"q": g}, output="\\n".join(g),
                                     is_error=True))
    roles.add_message(ActionResponse(function="tool", output={"html": g, "first": g[0]}))
roles.chat_model = iModel(provider="scripted", replies=[{
    "chunks": pieces(JOINED), "thinking": JOINED, "delay": 0,
    "tool_calls": [{"name": P[4], "arguments": {"a": JOINED}}]}])
chat = BranchView(roles, title=P[0], height=700)
chat
""",
    # 2: a reply streamed live into the view (the prompt is shown while pending)
    "await chat.asend(JOINED)",
    # 3: the inspector, every row on one page, payload rows expanded
    """
inspector = ProgressionInspector(roles, page_size=len(roles.messages) + 10, title=P[1])
for index in (0, 1, 2, 3, len(roles.messages) - 2, len(roles.messages) - 1):
    inspector.toggle(index)
inspector.toggle(len(P) * 2 + 1)  # an action request
inspector.toggle(len(P) * 2 + 2)  # its error response
inspector
""",
    # 4: ReAct rounds filled in live
    '''
def echo(text: str) -> str:
    """Return the text."""
    return text

rb = Branch(system=P[2], name="react", tools=[echo], chat_model=iModel(
    provider="scripted", replies=[
        {"json": {"analysis": JOINED, "extension_needed": True,
                  "action_requests": [{"function": "echo", "arguments": {"text": "\\n".join(g)}}
                                      for g in groups(P)]}},
        {"json": {"analysis": JOINED, "extension_needed": False}},
        {"json": {"answer": JOINED}},
    ]))
rounds = ReActRoundsView(rb, title=P[3])
display(rounds)
await rb.ReAct(JOINED, max_extensions=2)
''',
    # 5: parse views: live with a repair round, and static with per-field errors
    """
class Hostile(BaseModel):
    title: str
    notes: list[str]
    attrs: dict[str, str]
    count: int = 0

good = {"title": JOINED, "notes": P, "attrs": {p: p for p in P}, "count": 1}
bad = {**good, "count": P[0]}
pb = Branch(name="parse", chat_model=iModel(provider="scripted", replies=[
    {"chunks": pieces(json.dumps(bad), 40), "delay": 0},
    {"chunks": pieces(json.dumps(good), 40), "delay": 0}]))
live_parse = ParseView(Hostile, branch=pb, title=P[5])
display(live_parse)
await pb.communicate(JOINED, response_format=Hostile)

class Counts(BaseModel):
    counts: dict[str, int]

try:
    Counts.model_validate({"counts": {p: p for p in P}})
except ValidationError as exc:
    errors = exc
ParseView({"counts": {p: p for p in P}}, errors=errors,
          attempts=[{"attempt": 0, "ok": False, "raw": JOINED, "errors": [], "target": P[6]}])
""",
    # 6: compare two branches that differ in payload turns
    """
left = session.new_branch(system=P[7], name=P[8])
right = session.new_branch(system=P[9], name=P[10])
for i, p in enumerate(P):
    left.add_message(Instruction(instruction=p))
    left.add_message(AssistantResponse(response=p))
    right.add_message(Instruction(instruction=p))
    right.add_message(AssistantResponse(response=P[-1 - i]))
CompareView(left, right)
""",
    # 7: the static transcript repr and the Markdown export as a Markdown output
    """
display({"text/markdown": export_markdown(rb)}, raw=True)
roles
""",
    # 8: the self-contained HTML exports (opened by test_export_html_...)
    """
for name, b in {"roles": roles, "react": rb, "parse": pb, "left": left}.items():
    Path(f"export_{name}.html").write_text(export_html(b), encoding="utf-8")
print("ALL-VIEWS" + "-RENDERED")
""",
]

# ----- what a page may and may not do ---------------------------------------------------------
# Runs in every frame before the page's own scripts: the sentinel, and dialogs that also record
# where the code calling them sits (a script element's or an event target's container).
INIT_SCRIPT = """
window.__pwned = false;
window.__ran = [];
for (const name of ['alert', 'confirm', 'prompt', 'print']) {
    const original = window[name];
    window[name] = function (...args) {
        const node = document.currentScript || (window.event && window.event.target);
        let where = 'unknown';
        if (node && node.closest) {
            const box = node.closest('.jp-OutputArea-output, .widget-html-content, .jp-Cell');
            const cell = node.closest('.jp-Cell');
            where = (box ? box.className : node.tagName) + (cell ? ' / cell ' +
                [...cell.parentElement.children].indexOf(cell) : '');
        }
        window.__ran.push(name + '(' + args.join(',') + ') from ' + where);
        return original.apply(this, args);
    };
}
"""
TAGS = {
    "a", "blockquote", "br", "code", "del", "details", "div", "em", "h1", "h2", "h3", "h4",
    "h5", "h6", "hr", "ins", "li", "ol", "p", "pre", "s", "span", "strong", "summary", "table",
    "tbody", "td", "th", "thead", "time", "tr", "ul", "style", "caption", "col", "colgroup",
    "tfoot", "sup", "sub", "kbd", "b", "i", "small",
}  # fmt: skip
ATTRS = {
    "class", "title", "href", "target", "rel", "start", "open", "lang", "datetime", "colspan",
    "rowspan", "align", "scope",
}  # fmt: skip
PAYLOAD_URL = re.compile(r"pwned|evil\.example|tracker\.example|img\.example|ok\.example", re.I)

# Rendered model content: HTML widget values, HTML outputs, Markdown outputs.
CONTENT_ROOTS = ".widget-html-content, .jp-OutputArea-output.jp-RenderedHTMLCommon"
DOM_AUDIT = """([roots, tags, attrs]) => {
    const tagOk = new Set(tags), attrOk = new Set(attrs);
    const found = [];
    const seen = new Set();
    for (const root of document.querySelectorAll(roots)) {
        for (const el of root.querySelectorAll('*')) {  // the container is the host's
            if (seen.has(el)) continue;
            seen.add(el);
            const tag = el.tagName.toLowerCase();
            if (!tagOk.has(tag)) {
                found.push('element <' + tag + '>: ' + el.outerHTML.slice(0, 100));
            }
            if (tag === 'style') {
                const css = el.textContent;
                if (/@import|url\\(|expression\\(|pwned|evil/i.test(css))
                    found.push('style with ' + css.slice(0, 80));
            }
            for (const a of el.attributes) {
                const name = a.name.toLowerCase();
                if (name.startsWith('on')) found.push(tag + ' ' + name);
                else if (!attrOk.has(name) && !name.startsWith('data-')
                         && !(name === 'id' && el.closest('.jp-RenderedMarkdown')))
                    found.push('attribute ' + name + ' on <' + tag + '>');
                if (['href', 'src', 'action', 'formaction', 'xlink:href', 'data', 'srcset',
                     'poster', 'background'].includes(name)) {
                    let scheme = '';
                    try { scheme = new URL(a.value, 'http://relative.invalid/').protocol; }
                    catch (e) { scheme = 'invalid:'; }
                    if (!['http:', 'https:', 'mailto:'].includes(scheme))
                        found.push(tag + ' ' + name + '=' + a.value.slice(0, 60));
                }
            }
        }
    }
    return found;
}"""


class Watch:
    """Everything a page does that a payload could cause."""

    def __init__(self, page: Any, origin: str) -> None:
        self.origin = origin
        self.requests: list[str] = []
        self.console: list[str] = []
        self.phase = "loading"
        self.dialogs: list[str] = []  # (payload, where it ran)
        page.on("request", lambda r: self.requests.append(r.url))
        page.on(
            "dialog", lambda d: self.dialogs.append(f"{payload_name(d.message)} @ {self.phase}")
        )
        page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
        page.add_init_script(INIT_SCRIPT)

    def payload_requests(self, allowed_paths: tuple[str, ...] = ()) -> list[str]:
        bad = []
        for url in self.requests:
            parsed = urlparse(url)
            if url.startswith(("data:", "blob:", "about:")):
                if url.startswith("data:"):
                    bad.append(url[:80])  # no renderer emits data: URLs
                continue
            same = f"{parsed.scheme}://{parsed.netloc}" == self.origin
            if not same or PAYLOAD_URL.search(url):
                bad.append(url)
            elif allowed_paths and not parsed.path.startswith(allowed_paths):
                bad.append(url)
        return bad

    def payload_console(self) -> list[str]:
        return [c for c in self.console if re.search(r"pwned|alert|xss", c, re.I)]


def assert_inert(
    page: Any, watch: Watch, *, allowed_paths: tuple[str, ...] = (), roots: str = CONTENT_ROOTS
) -> None:
    """Everything at once, so one run reports every kind of failure."""
    watch.phase = "opening every <details>"
    # open every <details> (fires any ontoggle that slipped through) and let handlers run
    page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")
    page.mouse.move(300, 300)
    page.mouse.move(600, 500)
    time.sleep(1.5)
    problems: dict[str, Any] = {}
    if watch.dialogs or page.watched.dialogs:
        problems["dialogs"] = watch.dialogs or page.watched.dialogs
        problems["dialogs called from"] = page.evaluate("() => window.__ran || []")
    frames = [f.evaluate("() => typeof window.__pwned === 'undefined' ? null : window.__pwned")
              for f in page.frames]  # fmt: skip
    if frames[0] is not False or any(v not in (False, None) for v in frames):
        problems["window.__pwned (per frame)"] = frames
    if watch.payload_console():
        problems["console"] = watch.payload_console()
    if watch.payload_requests(allowed_paths):
        problems["requests"] = watch.payload_requests(allowed_paths)
    if page.watched.external_requests:
        problems["other origins"] = page.watched.external_requests
    dom = page.evaluate(DOM_AUDIT, [roots, sorted(TAGS), sorted(ATTRS)])
    if dom:
        problems["markup outside the renderers' vocabulary"] = dom[:20]
    assert problems == {}, json.dumps(problems, indent=1)


@pytest.fixture
def _no_kernels_left(jupyter_lab):
    yield
    shutdown_kernels(jupyter_lab)


VIEWS = (".lion-view .lion-transcript", ".lion-inspector", ".lion-rounds", ".lion-parse",
         ".lion-compare")  # fmt: skip
# Paths JupyterLab itself requests on its own origin while opening and running a notebook.
LAB_PATHS = ("/api/", "/lab/api/", "/static/", "/lab/extensions/", "/lsp/", "/kernelspecs/")


@in_browser
@pytest.mark.usefixtures("_no_kernels_left")
def test_every_view_in_jupyterlab_executes_nothing(page, jupyter_lab):
    (jupyter_lab.root / "xss_payloads.json").write_text(json.dumps(PAYLOADS))
    nb = write_notebook(jupyter_lab, "xss_all_views.ipynb", [c.strip() for c in CELLS])
    watch = Watch(page, jupyter_lab.base)
    started = time.monotonic()
    run_notebook_in_lab(page, jupyter_lab, nb)
    watch.requests.clear()  # from here on Lab only talks to its API (the page is loaded)
    watch.phase = "running the notebook"
    page.get_by_text(DONE).wait_for(timeout=180_000)
    page.locator(".lion-compare").first.wait_for(state="attached", timeout=60_000)
    elapsed = time.monotonic() - started
    # each view is on the page, showing payloads as text; scrolled to, so that Lab renders it
    # (its notebook skips rendering off-screen cells) and anything in it gets its chance to run.
    # A view draws its parts when its state and ops arrive, which a busy machine delays: wait
    # for the text rather than read it once.
    for selector in (*VIEWS, ".jp-RenderedMarkdown"):
        watch.phase = selector
        node = page.locator(selector).first
        node.wait_for(state="attached", timeout=60_000)
        node.scroll_into_view_if_needed()
        shown = wait_for_text(node, MARK)
        assert MARK in shown, (selector, shown[:200])
    assert page.locator(".lion-inspector .lion-tl-detail").count() >= 6
    assert page.locator(".lion-inspector details.lion-payload").count() >= 4
    assert page.locator(".lion-rounds .lion-round[data-status='done']").count() == 3
    assert "lion-parse-valid" in page.locator(".lion-parse").first.inner_html()
    payload_json = page.locator(".lion-inspector details.lion-payload").first
    payload_json.locator("summary").click()  # "what the model saw", opened like a reader would
    payload_json.scroll_into_view_if_needed()
    assert "window.__pwned='img'" in payload_json.locator("pre.lion-json").inner_text()
    screenshot(page, "xss_inspector_payload")
    page.locator(".lion-rounds").first.scroll_into_view_if_needed()
    screenshot(page, "xss_rounds")
    # the copy controls of the front end: every message and code block has one; using them
    # (the message text comes from the kernel, code from the DOM) runs nothing either
    watch.phase = "copy controls"
    chat = page.locator(".lion-front.lion-chat").first
    copies = chat.locator(".lion-copy")
    assert chat.locator(".lion-copy-msg").count() == chat.locator(".lion-msg").count()
    for i in range(min(copies.count(), 12)):
        copies.nth(i).scroll_into_view_if_needed()
        copies.nth(i).click()
    time.sleep(1.0)
    assert_inert(page, watch, allowed_paths=LAB_PATHS)
    print(f"JupyterLab: all views rendered in {elapsed:.1f} s")


# ----- without JupyterLab: nbconvert's static HTML and the export ---------------------------
class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def http_root(tmp_path_factory) -> Iterator[tuple[str, Path]]:
    """A directory served by a loopback HTTP server: (base URL, directory)."""
    root = tmp_path_factory.mktemp("xss-static")
    handler = functools.partial(_Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", root
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def served(http_root) -> tuple[str, Path]:
    """The notebook executed headless (nbclient, widget state stored), converted with
    ``jupyter nbconvert --to html`` with and without widget state, and the exports it wrote,
    in the served directory."""
    import nbformat
    from nbclient import NotebookClient

    base, root = http_root
    (root / "xss_payloads.json").write_text(json.dumps(PAYLOADS))
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c.strip()) for c in CELLS]
    started = time.monotonic()
    NotebookClient(
        nb, timeout=180, kernel_name="python3", store_widget_state=True,
        resources={"metadata": {"path": str(root)}},
    ).execute()  # fmt: skip
    executed = time.monotonic() - started
    assert DONE in nb.cells[-1].outputs[0]["text"]
    nbformat.write(nb, root / "with_state.ipynb")
    bare = copy.deepcopy(nb)
    bare.metadata.pop("widgets")
    nbformat.write(bare, root / "no_state.ipynb")
    jupyter = Path(sys.executable).parent / "jupyter"
    converting = [
        subprocess.Popen(
            [str(jupyter), "nbconvert", "--to", "html", f"{name}.ipynb"],
            cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        for name in ("with_state", "no_state")
    ]  # fmt: skip
    for process in converting:
        _, err = process.communicate(timeout=120)
        assert process.returncode == 0, err.decode(errors="replace")[-2000:]
    print(f"nbclient: executed in {executed:.1f} s")
    return base, root


def template_assets(html: str) -> set[str]:
    """The URLs nbconvert's template itself loads: every URL in <head> (require.js, MathJax,
    the widget manager that would render embedded widget state), which precedes any output."""
    head = html.split("<body", 1)[0]
    found = set(re.findall(r"""["'](https?://[^"']+)["']""", head))
    return {url for url in found if not PAYLOAD_URL.search(url)}


@in_browser
@pytest.mark.parametrize("name", ["no_state", "with_state"])
def test_static_fallback_nbconvert_html_executes_nothing(page, served, name):
    base, root = served
    html = (root / f"{name}.html").read_text(encoding="utf-8")
    assets = template_assets(html)
    watch = Watch(page, base)
    page.goto(f"{base}/{name}.html")
    page.wait_for_load_state("load")
    if name == "no_state":
        # GitHub / nbviewer: the views' saved text/html is what shows
        for selector in VIEWS:
            node = page.locator(selector.replace(".lion-view ", "")).first
            assert node.count() == 1, selector
            assert MARK in node.text_content(), selector
    else:
        # the widgets' state is embedded for the html-manager (a CDN script, blocked here);
        # the transcripts are in it as data, never as markup
        assert "application/vnd.jupyter.widget-state+json" in html
    # nbconvert's own template assets (require.js, MathJax, the widget manager) are the only
    # other-origin URLs the page may ask for; the fixture aborts them
    bare = {a.split("?")[0] for a in assets}
    page.watched.external_requests[:] = [
        u for u in page.watched.external_requests if u.split("?")[0] not in bare
    ]
    watch.requests[:] = [u for u in watch.requests if u.split("?")[0] not in bare]
    assert_inert(page, watch, allowed_paths=(f"/{name}.html",))
    page.locator(".lion-inspector, .lion-view, .lion-transcript").first.scroll_into_view_if_needed()
    screenshot(page, f"xss_nbconvert_{name}")


@in_browser
@pytest.mark.parametrize("export", ["roles", "react", "parse", "left"])
def test_export_html_executes_nothing_even_without_its_csp(page, served, export):
    """The export is self-contained (no request but the page) and inert; with its CSP meta
    removed it must still be inert: sanitising, not the CSP, is what keeps it safe."""
    base, root = served
    page_html = (root / f"export_{export}.html").read_text(encoding="utf-8")
    assert 'http-equiv="Content-Security-Policy"' in page_html
    stripped = re.sub(r"<meta[^>]+Content-Security-Policy[^>]*>", "", page_html, flags=re.I)
    assert "Content-Security-Policy" not in stripped
    (root / f"export_{export}_nocsp.html").write_text(stripped, encoding="utf-8")
    for variant in (f"export_{export}.html", f"export_{export}_nocsp.html"):
        watch = Watch(page, base)
        page.goto(f"{base}/{variant}")
        page.wait_for_load_state("load")
        assert MARK in page.text_content("body")
        assert_inert(page, watch, allowed_paths=(f"/{variant}",), roots="body")
        documents = [u for u in watch.requests if not u.endswith(".ico")]
        assert documents == [f"{base}/{variant}"], documents  # nothing else was fetched
    if export == "roles":
        screenshot(page, "xss_export_roles_nocsp")


@in_browser
def test_the_checks_catch_an_unsanitised_page(page, http_root):
    """The detectors themselves: the same payloads inserted raw into an output-like container
    must trip every check (a dialog, the sentinel, a payload request, foreign markup)."""
    base, root = http_root
    body = "\n".join(f"<div>{p}</div>" for p in PAYLOADS)
    (root / "raw.html").write_text(
        "<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>"
        f'<div class="jp-OutputArea-output jp-RenderedHTMLCommon">{body}</div></body></html>',
        encoding="utf-8",
    )
    watch = Watch(page, base)
    page.goto(f"{base}/raw.html")
    page.wait_for_load_state("load")
    with pytest.raises(AssertionError) as caught:
        assert_inert(page, watch, allowed_paths=("/raw.html",))
    report = json.loads(str(caught.value).split("\nassert", 1)[0])
    assert {"dialogs", "window.__pwned (per frame)", "requests", "other origins",
            "markup outside the renderers' vocabulary"} <= set(report), sorted(report)  # fmt: skip
    assert any("pwned-relative.png" in u for u in report["requests"])
    assert any(u.startswith("https://evil.example/") for u in report["other origins"])


def test_markdown_export_of_every_payload_has_only_plain_fence_info_strings():
    """No browser needed. ``export_markdown`` / ``_repr_markdown_`` keep fenced code verbatim,
    including the fence's info string. JupyterLab's Markdown renderer puts that string into the
    ``class`` attribute unescaped, so a payload like ```` ```"><script>alert(1)</script> ````
    becomes a live <script> in a trusted Markdown output, which Lab runs (seen in
    ``test_every_view_in_jupyterlab_executes_nothing``). A safe info string is one word of
    ``[A-Za-z0-9_+#.-]``."""
    from markdown_it import MarkdownIt

    from lion_nb import Branch
    from lion_nb.export import export_markdown
    from lion_nb.messages import ActionResponse, AssistantResponse, Instruction, System

    md = MarkdownIt("commonmark")
    unsafe = {}
    for name, p in zip([c["name"] for c in CORPUS] + SENTINELS, PAYLOADS, strict=True):
        branch = Branch()
        for message in (
            System(system=p),
            Instruction(instruction=p, guidance=p),
            AssistantResponse(response=p, metadata={"thinking": p}),
            ActionResponse(function="f", output=p),
        ):
            branch.add_message(message)
        for text in [export_markdown(branch)] + [m._repr_markdown_() for m in branch.messages]:
            for tok in md.parse(text):
                lang = (tok.info.split() or [""])[0]  # what Lab uses as the language
                if tok.type == "fence" and not re.fullmatch(r"[\w+#.-]*", lang):
                    unsafe[name] = tok.info
    assert unsafe == {}, unsafe
