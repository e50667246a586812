// ----- the prompt as the model reads it: "What the model read" --------------------------------
//
// Joined after lion_nb.js into one ES module (lion_nb.widgets.front.MODULE_FILES): it uses that
// file's helpers (node, button, named) and is reached from it at two places: the
// `prompt_tokens` op and `promptMarks`, called as each update settles. The kernel's side is
// lion_nb/widgets/prompt_view.py; the op and the action are in lion_nb/widgets/protocol.py; the
// static form (a saved notebook) is lion_nb/render/prompt_tokens_html.py, in the same classes.
//
// A panel under a reply (the chat view), an expanded inspector row, or the standalone view
// (kind "prompt", one part): a head with the count against the model's window, a legend, and
// every token a chip tinted by its message's role (scaffolding neutral, special tokens
// outlined), each message's chips in a group named for it. The chips are drawn a frame's worth
// at a time, so a long prompt opens at once.

const PROMPT_ROLES = ["system", "user", "assistant", "tool"];
const PROMPT_PER_FRAME = 700; // chips drawn per animation frame (the first batch at once)

function promptRoleClass(role) {
  if (role === null) return "lion-pt-none";
  return `lion-pt-${PROMPT_ROLES.includes(role) ? role : "other"}`;
}

function promptCount(n, win) {
  const fmt = (x) => x.toLocaleString("en-US");
  if (!win) return `${fmt(n)} token${n === 1 ? "" : "s"}`;
  const over = n > win ? ` — ${fmt(n - win)} more than the window holds` : "";
  return `${fmt(n)} of ${fmt(win)} tokens${over}`;
}

function promptStore(view) {
  // key -> the op of each open prompt view: a part drawn anew shows it again without asking
  if (!view.store.prompts) view.store.prompts = new Map();
  return view.store.prompts;
}

function promptPanels(view) {
  // key -> the panel shown (the page may make a part's object anew over the same element, so
  // the panel is the view's to keep, not the part's)
  if (!view.promptPanels) view.promptPanels = new Map();
  return view.promptPanels;
}

function shownPrompt(view, part, key) {
  const panel = promptPanels(view).get(key);
  return panel && part.el.contains(panel.el) ? panel : null;
}

// ----- the op --------------------------------------------------------------------------------
function promptOp(view, op) {
  const part = view.parts.get(op.key);
  promptStore(view).set(op.key, op);
  if (part) drawPrompt(view, part, op.key, op);
}

function promptPanel(view, part, key) {
  // the part's panel, made (empty: "Reading the prompt…") when it has none
  const open = shownPrompt(view, part, key);
  if (open) return open;
  // a part object made anew over the same element (the page's state redrawn) leaves the old
  // panel behind: one panel per part
  for (const old of part.el.querySelectorAll(".lion-read")) old.remove();
  const panel = { key, part, el: node("div", "lion-read") };
  panel.el.setAttribute("role", "region");
  named(panel.el, "What the model read");
  const host = part.el.querySelector(".lion-read-host") || (part.parent === undefined ? part.el.firstElementChild : part.el) || part.el;
  // under an inspector row's "What the model read" control (its request is just above it)
  const control = view.inspector ? part.el.querySelector(":scope > .lion-read-btn") : null;
  if (control) control.after(panel.el);
  else host.appendChild(panel.el);
  promptPanels(view).set(key, panel);
  return panel;
}

function promptHead(view, panel, count) {
  const head = node("div", "lion-read-head");
  head.append(node("span", "lion-read-title", "What the model read"));
  if (count !== undefined) {
    const said = node("span", "lion-read-count", count);
    said.setAttribute("role", "status");
    head.append(said);
  }
  if (view.kind !== "prompt") {
    const close = button("lion-act lion-read-close", "Close", "Close what the model read", () => closePrompt(view, panel));
    named(close, "Close what the model read");
    head.append(close);
  }
  return head;
}

function closePrompt(view, panel) {
  panel.el.remove();
  if (promptPanels(view).get(panel.key) === panel) promptPanels(view).delete(panel.key);
  promptStore(view).delete(panel.key);
  const part = view.parts.get(panel.key);
  if (part) promptButtonState(view, part, panel.key);
}

function readingPrompt(view, part, key) {
  const panel = promptPanel(view, part, key);
  panel.el.textContent = "";
  const note = node("p", "lion-read-note", "Reading the prompt…");
  note.setAttribute("role", "status");
  panel.el.append(promptHead(view, panel), note);
  view.model.send({ action: "prompt_tokens", key });
}

function drawPrompt(view, part, key, op) {
  const panel = promptPanel(view, part, key);
  panel.el.textContent = "";
  if (op.note !== undefined) {
    const note = node("p", "lion-read-note", op.note);
    note.setAttribute("role", "status");
    panel.el.append(promptHead(view, panel), note);
    return;
  }
  Object.assign(panel, { t: op.t, m: op.m, roles: op.roles, special: new Set(op.sp), drawn: 0, msg: null, group: null, alt: [] });
  promptParity(panel);
  panel.text = node("div", "lion-read-text");
  panel.text.setAttribute("role", "group");
  named(panel.text, "The prompt's tokens, tinted by message");
  panel.el.append(promptHead(view, panel, promptCount(op.t.length, op.window)), promptLegend(op.roles), panel.text);
  drawChips(panel);
  if (panel.drawn < panel.t.length) drawChipsSoon(panel);
  promptButtonState(view, part, key);
}

