// ----- sampling, explained: what the samplers leave of a token's alternatives -----
//
// Joined after tokens.js into one ES module (lion_nb.widgets.front.MODULE_FILES): it uses
// lion_nb.js's helpers (node, button, named) and tokens.js's (shownToken, percentOf,
// focusToken), and is reached from them at three places: the `sampler` op, the opener in a
// token's pop-up (samplingOpener) and the surprise strip's chart (stripChart, drawStripScale).
// The kernel's side is lion_nb/widgets/sampling_panel.py (the settings the panel starts at).
//
// sampleDistribution is a port of lion_nb.sampling.sample_distribution (same steps, same
// order, the same exact sum: tests/test_sampling_port.py compares them on random
// distributions). The panel redraws from it in the page on every slider move: no kernel, no
// model (benchmark B17).

// llama.cpp's defaults, for what the model does not say (common/common.h)
const SAMPLING_DEFAULTS = { temperature: 0.8, top_k: 40, top_p: 0.95, min_p: 0.05 };
const SAMPLING_REACHED = 1e-9; // sampling.py's _REACHED: rounding never moves a token across

// ----- the port ------------------------------------------------------------------------------
function exactSum(values) {
  // math.fsum: Shewchuk's partials, rounded once (CPython's mathmodule.c, half-way case too)
  const partials = [];
  for (let x of values) {
    let n = 0;
    for (let j = 0; j < partials.length; j++) {
      let y = partials[j];
      if (Math.abs(x) < Math.abs(y)) [x, y] = [y, x];
      const hi = x + y;
      const lo = y - (hi - x);
      if (lo) partials[n++] = lo;
      x = hi;
    }
    partials.length = n;
    partials.push(x);
  }
  let n = partials.length;
  if (!n) return 0;
  let hi = partials[--n];
  let lo = 0;
  while (n > 0) {
    const x = hi;
    const y = partials[--n];
    hi = x + y;
    lo = y - (hi - x);
    if (lo) break;
  }
  if (n > 0 && ((lo < 0 && partials[n - 1] < 0) || (lo > 0 && partials[n - 1] > 0))) {
    const y = lo * 2;
    const x = hi + y;
    if (y === x - hi) hi = x;
  }
  return hi;
}

function softmaxOf(logprobs, alive, temperature) {
  let top = -Infinity;
  logprobs.forEach((lp, i) => { if (alive[i] && lp > top) top = lp; });
  const weights = logprobs.map((lp, i) => (alive[i] ? Math.exp((lp - top) / temperature) : 0));
  const total = exactSum(weights);
  return weights.map((w) => w / total);
}

function renormalised(probs, alive) {
  const total = exactSum(probs.filter((_, i) => alive[i]));
  return probs.map((p, i) => (alive[i] ? p / total : 0));
}

function cutAway(state, i, step) {
  state.alive[i] = false;
  state.cutBy[i] = step;
}

function applyTemperature(state, temperature) {
  const { logprobs, alive, order } = state;
  if (temperature === 0) {
    const best = order.find((i) => alive[i]);
    alive.forEach((on, i) => { if (on && i !== best) cutAway(state, i, "temperature 0"); });
    return alive.map((on) => (on ? 1 : 0));
  }
  return softmaxOf(logprobs, alive, temperature);
}

function applyTopK(state, k) {
  if (!(k > 0)) return false;
  const survivors = state.order.filter((i) => state.alive[i]);
  survivors.slice(k).forEach((i) => cutAway(state, i, "top-k"));
  return survivors.length > k;
}

function applyTopP(state, probs, p) {
  if (p >= 1) return false;
  let reached = false;
  let cut = false;
  let running = 0;
  for (const i of state.order) {
    if (!state.alive[i]) continue;
    if (reached) {
      cutAway(state, i, "top-p");
      cut = true;
      continue;
    }
    running += probs[i];
    reached = running >= p * (1 - SAMPLING_REACHED);
  }
  return cut;
}

function applyMinP(state, probs, m) {
  if (!(m > 0)) return false;
  let largest = 0;
  probs.forEach((p, i) => { if (state.alive[i] && p > largest) largest = p; });
  const floor = m * largest * (1 - SAMPLING_REACHED);
  let cut = false;
  for (const i of state.order) {
    if (state.alive[i] && probs[i] < floor) {
      cutAway(state, i, "min-p");
      cut = true;
    }
  }
  return cut;
}

