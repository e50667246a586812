"""Every view's text against its effective background in JupyterLab Light and Dark, at the
WCAG AA contrast ratio (4.5:1), highlighted rows included (the compare view's changed turns,
the parse view's invalid rows, error cards, the selected flow row).

One notebook shows the six views (chat, inspector, ReAct rounds, parse with invalid fields,
compare of two branches with changed turns, flow). For each theme (set through the settings
API before the page loads: ``@jupyterlab/apputils-extension:themes``) and each OS colour scheme
(chromium's ``prefers-color-scheme``, which must not matter inside JupyterLab), the page
computes, for every visible element holding text inside a view, its colour (alpha composited)
against the first non-transparent background walking up the tree (semi-transparent ones
composited over what is under them). Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import json
import urllib.request

import pytest

from tests.support.front_ends import screenshot
from tests.support.lab_notebooks import run_notebook_in_lab, shutdown_kernels, write_notebook

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]

AA = 4.5
DONE = "THEME-VIEWS-" + "READY"

CELLS = [
    """
import json
from pydantic import BaseModel, Field, ValidationError
from lion_nb import Branch, BranchView, FlowView, Session, iModel
from lion_nb.messages import ActionRequest, ActionResponse, AssistantResponse, Instruction
from lion_nb.widgets.inspector import ProgressionInspector
from lion_nb.widgets.rounds_view import ReActRoundsView
from lion_nb.widgets.parse_view import ParseView
from lion_nb.widgets.compare_view import CompareView
from lion_nb.flow import Flow

session = Session()
REPLY = ("A reply with **bold**, a [link](https://example.org), `inline code` and\\n\\n"
         "```python\\n# a comment\\nprint('hi', 42)\\n```\\n\\n- a list item\\n")
b = session.new_branch(system="You are terse.", name="themes")
b.add_message(Instruction(instruction="First question", guidance="be brief", context=["ctx"]))
b.add_message(AssistantResponse(response=REPLY, metadata={
    "usage": {"input_tokens": 12, "output_tokens": 30}, "model": "scripted"}))
b.add_message(ActionRequest(function="lookup", arguments={"q": "tides"}, call_id="c1"))
b.add_message(ActionResponse(function="lookup", output="no such page", is_error=True))
b.chat_model = iModel(provider="scripted", replies=["The streamed **answer**."])
""",
    "chat = BranchView(b, height=500)\nchat",
    "await chat.asend('Second question')",
    "inspector = ProgressionInspector(b)\ninspector.toggle(1)\ninspector",
    '''
def echo(text: str) -> str:
    """Return the text."""
    return text

rb = Branch(system="React.", name="react", tools=[echo], chat_model=iModel(
    provider="scripted", replies=[
        {"json": {"analysis": "Look it up.", "extension_needed": True,
                  "action_requests": [{"function": "echo", "arguments": {"text": "x"}}]}},
        {"json": {"analysis": "Done.", "extension_needed": False}},
        {"json": {"answer": "The answer."}},
    ]))
rounds = ReActRoundsView(rb)
display(rounds)
await rb.ReAct("Go", max_extensions=1)
# round 1 again writing a tool call (shown only while the model writes one, dropped at its
# seal), fed to the view as a stream would, so the forming call's colours are measured too
import uuid
from lion_nb.signals import StreamDelta
from lion_nb.viewmodels.rounds import LiveReply
forming = '{"analysis": "Again.", "action_requests": [{"function": "echo", "arguments": {"text": "x", '
mid, reply = uuid.uuid4(), LiveReply()
reply.update(StreamDelta(message_id=mid, branch_id=rb.id, kind="text", delta=forming, source=forming))
rounds.rounds[0].live[mid] = reply
rounds._stream(rounds.rounds[0])
rounds.channel.flush()
rounds.sync_state()
''',
    """
class Ingredient(BaseModel):
    name: str
    grams: int = Field(gt=0)

class Recipe(BaseModel):
    title: str
    minutes: int
    ingredients: list[Ingredient]

messy = {"title": "Pancakes", "minutes": "about twenty",
         "ingredients": [{"name": "flour", "grams": 200}, {"name": "milk", "grams": -1}]}
try:
    Recipe.model_validate(messy)
except ValidationError as exc:
    error = exc
ParseView(messy, errors=error, title="Recipe (invalid)")
""",
    """
left = session.new_branch(system="Same system.", name="left")
right = session.new_branch(system="Same system.", name="right")
for i in range(3):
    left.add_message(Instruction(instruction=f"Question {i}"))
    left.add_message(AssistantResponse(response=f"Left answer {i}"))
    right.add_message(Instruction(instruction=f"Question {i}"))
    right.add_message(AssistantResponse(response=f"Right answer {i}" if i else f"Left answer {i}"))
right.add_message(Instruction(instruction="Only on the right"))
CompareView(left, right)
""",
    """
fb = session.new_branch(system="Summarise.", name="flow",
                        chat_model=iModel(provider="scripted", default_reply="A summary."))