function promptParity(panel) {
  // two messages of one role in a row: the second takes the stronger step of its hue
  let last = null;
  let alt = false;
  panel.roles.forEach((role, i) => {
    alt = role === last && !alt;
    panel.alt[i] = alt;
    last = role;
  });
}

function promptLegend(roles) {
  const legend = node("span", "lion-read-legend");
  legend.setAttribute("role", "list");
  named(legend, "Legend");
  const seen = [...new Set(roles.map((r) => (PROMPT_ROLES.includes(r) ? r : "other")))];
  const items = seen.map((r) => [r, promptRoleClass(r)]);
  items.push(["template", "lion-pt-none"], ["special token", "lion-pt-none lion-pt-special"]);
  for (const [label, cls] of items) {
    const item = node("span", `lion-pt ${cls}`, label);
    item.setAttribute("role", "listitem");
    legend.append(item);
  }
  return legend;
}

// ----- the chips, a frame's worth at a time ---------------------------------------------------
function drawChipsSoon(panel) {
  requestAnimationFrame(() => {
    if (!panel.el.isConnected) return;
    drawChips(panel);
    if (panel.drawn < panel.t.length) drawChipsSoon(panel);
  });
}

function chipGroup(panel, message) {
  const group = document.createElement("span");
  group.className = "lion-pt-msg";
  group.setAttribute("role", "group");
  const role = message >= 0 ? panel.roles[message] || "message" : null;
  group.setAttribute("aria-label", role === null ? "Template scaffolding" : `Message ${message + 1} · ${role}`);
  return group;
}

function drawChips(panel) {
  const { t, m, special } = panel;
  const end = Math.min(t.length, panel.drawn + PROMPT_PER_FRAME);
  const frag = document.createDocumentFragment();
  let group = panel.group;
  for (let i = panel.drawn; i < end; i++) {
    if (m[i] !== panel.msg || !group) {
      panel.msg = m[i];
      group = chipGroup(panel, m[i]);
      frag.appendChild(group);
    }
    const role = m[i] >= 0 ? panel.roles[m[i]] || "" : null;
    const chip = document.createElement("span");
    let cls = `lion-pt ${promptRoleClass(role)}`;
    if (role !== null && panel.alt[m[i]]) cls += " lion-pt-alt";
    if (special.has(i)) cls += " lion-pt-special";
    chip.className = cls;
    chip.setAttribute("data-i", i);
    const text = t[i];
    chip.textContent = text.replace(/\n/g, "↵").replace(/\t/g, "⇥") || "∅";
    chip.title = `token ${i + 1}${special.has(i) ? " · special" : ""}`;
    group.appendChild(chip);
    if (text.includes("\n")) group.appendChild(document.createElement("br"));
  }
  panel.group = group;
  panel.drawn = end;
  panel.text.appendChild(frag);
}

// ----- the controls: "What the model read" on replies, inspector rows; the standalone view ----
function promptMarks(view) {
  const store = promptStore(view);
  for (const [key, part] of view.parts) {
    if (view.chat) replyControl(view, part, key);
    else if (view.inspector) rowPromptControl(view, part, key);
    if (shownPrompt(view, part, key)) continue;
    // a part drawn anew whose prompt view was open: drawn again from what the page has
    if (store.has(key)) drawPrompt(view, part, key, store.get(key));
    else if (view.kind === "prompt" && part.el.querySelector(".lion-read-host")) readingPrompt(view, part, key);
  }
}

function togglePrompt(view, key) {
  // the part as the page holds it now (a part drawn anew is a new object)
  const part = view.parts.get(key);
  if (!part) return;
  const shown = shownPrompt(view, part, key);
  if (shown) closePrompt(view, shown);
  else readingPrompt(view, part, key);
  promptButtonState(view, part, key);
}

function promptButtonState(view, part, key) {
  const control = part.el.querySelector(".lion-read-btn");
  if (control) control.setAttribute("aria-pressed", shownPrompt(view, part, key) ? "true" : "false");
}

function replyControl(view, part, key) {
  // on every reply card, as Copy is (a reply still streaming or not recorded: the kernel says
  // why there is nothing to show yet)
  const head = part.el.querySelector(
    ".lion-msg.lion-assistant > .lion-head, .lion-msg.lion-assistant > [data-slot=head] > .lion-head",
  );
  if (!head || head.querySelector(".lion-read-btn")) return;
  const control = button("lion-act lion-read-btn", "What the model read", "The prompt this reply was generated from, token by token, as the model read it",
    () => togglePrompt(view, control.closest(".lion-part").getAttribute("data-key")));
  head.insertBefore(control, head.querySelector(".lion-copy-msg"));
  promptButtonState(view, part, key);
}

function rowPromptControl(view, part, key) {
  const payload = /^d\d+$/.test(key) ? part.el.querySelector(":scope > .lion-payload") : null;
  if (!payload || part.el.querySelector(".lion-read-btn")) return;
  const control = button("lion-act lion-read-btn", "What the model read, token by token", "The request above as the model read it: its tokens, tinted by message",
    () => togglePrompt(view, key));
  named(control, `What the model read for message ${key.slice(1)}, token by token`);
  payload.after(control);
  promptButtonState(view, part, key);
}
