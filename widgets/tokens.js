// ----- the token view: a reply's tokens tinted by probability -----------------------
//
// Joined after lion_nb.js into one ES module (lion_nb.widgets.front.MODULE_FILES): it uses that
// file's helpers (node, button, named) and is reached from it at two places: the `tokens` op and
// the marks drawn after each update (tokenMarks); nameControls there names its two controls. The
// kernel's side is lion_nb/widgets/token_panels.py; the op and the actions are in
// lion_nb/widgets/protocol.py.
//
// A reply whose token view is open holds a panel: a legend of the five tint bins, a strip of
// surprise (-log p) per token, the tokens (one span each, `data-token-index`, tinted by bin) and a
// popup with the alternatives of the token hovered or focused (bars of their probabilities).
// Tokens arrive as deltas (`at`: the page has those before it); alternatives in chunks, asked for
// when a token there is shown. Choosing an alternative asks the kernel to fork there.
//
// The popup is dismissed as a reader expects: the pointer leaving the token and the popup (after
// a short grace, so the way from one to the other keeps it), focus leaving both, Escape, a click
// anywhere else; it sits below or above its token, whichever has the room, never on it.

// the tint bins: the largest surprise (hundredths of a nat) in each, and what it means
const TOKEN_BINS = [
  [10, "p ≥ 0.9"], // -ln 0.9 = 0.105
  [51, "0.6–0.9"], // -ln 0.6 = 0.511
  [120, "0.3–0.6"], // -ln 0.3 = 1.204
  [230, "0.1–0.3"], // -ln 0.1 = 2.303
  [Infinity, "p < 0.1"],
];

function tokenBin(s) {
  let i = 0;
  while (s > TOKEN_BINS[i][0]) i++;
  return i;
}

function percentOf(p) {
  const pc = p * 100;
  if (pc >= 99.95) return "100%";
  if (pc <= 0) return "0%";
  return pc >= 10 ? `${pc.toFixed(1)}%` : `${pc.toPrecision(2)}%`;
}

function percent(s) {
  return percentOf(Math.exp(-s / 100)); // s: surprise in hundredths of a nat
}

function shownToken(text) {
  // a token as the popup names it: whitespace made visible
  const shown = text.replace(/\n/g, "↵").replace(/\t/g, "⇥").replace(/ /g, "␣");
  return shown || "∅";
}

// ----- the op --------------------------------------------------------------------------------
function tokenOp(view, op) {
  const part = view.parts.get(op.key);
  if (!part) return;
  let panel = part.tokens;
  if (op.t) {
    if (!panel && op.at > 0) panel = reattach(view, part, op.key);
    if (op.at === 0) {
      if (panel) panel.el.remove();
      panel = openTokenPanel(view, part, op.key, null);
    } else if (!panel || panel.n !== op.at) {
      // a delta the page cannot place (a part drawn anew, a page reloaded): the kernel has
      // this view open, so ask for its tokens afresh
      const asking = panel ? panel.asking : part.reopening;
      if (!asking) {
        if (panel) panel.asking = true;
        else part.reopening = true;
        view.model.send({ action: "tokens", key: op.key, open: true });
      }
      return;
    }
    appendTokens(panel, op.t, op.s || [], op.e || []);
  }
  if (op.top && panel) {
    op.top.forEach((alts, k) => {
      panel.top[op.at + k] = alts;
    });
    const shown = !panel.pop.hidden && panel.active >= op.at && panel.active < op.at + op.top.length;
    if (shown) showAlternatives(view, panel, panel.active);
  }
}

function tokenStore(view) {
  // key -> the tokens of each open token view ({t, s, top}): a view drawn anew (JupyterLab
  // redraws a widget when its saved output is refreshed) shows them again without asking
  if (!view.store.tokens) view.store.tokens = new Map();
  return view.store.tokens;
}

function reattach(view, part, key) {
  // a copy: two views of one widget on the page each keep their own
  const data = tokenStore(view).get(key);
  return data ? openTokenPanel(view, part, key, { t: [...data.t], s: [...data.s], e: [...data.e], top: [...data.top] }) : null;
}

