"""How a streamed reply looks to a reader, measured in the page, the same way in every front
end (JupyterLab 4, Notebook 7, Voilà, marimo): the reply's text is sampled every animation frame
inside the view's element (marimo draws it in a shadow root), the bytes the page receives over
its websockets are counted, and the kernel notes when each reply's first text reached it.

``record(name, figures)`` adds a row to ``test-artifacts/front_end_browser.json``, which the
browser benchmark (``benchmarks/bench_browser.py``, B10) reads; the tests themselves assert only
bounds that hold on a slow, busy machine."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
FIGURES = ARTIFACTS / "front_end_browser.json"

# kernel side: when the first text of each reply (by message id) reached the kernel, in a file
FIRST_TEXT = """
import json as _json, time as _time
from lion_nb.signals import StreamDelta as _StreamDelta
_firsts = {{}}
def _first_text(signal):
    if signal.kind == "text" and signal.message_id not in _firsts:
        _firsts[signal.message_id] = _time.time()
        open({path!r}, "w").write(_json.dumps(list(_firsts.values())))
branch.observe(_StreamDelta, handler=_first_text)
"""

# kernel side, for a view whose content is messages (the inspector): when each message was added
FIRST_MESSAGE = """
import json as _json, time as _time
from lion_nb.signals import MessageAdded as _MessageAdded
_firsts = []
def _first_message(signal):
    _firsts.append(_time.time())
    open({path!r}, "w").write(_json.dumps(_firsts[:1]))
branch.observe(_MessageAdded, handler=_first_message)
"""

# page side: every frame, the streaming reply's non-space characters inside `root`
SAMPLER = """
(root) => {
  const solid = (t) => t.replace(/\\s+/g, '').length;
  const s = {changes: [], last: -1, firstText: null, ended: null, endText: null, done: false,
             enter: null, enterWall: null, firstShown: null};
  window.__lionSampler = s;
  // Enter pressed (the page's first sight of it: window, capture phase), once
  window.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && s.enter === null) {
      s.enter = performance.now();
      s.enterWall = Date.now();
    }
  }, true);
  function tick() {
    const live = root.querySelector('.lion-live .lion-body');
    if (live) {
      const n = solid(live.textContent);
      if (n > 0 && s.firstText === null) {
        s.firstText = Date.now();
        s.firstShown = performance.now();  // the frame that shows it
      }
      if (n > 0 && n !== s.last) s.changes.push(performance.now());
      s.last = n;
    } else if (s.last >= 0 && s.ended === null) {
      s.ended = performance.now();
      const bodies = root.querySelectorAll('.lion-assistant .lion-body');
      s.endText = bodies.length ? bodies[bodies.length - 1].textContent : '';
    }
    if (!s.done) requestAnimationFrame(tick);
  }
  requestAnimationFrame(tick);
}
"""


# page side: every frame, what a reader sees of a whole view (the rounds and parse views stream
# into several pieces, not one reply): its rendered text (innerText: hidden rows left out), the
# time of each change (the page's clock, and the wall clock to compare with the kernel's)
VIEW_SAMPLER = """
([root, grow]) => {
  const s = {changes: [], wall: [], counts: [], last: null, done: false};
  window.__lionViewSampler = s;
  const re = grow ? new RegExp(grow, "g") : null;
  function tick() {
    const text = root.innerText;
    if (text !== s.last) {
      s.changes.push(performance.now());
      s.wall.push(Date.now());
      if (re) s.counts.push((text.match(re) || []).length);
      s.last = text;
    }
    if (!s.done) requestAnimationFrame(tick);
  }
  requestAnimationFrame(tick);
}
"""


# page side: Enter -> the first frame that shows text of a new reply inside `root` (an element,
# or a shadow root: marimo's own chat draws in one). `replies` selects the reply bodies; a new
# one (more of them than when armed) with a non-space character is the reply's first text.
# Armed again before each Enter: `window.__lionEnter` holds that one measurement.
ENTER_SAMPLER = """
([host, replies]) => {
  const root = host.shadowRoot && !host.matches('.lion-view') ? host.shadowRoot : host;
  const solid = (t) => t.replace(/\\s+/g, '').length;
  const before = root.querySelectorAll(replies).length;
  const s = {enter: null, first: null, done: false};
  window.__lionEnter = s;
  const onKey = (event) => {
    if (event.key === 'Enter' && s.enter === null) s.enter = performance.now();
  };
  window.addEventListener('keydown', onKey, true);  // before any handler of the page's own
  function tick() {
    if (s.enter !== null && s.first === null) {
      const all = root.querySelectorAll(replies);
      if (all.length > before && solid(all[all.length - 1].textContent) > 0) {
        s.first = performance.now();  // the frame that shows it (a busy page draws it late)
      }
    }
    if (s.first === null && !s.done) requestAnimationFrame(tick);
    else window.removeEventListener('keydown', onKey, true);
  }
  requestAnimationFrame(tick);
}
"""


def arm_enter(page: Any, root: Any, replies: str) -> None:
    """Time the next Enter to the first text of a new reply (``replies``: the CSS selector of
    reply bodies) inside ``root`` (an element handle or locator; a custom element's shadow
    root is searched when it has one)."""
    handle = root.element_handle() if hasattr(root, "element_handle") else root
    page.evaluate(ENTER_SAMPLER, [handle, replies])


def enter_ms(page: Any, timeout: float = 60_000) -> float:
    """Milliseconds from the Enter ``arm_enter`` waited for to the frame that first showed
    the new reply's text."""
    page.wait_for_function("window.__lionEnter.first !== null", timeout=timeout)
    s = page.evaluate("() => window.__lionEnter")
    return round(s["first"] - s["enter"], 1)