flow = Flow(session, name="summaries")
first = flow.add("communicate", instruction="Summarise one", branch=fb.fork())
flow.add("communicate", instruction="Summarise two", depends_on=[first])
flow_view = FlowView(flow)
display(flow_view)
await flow.run()
print("THEME-VIEWS-" + "READY")
""",
]

# every visible element with its own text inside an output, with the contrast of its text
# against the background it is drawn on
MEASURE = r"""
() => {
  // computed colours: rgb()/rgba(), or color(srgb r g b / a) (what color-mix() computes to)
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
  const background = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c.a > 0) {
        layers.push(c);
        if (c.a >= 1) break;
      }
    }
    let bg = { r: 255, g: 255, b: 255, a: 1 }; // the canvas under everything
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
  const cells = [...document.querySelectorAll(".jp-Notebook .jp-Cell")];
  const out = [];
  for (const view of document.querySelectorAll(".jp-OutputArea-output .lion-view")) {
    if (view.parentElement.closest(".lion-view")) continue;
    const cell = cells.findIndex((c) => c.contains(view));
    for (const el of view.querySelectorAll("*")) {
      const own = [...el.childNodes].filter((n) => n.nodeType === 3 && n.textContent.trim());
      if (!own.length || el.closest("[hidden], :disabled, style, script")) continue;
      const style = getComputedStyle(el);
      if (style.visibility !== "visible" || !el.getClientRects().length) continue;
      const bg = background(el);
      const fg = over(parse(style.color), bg);
      out.push({
        cell, view: [...view.classList].join(" "), tag: el.tagName.toLowerCase(),
        cls: String(el.className), text: own.map((n) => n.textContent.trim()).join(" ").slice(0, 40),
        fg: hex(fg), bg: hex(bg), ratio: Math.round(ratio(fg, bg) * 100) / 100,
      });
    }
  }
  return out;
}
"""

VIEWS = {  # the output cell of each view (CELLS' indices)
    "chat": 1,
    "inspector": 3,
    "rounds": 4,
    "parse": 5,
    "compare": 6,
    "flow": 7,
}


def set_theme(lab, theme: str) -> None:
    """The Lab theme for pages loaded from now on (the user setting Settings > Theme writes)."""
    body = json.dumps({"raw": json.dumps({"theme": theme})}).encode()
    request = urllib.request.Request(
        lab.url("lab/api/settings/@jupyterlab/apputils-extension:themes"),
        data=body,
        method="PUT",
        headers={"Content-Type": "application/json"},
    )
    urllib.request.urlopen(request, timeout=10).close()


@pytest.fixture(autouse=True)
def _no_kernels_left(jupyter_lab):
    yield
    shutdown_kernels(jupyter_lab)
    set_theme(jupyter_lab, "JupyterLab Light")  # the other tests expect the default


@pytest.mark.parametrize("theme", ["JupyterLab Light", "JupyterLab Dark"])
def test_every_view_reads_at_aa_contrast(page, jupyter_lab, theme):
    set_theme(jupyter_lab, theme)
    name = "themes_" + theme.split()[-1].lower()
    run_notebook_in_lab(page, jupyter_lab, write_notebook(jupyter_lab, f"{name}.ipynb", CELLS))
    page.get_by_text(DONE).first.wait_for(timeout=180_000)
    light = theme.endswith("Light")
    assert page.evaluate("document.body.dataset.jpThemeLight") == str(light).lower()
    page.locator(".lion-flow-view .lion-flow-completed").first.wait_for(timeout=60_000)
    # every cell's end may refresh its view's saved output, which Lab draws anew: measure once
    # the kernel is idle and each view's cell shows a view with text again
    page.get_by_text("ipykernel) | Idle").wait_for(timeout=60_000)
    page.wait_for_function(
        """(cells) => {
          const all = [...document.querySelectorAll(".jp-Notebook .jp-Cell")];
          return cells.every((k) => {
            const view = all[k] && all[k].querySelector(".lion-view");
            return view && view.textContent.trim().length > 0;
          });
        }""",
        arg=list(VIEWS.values()),
        timeout=30_000,
    )
    page.wait_for_timeout(1000)  # the views' last throttled renders
    failures: list[str] = []
    for scheme in ("light", "dark"):  # the OS scheme must not change anything in Lab
        page.emulate_media(color_scheme=scheme)
        measured = page.evaluate(MEASURE)
        for view, cell in VIEWS.items():
            items = [m for m in measured if m["cell"] == cell]
            if not items:
                failures.append(f"{scheme} OS: no text measured in the {view} view")
                continue
            if view == "rounds" and not any("echo(text=" in m["text"] for m in items):
                failures.append(f"{scheme} OS: the forming tool call was not measured")
            worst = min(items, key=lambda m: m["ratio"])
            print(f"{theme} / OS {scheme}: {view}: {len(items)} texts, worst {worst}")
            failures += [
                f"{scheme} OS, {view}: {m['ratio']}:1 {m['fg']} on {m['bg']} "
                f"<{m['tag']} class={m['cls']!r}> {m['text']!r}"
                for m in items
                if m["ratio"] < AA
            ]
        for view, cell in VIEWS.items():
            shown = page.locator(".jp-Notebook .jp-Cell").nth(cell)
            shown.scroll_into_view_if_needed()
            # the notebook paints a cell scrolled to a frame or two later: a picture of it
            shown.locator(".lion-view").first.wait_for(state="visible", timeout=10_000)
            page.wait_for_timeout(200)
            screenshot(page, f"{name}_os_{scheme}_{view}")
    page.emulate_media(color_scheme="light")
    assert not failures, "\n".join(dict.fromkeys(failures))