// ----- the panel -----------------------------------------------------------------------------
function openTokenPanel(view, part, key, kept) {
  const data = kept || { t: [], s: [], e: [], top: [] };
  const panel = {
    key, part, n: data.t.length, drawn: 0, t: data.t, s: data.s, e: data.e, top: data.top, asked: new Set(), active: -1, asking: false,
    el: node("div", "lion-tokens"),
    text: node("div", "lion-tokens-text"),
    strip: node("canvas", "lion-tokens-strip"),
    pop: node("div", "lion-tok-pop"),
  };
  panel.el.setAttribute("role", "group");
  named(panel.el, "Token view");
  panel.text.setAttribute("aria-label", "Tokens (arrow keys move between them; Down: the alternatives)");
  panel.text.setAttribute("role", "group");
  panel.strip.height = 32;
  panel.strip.setAttribute("aria-hidden", "true");
  panel.strip.title = "Surprise (−ln p) of each token, and the entropy of its stored alternatives: click to go to a token";
  panel.pop.hidden = true;
  panel.pop.id = `lion-tok-pop-${Math.random().toString(36).slice(2)}`;
  panel.pop.setAttribute("role", "group");
  named(panel.pop, "Alternatives");
  panel.el.append(tokenHead(view, panel), stripChart(panel), panel.text, panel.pop); // sampling.js: the strip's axes
  tokenEvents(view, panel);
  const card = part.el.firstElementChild || part.el;
  card.appendChild(panel.el);
  part.tokens = panel;
  part.reopening = false;
  tokenStore(view).set(key, data);
  if (panel.n) appendTokens(panel, [], [], []);
  return panel;
}

function tokenHead(view, panel) {
  const head = node("div", "lion-tokens-head");
  head.append(node("span", "lion-tokens-title", "Tokens by probability"));
  const legend = node("span", "lion-tokens-legend");
  legend.setAttribute("aria-label", "Tint legend");
  TOKEN_BINS.forEach(([, label], b) => {
    const item = node("span", `lion-tok lion-tok-b${b} lion-tokens-key`, label);
    legend.append(item);
  });
  const close = button("lion-act lion-tokens-close", "Close", "Close the token view", () => closeTokenPanel(view, panel));
  named(close, "Close the token view");
  head.append(legend, close);
  return head;
}

function closeTokenPanel(view, panel) {
  panel.el.remove();
  if (panel.part.tokens === panel) panel.part.tokens = null;
  tokenStore(view).delete(panel.key);
  askTokens(view, panel.key, false);
  tokenMarks(view);
}

function appendTokens(panel, texts, surprises, entropies) {
  // kept at once, drawn a frame's worth at a time: the first screenful now, the rest (a long
  // reply opened at once) over the next frames, so the view opens without waiting for it all
  for (let k = 0; k < texts.length; k++) {
    panel.t.push(texts[k]);
    panel.s.push(surprises[k] ?? 0);
    panel.e.push(entropies[k] ?? -1);
  }
  panel.n = panel.t.length;
  panel.asking = false;
  if (panel.drawn === 0) drawTokens(panel);
  // what is not drawn yet goes at an even pace, done within REVEAL_FRAMES frames
  panel.step = Math.max(1, Math.ceil((panel.n - panel.drawn) / REVEAL_FRAMES));
  drawSoon(panel);
}

const TOKENS_PER_FRAME = 800;
// tokens that arrived in one message are revealed over this many frames (the kernel sends at
// most 15 a second: a frame is due every ~4), a few at a time instead of all at once
const REVEAL_FRAMES = 3;

function drawTokens(panel, most = TOKENS_PER_FRAME) {
  const end = Math.min(panel.n, panel.drawn + most);
  const frag = document.createDocumentFragment();
  for (let i = panel.drawn; i < end; i++) {
    const span = document.createElement("span");
    span.className = `lion-tok lion-tok-b${tokenBin(panel.s[i])}`;
    span.setAttribute("data-token-index", i);
    if (i === 0) span.tabIndex = 0; // one tab stop; arrow keys move it (focusToken)
    span.textContent = panel.t[i];
    frag.appendChild(span);
  }
  panel.drawn = end;
  panel.text.appendChild(frag);
}