// top: [text, logprob] pairs, most likely first (a token's .top); the settings as
// sample_distribution takes them (null or undefined: no cut). Returns {probs, cutBy}: each
// alternative's probability in the order given, and the step that cut it ("" for a survivor).
export function sampleDistribution(top, settings = {}) {
  const { temperature = 1, top_k = null, top_p = null, min_p = null, temperature_first = false } = settings;
  const logprobs = top.map((a) => Math.min(Number(a[1]), 0));
  const state = {
    logprobs,
    alive: logprobs.map(() => true),
    cutBy: logprobs.map(() => ""),
    order: logprobs.map((_, i) => i).sort((a, b) => (logprobs[b] === logprobs[a] ? 0 : logprobs[b] - logprobs[a])),
  };
  if (!logprobs.length || Math.max(...logprobs) === -Infinity) return { probs: logprobs.map(() => 0), cutBy: state.cutBy };
  let probs = softmaxOf(logprobs, state.alive, 1);
  if (temperature_first) probs = applyTemperature(state, temperature);
  if (top_k != null && applyTopK(state, top_k)) probs = renormalised(probs, state.alive);
  if (top_p != null && applyTopP(state, probs, top_p)) probs = renormalised(probs, state.alive);
  if (min_p != null && applyMinP(state, probs, min_p)) probs = renormalised(probs, state.alive);
  if (!temperature_first) probs = applyTemperature(state, temperature);
  return { probs, cutBy: state.cutBy };
}

function entropyOf(probs) {
  // in nats, over the probabilities given
  let h = 0;
  for (const p of probs) if (p > 0) h -= p * Math.log(p);
  return h;
}

// ----- the settings the panel starts at (the `sampler` op) -----------------------------------
function samplerStore(view) {
  if (!view.store.sampler) view.store.sampler = new Map(); // key -> the sampler op
  return view.store.sampler;
}

function samplerOp(view, op) {
  samplerStore(view).set(op.key, op);
  for (const part of view.parts.values()) {
    const open = part.tokens && part.tokens.sampling;
    if (!open || part.tokens.key !== op.key) continue;
    // a reader who moved a slider before the answer came keeps their settings; the note
    // names the model's own instead of saying it is still asking for them
    if (open.moved) noteSettings(open, op, false);
    else startAt(open, op);
  }
}

function askSampler(view, key) {
  const asked = view.samplerAsked || (view.samplerAsked = new Set());
  if (samplerStore(view).has(key) || asked.has(key)) return;
  asked.add(key);
  view.model.send({ action: "sampler", key });
}

// ----- the opener in a token's pop-up ------------------------------------------------------------
function samplingOpener(view, panel, i) {
  askSampler(view, panel.key); // asked now, so the settings are here by the click
  const opener = button("lion-act lion-sampling-open", "How sampling chose this",
    "Sliders for temperature, top-k, top-p and min-p over this token's stored alternatives, redrawn at once",
    () => openSampling(view, panel, i));
  named(opener, `How sampling chose ${shownToken(panel.t[i])}: temperature, top-k, top-p, min-p`);
  return opener;
}

// ----- the panel ---------------------------------------------------------------------------------
const SLIDERS = [
  // name, label, min, max, step, what "no cut" is, its words
  ["temperature", "Temperature", 0, 2, 0.05, null, ""],
  ["top_k", "Top-k", 0, 40, 1, 0, "off"],
  ["top_p", "Top-p", 0, 1, 0.01, 1, "off"],
  ["min_p", "Min-p", 0, 1, 0.01, 0, "off"],
];

const ORDERS = [
  [false, "llama.cpp's order", "top-k, top-p, min-p, then temperature"],
  [true, "Temperature first", "as Hugging Face transformers: temperature, then the cuts"],
];

function openSampling(view, panel, i) {
  const alts = panel.top[i];
  if (!alts || !alts.length) return;
  if (panel.sampling) panel.sampling.el.remove();
  const chosen = panel.t[i];
  const s = {
    panel, index: i, chosen, moved: false,
    top: alts.map(([text, p]) => [text, p > 0 ? Math.log(p) : -Infinity]),
    values: { ...SAMPLING_DEFAULTS }, inputs: {}, outputs: {}, columns: [],
    el: node("section", "lion-sampling"),
  };
  named(s.el, `How sampling chose ${shownToken(chosen)}, token ${i + 1}`);
  s.el.append(samplingHead(view, s), node("p", "lion-sampling-note"), samplingSliders(s), samplingOrders(s));
  s.said = node("p", "lion-sampling-said");
  s.said.setAttribute("role", "status");
  s.el.append(s.said);
  s.el.addEventListener("keydown", (event) => {
    event.stopPropagation(); // JupyterLab's shortcuts never see them
    if (event.key === "Escape") closeSampling(panel, true);
  });
  panel.el.insertBefore(s.el, panel.pop);
  panel.sampling = s;
  panel.pop.hidden = true;
  startAt(s, samplerStore(view).get(panel.key) || null);
  s.inputs.temperature.focus();
  return s;
}