class Bytes:
    """The websocket frames the page receives (every frame: the kernel's messages with their
    envelopes, or marimo's) and their bytes; ``mark()`` starts a count, ``since()`` reads the
    bytes since, ``frames_since()`` the frames (at least one per update message)."""

    def __init__(self, page: Any) -> None:
        self.total = 0
        self.frames = 0
        self._mark = (0, 0)
        page.on("websocket", self._socket)

    def _socket(self, ws: Any) -> None:
        ws.on("framereceived", self._frame)

    def _frame(self, payload: Any) -> None:
        self.total += len(payload.encode() if isinstance(payload, str) else payload)
        self.frames += 1

    def mark(self) -> None:
        self._mark = (self.total, self.frames)

    def since(self) -> int:
        return self.total - self._mark[0]

    def frames_since(self) -> int:
        return self.frames - self._mark[1]


def start_sampler(page: Any, root: Any) -> None:
    """Sample the reply's text inside ``root`` (an element handle or locator) every frame."""
    handle = root.element_handle() if hasattr(root, "element_handle") else root
    page.evaluate(SAMPLER, handle)


def wait_for_reply_end(page: Any, timeout: float = 120_000) -> None:
    page.wait_for_function("window.__lionSampler.ended !== null", timeout=timeout)


def figures(page: Any, first_path: Path | None, bytes_: Bytes | None) -> dict[str, Any]:
    """The figures of the reply sampled since ``start_sampler``: visible updates per second
    and the longest gap between them while it streamed, its first text on screen after the
    kernel had it (``first_path``: the kernel's file), the bytes and websocket frames the page
    received, and ``end_text``: the reply's text the first frame after it ended."""
    page.evaluate("() => { window.__lionSampler.done = true; }")
    s = page.evaluate("() => window.__lionSampler")
    out: dict[str, Any] = cadence(s["changes"])
    if first_path is not None and first_path.exists() and s["firstText"] is not None:
        first = json.loads(first_path.read_text())[-1]
        out["first_token_ms"] = round(s["firstText"] - first * 1000, 1)
        if s["enterWall"] is not None:  # Enter -> the kernel had the first text
            out["enter_kernel_ms"] = round(first * 1000 - s["enterWall"], 1)
    if s["enter"] is not None and s["firstShown"] is not None:
        out["enter_ms"] = round(s["firstShown"] - s["enter"], 1)
    out["end_text"] = s["endText"]
    if bytes_ is not None:
        out["bytes"] = bytes_.since()
        out["frames"] = bytes_.frames_since()
    return out


def cadence(times: list[float]) -> dict[str, Any]:
    """Visible updates (page times in ms, one per change on screen): how many, over how many
    seconds, per second, and the longest gap between two."""
    span = (times[-1] - times[0]) / 1000 if len(times) > 1 else 0.0
    gaps = [b - a for a, b in itertools.pairwise(times)]
    return {
        "updates": len(times),
        "seconds": round(span, 2),
        "updates_per_s": round((len(times) - 1) / span, 1) if span else 0.0,
        "longest_gap_ms": round(max(gaps), 1) if gaps else 0.0,
    }


def start_view_sampler(page: Any, root: Any, grow: str | None = None) -> None:
    """Sample what a whole view (``root``) shows every frame; ``grow``: a regular expression
    whose matches in it are counted at each change (what streams in: ``view_figures``'s
    ``counts``)."""
    handle = root.element_handle() if hasattr(root, "element_handle") else root
    page.evaluate(VIEW_SAMPLER, [handle, grow])


def view_figures(page: Any, first_path: Path, bytes_: Bytes | None) -> dict[str, Any]:
    """The figures of a view's run sampled since ``start_view_sampler``, from the first change
    on screen after the kernel had the run's first text (``first_path``: the kernel's file) to
    the last: visible updates per second, the longest gap, that first change after the kernel
    had the text, the bytes and frames the page received; ``counts`` (the sampler's ``grow``
    matches at each change) and ``end_text`` (what the view showed last)."""
    page.evaluate("() => { window.__lionViewSampler.done = true; }")
    s = page.evaluate("() => window.__lionViewSampler")
    first = min(json.loads(first_path.read_text())) * 1000  # the run's first reply
    start = next(i for i, wall in enumerate(s["wall"]) if wall >= first)
    out: dict[str, Any] = {
        **cadence(s["changes"][start:]),
        "first_token_ms": round(s["wall"][start] - first, 1),
        "counts": s["counts"][start:],
        "end_text": s["last"],
    }
    if bytes_ is not None:
        out["bytes"] = bytes_.since()
        out["frames"] = bytes_.frames_since()
    return out