// ----- the surprise strip --------------------------------------------------------------------
function drawSoon(panel) {
  if (panel.drawing) return;
  panel.drawing = true;
  requestAnimationFrame(() => {
    panel.drawing = false;
    drawTokens(panel, Math.min(TOKENS_PER_FRAME, panel.step));
    drawStrip(panel);
    if (panel.drawn < panel.n) drawSoon(panel);
  });
}

function drawStrip(panel) {
  const { strip, s, n } = panel;
  const width = Math.max(50, strip.clientWidth || panel.text.clientWidth || 600);
  if (strip.width !== width) strip.width = width;
  const ctx = strip.getContext("2d");
  if (!ctx) return;
  const height = strip.height;
  ctx.clearRect(0, 0, width, height);
  if (!n) return;
  const top = Math.max(300, ...s.slice(-4000)); // at least 3 nats full scale
  const step = width / n;
  ctx.fillStyle = getComputedStyle(strip).color; // the theme's ink for it (tokens.css)
  for (let i = 0; i < n; i++) {
    const h = Math.max(1, Math.round((Math.min(s[i], top) / top) * (height - 1)));
    ctx.fillRect(i * step, height - h, Math.max(1, step), h);
  }
  drawStripScale(panel, ctx, top, step, height); // sampling.js: the entropy line, the scale
}

// ----- hover, focus, keys --------------------------------------------------------------------
function tokenEvents(view, panel) {
  const index = (el) => {
    const tok = el && el.closest ? el.closest(".lion-tok[data-token-index]") : null;
    return tok && panel.text.contains(tok) ? Number(tok.getAttribute("data-token-index")) : -1;
  };
  panel.text.addEventListener("mouseover", (event) => {
    const i = index(event.target);
    if (i < 0) return;
    panel.pointer = true;
    stayOpen(panel);
    if (i !== panel.active || panel.pop.hidden) showAlternatives(view, panel, i);
  });
  panel.text.addEventListener("focusin", (event) => {
    const i = index(event.target);
    if (i >= 0 && !panel.quiet) showAlternatives(view, panel, i);
  });
  panel.text.addEventListener("mouseout", (event) => pointerLeft(panel, event.relatedTarget, index));
  panel.pop.addEventListener("mouseenter", () => {
    panel.pointer = true;
    stayOpen(panel);
  });
  panel.pop.addEventListener("mouseleave", (event) => pointerLeft(panel, event.relatedTarget, index));
  for (const el of [panel.text, panel.pop]) el.addEventListener("focusout", () => focusLeft(panel));
  panel.text.addEventListener("keydown", (event) => tokenKeys(view, panel, event, index(event.target)));
  panel.pop.addEventListener("keydown", (event) => popupKeys(panel, event));
  panel.strip.addEventListener("click", (event) => {
    const rect = panel.strip.getBoundingClientRect();
    const i = Math.floor(((event.clientX - rect.left) / rect.width) * panel.n);
    if (i >= 0 && i < panel.n) focusToken(panel, i);
  });
  panel.el.addEventListener("keyup", (event) => event.stopPropagation());
  // the strip is drawn to the text's width: again when the view is resized
  if (typeof ResizeObserver === "function") new ResizeObserver(() => drawSoon(panel)).observe(panel.text);
  watchPopups();
}

function tokenKeys(view, panel, event, i) {
  event.stopPropagation(); // JupyterLab's shortcuts never see them (Escape: watchPopups)
  if (i < 0) return;
  const to = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: panel.n - 1 }[event.key];
  if (to !== undefined) {
    event.preventDefault();
    focusToken(panel, Math.max(0, Math.min(panel.n - 1, to)));
  } else if (event.key === "ArrowDown" || event.key === "Enter") {
    if (panel.pop.hidden || panel.active !== i) showAlternatives(view, panel, i);
    const first = panel.pop.querySelector("button:not(:disabled)");
    if (first) {
      event.preventDefault();
      first.focus();
    }
  }
}