function samplingHead(view, s) {
  const head = node("div", "lion-sampling-head");
  const title = node("span", "lion-sampling-title", `How sampling chose “${shownToken(s.chosen)}”`);
  const where = node("span", "lion-sampling-where", ` · token ${s.index + 1} of ${s.panel.n}`);
  const close = button("lion-act lion-sampling-close", "Close", "Close the sampling panel (Esc)", () => closeSampling(s.panel, true));
  named(close, "Close the sampling panel");
  head.append(title, where, close);
  return head;
}

function closeSampling(panel, refocus) {
  const s = panel.sampling;
  if (!s) return;
  s.el.remove();
  panel.sampling = null;
  if (refocus) focusToken(panel, s.index);
}

function samplingSliders(s) {
  const box = node("div", "lion-sampling-sliders");
  const topK = Math.max(SAMPLING_DEFAULTS.top_k, s.top.length);
  for (const [name, label, min, max, step] of SLIDERS) {
    const row = node("label", "lion-sampling-slider");
    const input = node("input", "lion-sampling-input");
    input.type = "range";
    input.min = String(min);
    input.max = String(name === "top_k" ? topK : max);
    input.step = String(step);
    input.setAttribute("data-setting", name);
    const out = node("output", "lion-sampling-value");
    out.setAttribute("aria-hidden", "true"); // the slider's aria-valuetext says it
    input.addEventListener("input", () => {
      s.values[name] = Number(input.value);
      s.moved = true;
      redrawSampling(s);
    });
    row.append(node("span", "lion-sampling-label", label), input, out);
    s.inputs[name] = input;
    s.outputs[name] = out;
    box.append(row);
  }
  return box;
}

function samplingOrders(s) {
  const box = node("div", "lion-sampling-orders");
  ORDERS.forEach(([first, name, how], k) => {
    const col = node("div", "lion-sampling-order");
    const id = `lion-sampling-${Math.random().toString(36).slice(2)}-${k}`;
    const head = node("div", "lion-sampling-order-head");
    head.id = id;
    head.append(node("span", "lion-sampling-order-name", name), node("span", "lion-sampling-order-how", ` (${how})`));
    const list = node("ul", "lion-sampling-bars");
    list.setAttribute("aria-labelledby", id);
    const rows = s.top.map(([text]) => samplingRow(text, text === s.chosen));
    list.append(...rows.map((r) => r.el));
    const tally = node("div", "lion-sampling-tally");
    col.append(head, list, tally);
    box.append(col);
    s.columns.push({ first, name, rows, tally });
  });
  return box;
}

function samplingRow(text, isChosen) {
  const el = node("li", "lion-sampling-row");
  const bar = node("span", "lion-tok-bar");
  const fill = node("span", "lion-tok-bar-fill");
  bar.append(fill);
  const label = node("span", "lion-sampling-text", shownToken(text));
  const p = node("span", "lion-sampling-p");
  el.append(label, bar, p);
  if (isChosen) el.classList.add("lion-sampling-chosen");
  return { el, fill, p, text, isChosen };
}

function startAt(s, op) {
  // the model's own settings (the kernel's `sampler` op), else llama.cpp's defaults
  for (const [name] of SLIDERS) {
    const value = op && op[name] != null ? op[name] : SAMPLING_DEFAULTS[name];
    s.values[name] = value;
    if (value > Number(s.inputs[name].max)) s.inputs[name].max = String(value); // a top-k above 40
    s.inputs[name].value = String(value);
  }
  noteSettings(s, op, true);
  redrawSampling(s);
}

function noteSettings(s, op, applied) {
  // what the sliders started at: the model's own settings where it said them
  const given = op ? op.given || [] : [];
  const own = given.map((n) => `${n.replace("_", "-")} ${op[n]}`);
  const defaults = "llama.cpp's defaults";
  let start;
  if (!op) start = `${defaults} (asking the model for its own…)`;
  else if (!own.length) start = `${defaults} (the model does not say its own)`;
  else if (!applied) start = `${defaults}; the model's own are ${own.join(", ")} (not applied: you had moved a slider)`;
  else if (own.length === SLIDERS.length) start = "the model's own settings";
  else start = `the model's own ${own.join(", ")}; ${defaults} for the rest`;
  const missing = s.top.some(([text]) => text === s.chosen) ? ""
    : ` “${shownToken(s.chosen)}”, the token the model chose, is not among them: it was sampled from beyond them.`;
  s.el.querySelector(".lion-sampling-note").textContent =
    `Over the ${s.top.length} stored alternatives only: the model's other tokens were not stored.${missing} ` +
    `Starting at ${start}.`;
}