def record(name: str, row: dict[str, Any]) -> None:
    """Add (or replace) the figures ``name`` in the file the benchmark reads."""
    ARTIFACTS.mkdir(exist_ok=True)
    rows = json.loads(FIGURES.read_text()) if FIGURES.exists() else {}
    rows[name] = {k: v for k, v in row.items() if k not in ("end_text", "counts")}
    FIGURES.write_text(json.dumps(rows, indent=2))


# every visible element with its own text inside `root` (a view), with the contrast of its text
# against the background it is drawn on: the first opaque background up the tree, the
# semi-transparent ones above it composited over it (the page's canvas: white, or black when
# the page's own colour scheme is dark and nothing is opaque)
CONTRAST = r"""
(root) => {
  const parse = (c) => {
    const m = c.match(/^(rgba?|color)\(\s*(?:srgb\s+)?([^)]+)\)/);
    if (!m) throw new Error("unparsed colour " + c);
    const p = m[2].split(/[ ,\/]+/).filter(Boolean).map(Number);
    const k = m[1] === "color" ? 255 : 1;
    return { r: p[0] * k, g: p[1] * k, b: p[2] * k, a: p.length > 3 ? p[3] : 1 };
  };
  const over = (top, under) => {
    const a = top.a + under.a * (1 - top.a);
    if (a === 0) return { r: 0, g: 0, b: 0, a: 0 };
    const mix = (k) => (top[k] * top.a + under[k] * under.a * (1 - top.a)) / a;
    return { r: mix("r"), g: mix("g"), b: mix("b"), a };
  };
  const canvas = getComputedStyle(document.documentElement).colorScheme.includes("dark")
    ? { r: 0, g: 0, b: 0, a: 1 } : { r: 255, g: 255, b: 255, a: 1 };
  const background = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement || (e.getRootNode() && e.getRootNode().host)) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c.a > 0) {
        layers.push(c);
        if (c.a >= 1) break;
      }
    }
    let bg = canvas;
    for (const c of layers.reverse()) bg = over(c, bg);
    return bg;
  };
  const lum = (c) => {
    const ch = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * ch(c.r) + 0.7152 * ch(c.g) + 0.0722 * ch(c.b);
  };
  const ratio = (a, b) => {
    const [hi, lo] = [lum(a), lum(b)].sort((x, y) => y - x);
    return (hi + 0.05) / (lo + 0.05);
  };
  const hex = (c) => "#" + [c.r, c.g, c.b].map((v) => Math.round(v).toString(16).padStart(2, "0")).join("");
  const out = [];
  for (const el of root.querySelectorAll("*")) {
    const own = [...el.childNodes].filter((n) => n.nodeType === 3 && n.textContent.trim());
    if (!own.length || el.closest("[hidden], :disabled, style, script")) continue;
    const style = getComputedStyle(el);
    if (style.visibility !== "visible" || !el.getClientRects().length) continue;
    const bg = background(el);
    const fg = over(parse(style.color), bg);
    out.push({
      tag: el.tagName.toLowerCase(), cls: String(el.className),
      text: own.map((n) => n.textContent.trim()).join(" ").slice(0, 40),
      fg: hex(fg), bg: hex(bg), ratio: Math.round(ratio(fg, bg) * 100) / 100,
    });
  }
  return out;
}
"""
AA = 4.5


def contrast_failures(page: Any, root: Any) -> tuple[int, list[str]]:
    """How many texts ``root`` (a view) shows, and each one under WCAG AA (4.5:1)."""
    handle = root.element_handle() if hasattr(root, "element_handle") else root
    measured = page.evaluate(CONTRAST, handle)
    return len(measured), [
        f"{m['ratio']}:1 {m['fg']} on {m['bg']} <{m['tag']} class={m['cls']!r}> {m['text']!r}"
        for m in measured
        if m["ratio"] < AA
    ]


# ----- scrolling: long tasks (anything that keeps the page from drawing for > 50 ms) -----------

LONG_TASKS = """
() => {
  window.__long = [];
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) window.__long.push([e.startTime, e.duration]);
  }).observe({ type: "longtask", buffered: true });
}
"""


def watch_long_tasks(page: Any) -> None:
    """Record the page's long tasks from now on (``long_tasks_since``)."""
    page.evaluate(LONG_TASKS)


def long_tasks_since(page: Any, started: float) -> list[float]:
    """The durations (ms) of the long tasks that began at or after ``started`` (page time)."""
    return [d for t, d in page.evaluate("window.__long") if t >= started]


def scroll_until(scroller: Any, target: Any, *, step: int, tries: int) -> None:
    """Scroll ``scroller`` down ``step`` pixels at a time, 0.1 s apart, until ``target`` is on
    the page (at most ``tries`` steps; then wait for it)."""
    for _ in range(tries):
        scroller.evaluate(f"(el) => {{ el.scrollTop += {step}; }}")
        scroller.page.wait_for_timeout(100)
        if target.count():
            break
    target.wait_for(timeout=30_000)