function popupKeys(panel, event) {
  event.stopPropagation(); // (Escape: watchPopups, on the document, saw it first)
  const items = [...panel.pop.querySelectorAll("button:not(:disabled)")];
  const at = items.indexOf(rootOf(panel).activeElement);
  if (event.key === "ArrowDown" || event.key === "ArrowUp") {
    event.preventDefault();
    const next = at + (event.key === "ArrowDown" ? 1 : -1);
    if (next < 0) focusToken(panel, panel.active);
    else if (items[next]) items[next].focus();
  }
}

// ----- dismissing the popup --------------------------------------------------------------------
const POPUP_GRACE_MS = 300; // the pointer's way from a token to its popup (and back) keeps it
const OPEN_POPUPS = new Set(); // the panels whose popup is shown, on every view of the page

function rootOf(panel) {
  // the document, or the shadow root a front end draws the view in (marimo)
  const root = panel.el.getRootNode();
  return root.activeElement !== undefined ? root : document;
}

function keepsPopup(panel, el) {
  // an element the popup belongs with: the popup itself or its token
  if (!el || !el.closest) return false;
  const token = panel.text.querySelector(`[data-token-index="${panel.active}"]`);
  return panel.pop.contains(el) || (token !== null && token.contains(el));
}

function stayOpen(panel) {
  clearTimeout(panel.leaving);
  panel.leaving = 0;
}

function pointerLeft(panel, to, index) {
  if (panel.pop.hidden || keepsPopup(panel, to) || index(to) >= 0) return; // another token: mouseover
  panel.pointer = false;
  stayOpen(panel);
  panel.leaving = setTimeout(() => {
    panel.leaving = 0;
    // a reader who reached the token or the popup by keyboard keeps it until focus leaves
    const focused = rootOf(panel).activeElement;
    if (!panel.pointer && !(keepsPopup(panel, focused) && focused.matches(":focus-visible"))) hidePopup(panel);
  }, POPUP_GRACE_MS);
}

function focusLeft(panel) {
  // after the focus moved: where it went (relatedTarget is null for a click on no control)
  setTimeout(() => {
    if (panel.pop.hidden || panel.pointer) return;
    if (!keepsPopup(panel, rootOf(panel).activeElement)) hidePopup(panel);
  }, 0);
}

function hidePopup(panel, { refocus = false } = {}) {
  stayOpen(panel);
  OPEN_POPUPS.delete(panel);
  const hadFocus = panel.pop.contains(rootOf(panel).activeElement);
  panel.pop.hidden = true;
  panel.pointer = false;
  const token = panel.text.querySelector(".lion-tok-active");
  if (token) {
    token.classList.remove("lion-tok-active");
    token.removeAttribute("aria-describedby");
  }
  if (refocus && hadFocus && panel.active >= 0) {
    panel.quiet = true; // back on its token, the popup stays closed
    focusToken(panel, panel.active);
    panel.quiet = false;
  }
}

function watchPopups() {
  // once per page: Escape (wherever the focus is: a token, the popup, the panel, the prompt box)
  // and a press anywhere else close the popups open; a scroll or resize places them again
  if (watchPopups.done) return;
  watchPopups.done = true;
  const open = () => [...OPEN_POPUPS].filter((panel) => panel.el.isConnected || !OPEN_POPUPS.delete(panel));
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Escape") return;
    for (const panel of open()) hidePopup(panel, { refocus: true });
  }, true);
  document.addEventListener("pointerdown", (event) => {
    const path = event.composedPath();
    for (const panel of open()) {
      const inside = path.includes(panel.pop) || path.some((el) => el.parentNode === panel.text);
      if (!inside) hidePopup(panel);
    }
  }, true);
  const replace = () => {
    for (const panel of open()) {
      const span = panel.text.querySelector(`[data-token-index="${panel.active}"]`);
      if (span) placePopup(panel, span);
    }
  };
  document.addEventListener("scroll", replace, true);
  window.addEventListener("resize", replace);
}