function settingWords(name, value) {
  const off = SLIDERS.find((row) => row[0] === name);
  if (off[5] !== null && value === off[5]) return off[6];
  return name === "top_k" ? String(value) : value.toFixed(2);
}

function redrawSampling(s) {
  const v = s.values;
  for (const [name] of SLIDERS) {
    const words = settingWords(name, v[name]);
    s.outputs[name].textContent = words;
    s.inputs[name].setAttribute("aria-valuetext", words);
  }
  const kept = s.columns.map((col) => {
    const { probs, cutBy } = sampleDistribution(s.top, { ...v, temperature_first: col.first });
    let alive = 0;
    col.rows.forEach((row, k) => {
      const cut = cutBy[k] !== "";
      if (!cut) alive++;
      row.fill.style.width = `${(probs[k] * 100).toFixed(1)}%`;
      row.p.textContent = cut ? `cut · ${cutBy[k]}` : percentOf(probs[k]);
      row.el.classList.toggle("lion-sampling-cut", cut);
      const whose = row.isChosen ? " (the token the model chose)" : "";
      row.el.setAttribute("aria-label", `${shownToken(row.text)}${whose}: ${cut ? `cut by ${cutBy[k]}` : percentOf(probs[k])}`);
    });
    const h = entropyOf(probs);
    col.tally.textContent = `${alive} of ${col.rows.length} survive · entropy ${h.toFixed(2)} nats (over the stored alternatives)`;
    return alive;
  });
  s.said.textContent = kept[0] === kept[1]
    ? `${kept[0]} of ${s.top.length} survive in both orders.`
    : `The order changes what survives: ${kept[0]} in llama.cpp's order, ${kept[1]} with temperature first.`;
}

// ----- the surprise strip's chart: axes, labels, the entropy line ------------------------------
function stripChart(panel) {
  // the strip with its axes: a key above, the scale at the left, the tokens below
  const chart = node("div", "lion-tokens-chart");
  const key = node("div", "lion-tokens-chart-key");
  const swatch = (cls) => {
    const el = node("span", `lion-tokens-swatch ${cls}`);
    el.setAttribute("aria-hidden", "true");
    return el;
  };
  const surprise = node("span", "lion-tokens-key-surprise");
  surprise.append(swatch("lion-tokens-swatch-surprise"), "surprise −ln p of the token chosen (bars)");
  const entropy = node("span", "lion-tokens-key-entropy");
  entropy.append(swatch("lion-tokens-swatch-entropy"), "entropy over its stored alternatives (line)");
  key.append(surprise, entropy, node("span", "lion-tokens-key-unit", "in nats"));
  const body = node("div", "lion-tokens-chart-body");
  const y = node("div", "lion-tokens-y");
  panel.yTop = node("span", "lion-tokens-y-top", "3");
  y.append(panel.yTop, node("span", "lion-tokens-y-zero", "0"));
  body.append(y, panel.strip);
  const x = node("div", "lion-tokens-x");
  panel.xEnd = node("span", "lion-tokens-x-end", "");
  x.append(node("span", "lion-tokens-x-start", "token 1"), panel.xEnd);
  chart.append(key, body, x);
  return chart;
}

function drawStripScale(panel, ctx, top, step, height) {
  // the scale's words, and each step's entropy as a line over the bars (a gap where none
  // was stored: -1)
  if (panel.yTop) panel.yTop.textContent = `${(top / 100).toFixed(top >= 1000 ? 0 : 1)}`;
  if (panel.xEnd) panel.xEnd.textContent = `token ${panel.n}`;
  const e = panel.e || [];
  ctx.strokeStyle = getComputedStyle(panel.strip).getPropertyValue("--lion-tok-entropy") || "#1976d2";
  ctx.lineWidth = 1.5;
  ctx.beginPath();
  let drawing = false;
  for (let i = 0; i < panel.n; i++) {
    if (!(e[i] >= 0)) {
      drawing = false;
      continue;
    }
    const x = (i + 0.5) * step;
    const y = height - 1 - (Math.min(e[i], top) / top) * (height - 2);
    if (drawing) ctx.lineTo(x, y);
    else ctx.moveTo(x, y);
    drawing = true;
  }
  ctx.stroke();
}