function focusToken(panel, i) {
  const span = panel.text.querySelector(`[data-token-index="${i}"]`);
  if (!span) return;
  const old = panel.text.querySelector('.lion-tok[tabindex="0"]');
  if (old && old !== span) old.tabIndex = -1;
  span.tabIndex = 0;
  span.focus();
}

// ----- the alternatives ------------------------------------------------------------------------
function showAlternatives(view, panel, i) {
  const span = panel.text.querySelector(`[data-token-index="${i}"]`);
  if (!span) return;
  const old = panel.text.querySelector(".lion-tok-active");
  if (old && old !== span) {
    old.classList.remove("lion-tok-active");
    old.removeAttribute("aria-describedby");
  }
  span.classList.add("lion-tok-active");
  span.setAttribute("aria-describedby", panel.pop.id);
  panel.active = i;
  const alts = panel.top[i];
  if (alts === undefined) askAlternatives(view, panel, i);
  fillPopup(view, panel, i, alts);
  placePopup(panel, span);
  OPEN_POPUPS.add(panel);
}

function askAlternatives(view, panel, i) {
  if (panel.asked.has(i)) return;
  // the kernel answers with the chunk holding `i`; every index of it counts as asked
  for (let k = i - 32; k < i + 32; k++) panel.asked.add(k);
  panel.asked.add(i);
  view.model.send({ action: "token_top", key: panel.key, at: i });
}

function fillPopup(view, panel, i, alts) {
  const { pop } = panel;
  pop.textContent = "";
  const chosen = panel.t[i];
  const head = node("div", "lion-tok-pop-head");
  const own = alts && alts.find((a) => a[0] === chosen);
  const p = own ? percentOf(own[1]) : percent(panel.s[i]);
  head.append(node("span", "lion-tok-pop-token", shownToken(chosen)), node("span", "lion-tok-pop-p", ` ${p} · token ${i + 1} of ${panel.n}`));
  pop.append(head);
  if (alts === undefined) {
    pop.append(node("div", "lion-tok-pop-note", "alternatives…"));
  } else if (!alts.length) {
    pop.append(node("div", "lion-tok-pop-note", "no alternatives were recorded for this token"));
  } else {
    if (!own) {
      // sampled from outside the stored top K: the list below does not hold it (the kernel's
      // static view says the same: render/tokens_html.py outside_top_note)
      const said = `“${shownToken(chosen)}” (${p}) is not among the ${alts.length} most likely shown`;
      pop.append(node("div", "lion-tok-pop-note lion-tok-outside", said));
    }
    // a list of buttons, named: a screen reader hears "Alternatives to …, list, N items"
    const list = node("ul", "lion-tok-alts");
    list.setAttribute("role", "list");
    named(list, `Alternatives to ${shownToken(chosen)}`);
    for (const [text, q] of alts) list.append(alternativeRow(view, panel, i, text, q, text === chosen));
    pop.append(list, samplingOpener(view, panel, i)); // sampling.js
  }
  pop.hidden = false;
}

function alternativeRow(view, panel, i, text, p, isChosen) {
  const row = button("lion-tok-alt", undefined, undefined, () => {
    if (isChosen) return;
    view.model.send({ action: "fork_token", key: panel.key, index: i, text });
    popNote(panel, `forking at token ${i + 1} with “${shownToken(text)}”…`);
  });
  const bar = node("span", "lion-tok-bar");
  const fill = node("span", "lion-tok-bar-fill");
  fill.style.width = `${Math.max(1, p * 100).toFixed(1)}%`;
  bar.append(fill);
  row.append(node("span", "lion-tok-alt-text", shownToken(text)), bar, node("span", "lion-tok-alt-p", percentOf(p)));
  const live = !panel.part.el.querySelector(".lion-msg[data-id]");
  if (isChosen) {
    row.classList.add("lion-tok-alt-chosen");
    row.setAttribute("aria-current", "true");
    named(row, `${shownToken(text)}, ${percentOf(p)}, the token the model chose`);
  } else if (live) {
    row.disabled = true;
    named(row, `${shownToken(text)}, ${percentOf(p)}`);
    row.title = "The reply is still streaming: fork once it is recorded";
  } else {
    named(row, `Fork here with ${shownToken(text)} (${percentOf(p)})`);
    row.title = "Fork the conversation here: this token instead, and the model goes on from it";
  }
  const item = node("li", "lion-tok-alt-item");
  item.append(row);
  return item;
}

function popNote(panel, said) {
  const note = node("div", "lion-tok-pop-note", said);
  note.setAttribute("role", "status");
  panel.pop.append(note);
}

const POPUP_GAP = 2; // px between a token and its popup
const POPUP_MIN = 64; // px: the least height a popup is given where neither side has room

function visibleBox(el) {
  // the part of the window `el`'s scrolling ancestors let the reader see (JupyterLab's notebook
  // scroller, the view's own): a popup placed within it is not cut off
  let top = 0;
  let bottom = window.innerHeight;
  for (let up = el.parentElement; up; up = up.parentElement) {
    const { overflowY } = getComputedStyle(up);
    if (overflowY === "visible" || overflowY === "clip") continue;
    const box = up.getBoundingClientRect();
    top = Math.max(top, box.top);
    bottom = Math.min(bottom, box.bottom);
  }
  return { top, bottom };
}

function placePopup(panel, span) {
  // below the token or above it, whichever side has the room for it (else the roomier one, the
  // popup scrolling inside): never on the token itself
  const { pop } = panel;
  const box = panel.el.getBoundingClientRect();
  const at = span.getBoundingClientRect();
  const width = Math.min(320, box.width);
  pop.style.width = `${width}px`;
  pop.style.left = `${Math.max(0, Math.min(at.left - box.left, box.width - width))}px`;
  pop.style.maxHeight = "";
  const room = visibleBox(panel.el);
  const below = room.bottom - at.bottom - POPUP_GAP;
  const above = at.top - room.top - POPUP_GAP;
  const natural = pop.offsetHeight;
  const under = natural <= below || (natural > above && below >= above);
  const height = Math.min(natural, Math.max(POPUP_MIN, under ? below : above));
  if (height < natural) pop.style.maxHeight = `${height}px`;
  pop.style.top = `${(under ? at.bottom + POPUP_GAP : at.top - POPUP_GAP - height) - box.top}px`;
}

// ----- the controls: "Tokens" (and "Sample ×5") on the replies that have tokens -------------------
function tokenMarks(view) {
  if (!view.chat) return;
  const marked = new Set(view.cstate.token_marks || []);
  const open = tokenStore(view);
  for (const [key, part] of view.parts) {
    const panel = part.tokens;
    if (panel && panel.key !== key) {
      // the part was renamed (a streamed reply recorded under its id)
      open.set(key, open.get(panel.key));
      open.delete(panel.key);
      panel.key = key;
    }
    if (panel && !part.el.contains(panel.el)) part.tokens = null;
    // a part drawn anew whose view was open: drawn again from what the page has
    if (!part.tokens && marked.has(key)) reattach(view, part, key);
    if (marked.has(key)) followKernelOpen(view, part, key);
    tokenControl(view, part, key, marked.has(key));
  }
}

function followKernelOpen(view, part, key) {
  // the kernel has this reply's token view open (token_open: show_tokens(), a click here or in
  // another view of the widget) and this page does not show it — a page that attached later,
  // as Voilà's does: ask for its tokens, once. A click's own ask waits for the kernel to agree.
  const wanted = new Set(view.cstate.token_open || []).has(key);
  const asked = view.tokenAsks || (view.tokenAsks = new Map()); // key -> the state asked for
  if (asked.has(key)) {
    if (asked.get(key) !== wanted) return;
    asked.delete(key);
  }
  if (wanted && !part.tokens && !part.reopening) {
    part.reopening = true;
    view.model.send({ action: "tokens", key, open: true });
  }
}

function askTokens(view, key, open) {
  (view.tokenAsks || (view.tokenAsks = new Map())).set(key, open);
  view.model.send({ action: "tokens", key, open });
}

function tokenControl(view, part, key, wanted) {
  const head = part.el.querySelector(".lion-head");
  if (!head) return;
  let control = head.querySelector(".lion-tokens-btn");
  if (!wanted) {
    for (const el of head.querySelectorAll(".lion-tokens-btn, .lion-sample-at")) el.remove();
    return;
  }
  if (!control) {
    control = button("lion-act lion-tokens-btn", "Tokens", "Show this reply's tokens tinted by probability, with the alternatives", () => {
      if (part.tokens) closeTokenPanel(view, part.tokens);
      else askTokens(view, control.closest(".lion-part").getAttribute("data-key"), true);
    });
    head.insertBefore(control, head.querySelector(".lion-copy-msg"));
  }
  control.setAttribute("aria-pressed", part.tokens ? "true" : "false");
  if (part.el.querySelector(".lion-msg[data-id]") && !head.querySelector(".lion-sample-at")) {
    head.insertBefore(sampleControl(view), head.querySelector(".lion-copy-msg"));
  }
  sampleSettings(view, head);
}

// ----- Sample ×5 at a temperature and top-p the reader sees and sets ----------------------------
// The kernel says what it would sample at (chrome: sample_at: the model's own, 0.8 where that is
// 0); what the reader sets holds for every reply of the view, drawn anew too (view.store).
const SAMPLE_INPUTS = [
  // [setting, label, step, max]
  ["temperature", "temperature", "0.1", "2"],
  ["top_p", "top-p", "0.05", "1"],
];

function sampleControl(view) {
  const group = node("span", "lion-sample-at");
  group.setAttribute("role", "group");
  named(group, "Sample this turn 5 times");
  const go = () => {
    const at = {};
    for (const input of group.querySelectorAll("input")) {
      if (input.value === "") continue; // not said yet: the kernel's (chrome: sample_at)
      const value = Number(input.value);
      const ok = value > 0 && value <= Number(input.max);
      input.setAttribute("aria-invalid", ok ? "false" : "true");
      if (!ok) return input.focus();
      at[input.name] = value;
    }
    const key = group.closest(".lion-part").getAttribute("data-key");
    view.model.send({ action: "sample", key, n: 5, ...at });
  };
  const sample = button("lion-act lion-sample-btn", "Sample ×5", "Answer this turn 5 times at once, as alternatives (‹ n/of ›), at this temperature and top-p", go);
  group.append(sample);
  for (const [name, label, step, max] of SAMPLE_INPUTS) {
    const input = node("input", "lion-sample-input");
    Object.assign(input, { type: "number", name, step, min: step, max, inputMode: "decimal" });
    input.addEventListener("input", () => {
      const value = Number(input.value);
      if (input.value !== "" && value > 0 && value <= Number(max)) {
        (view.store.sampleAt || (view.store.sampleAt = {}))[name] = value;
        for (const other of view.shell.list.querySelectorAll(`.lion-sample-input[name="${name}"]`)) other.value = input.value;
      }
    });
    input.addEventListener("keydown", (event) => {
      event.stopPropagation(); // JupyterLab's shortcuts never see them
      if (event.key === "Enter") {
        event.preventDefault();
        go();
      }
    });
    for (const type of ["keyup", "keypress"]) input.addEventListener(type, (event) => event.stopPropagation());
    const labelled = node("label", "lion-sample-label", `${label} `);
    labelled.append(input);
    group.append(labelled);
  }
  return group;
}

function sampleSettings(view, head) {
  // the values shown: the reader's, else the kernel's (an input being edited is left alone)
  const given = view.cstate.sample_at || {};
  for (const input of head.querySelectorAll(".lion-sample-input")) {
    const value = (view.store.sampleAt || {})[input.name] ?? given[input.name];
    const root = input.getRootNode();
    if (value !== undefined && root.activeElement !== input && Number(input.value) !== value) input.value = String(value);
  }
}
