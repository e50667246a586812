// lion_nb's live views in the page: one ES module for anywidget (no build step, no framework).
//
// The kernel decides what to show; this module turns its ordered ops into DOM updates, keys
// into page actions, and owns focus, draft and scroll. Every HTML string it inserts was
// rendered and sanitized by the kernel (lion_nb.render); model text otherwise reaches the DOM
// only as textContent. The protocol (ops, actions, synced traits, the sequence rule) is defined
// once, in lion_nb/widgets/protocol.py; the names this module needs come from the synced trait
// `protocol`, and a test checks the op table (OPS) and the actions sent here against it.
//
// Parts: a dispatch table of ops (OPS), and small factories: the shell, the prompt box, the
// comparison panel, the transcript (parts, message controls, marks) and the message loop.

const STORE = new Map(); // uid -> what survives a view drawn anew: draft, scroll, focus

export function fnv(text) {
  // 32-bit FNV-1a over UTF-16 code units (lion_nb.widgets.channel.fingerprint)
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

function node(tag, cls, text) {
  const el = document.createElement(tag);
  if (cls) el.className = cls;
  if (text !== undefined) el.textContent = text;
  return el;
}

function button(cls, text, title, onClick) {
  const el = node("button", cls, text);
  el.type = "button";
  if (title) el.title = title;
  if (onClick) el.addEventListener("click", onClick);
  return el;
}

function named(el, name) {
  // the accessible name, with its context ("Copy reply 3"); the visible text stays short
  if (el.getAttribute("aria-label") !== name) el.setAttribute("aria-label", name);
  return el;
}

function setDisabled(el, off, refuge) {
  // Chrome drops the focus of a control that is disabled to the page's body, which reads as the
  // reader leaving the view (a "leave": the saved output is refreshed and the notebook draws the
  // view anew, under the reader's next click): the focus goes to ``refuge``, in the view, first
  const disable = Boolean(off);
  if (disable && !el.disabled && refuge && el.getRootNode().activeElement === el) refuge.focus({ preventScroll: true });
  el.disabled = disable;
}

async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch (_err) {
    // no clipboard API or no permission: a selected textarea and execCommand("copy")
  }
  const area = node("textarea", "lion-copy-buffer");
  area.value = text;
  area.setAttribute("readonly", "");
  area.style.position = "fixed";
  area.style.opacity = "0";
  document.body.appendChild(area);
  area.select();
  let ok = false;
  try {
    ok = document.execCommand("copy");
  } catch (_err) {
    ok = false;
  }
  area.remove();
  return ok;
}

function flash(el, ok) {
  el.textContent = ok ? "Copied" : "Copy failed";
  el.classList.toggle("lion-copied", ok);
  setTimeout(() => {
    el.textContent = "Copy";
    el.classList.remove("lion-copied");
  }, 1200);
}

function slot(part, name) {
  return part.el.querySelector(`[data-slot="${name}"]`);
}

// ----- the ops (lion_nb/widgets/protocol.py OPS), by name -----------------------------------
const onPart = (fn) => (view, op) => {
  const part = view.parts.get(op.key);
  if (part) fn(view, op, part);
};

const OPS = {
  put: (view, op) => view.transcript.put(op),
  drop: onPart((view, op, part) => {
    view.reveal.stop(part);
    forgetInside(view, part);
    part.el.remove();
    view.parts.delete(op.key);
  }),
  add: onPart((view, op, part) => {
    view.reveal.mark(part);
    const frozen = slot(part, "frozen");
    frozen.insertAdjacentHTML("beforeend", op.html); // sanitized by the kernel
    keepTail(slot(part, "tail"), op.keep, op.text);
    view.transcript.decorate(frozen);
    part.html = null;
  }),
  tail: onPart((view, op, part) => {
    view.reveal.mark(part);
    view.transcript.tail(part, op);
    part.html = null;
  }),
  slot: onPart((view, op, part) => {
    const el = slot(part, op.slot);
    el.innerHTML = op.html; // sanitized by the kernel
    view.transcript.decorate(el);
    part.html = null;
  }),
  seal: onPart((view, op, part) => {
    view.reveal.stop(part); // the final text, exact, the moment the reply ends
    view.transcript.seal(part, op);
  }),
  attrs: onPart((view, op, part) => setAttrs(part, op)),
  chrome: (view, op) => {
    Object.assign(view.cstate, op.values);
    if (op.values.busy === false) view.reveal.ended(); // the run's last text shows exact
    view.chrome();
  },
  draft: (view, op) => {
    // a failed Send's text comes back (restore), unless the user has typed on since
    if (op.restore && view.store.draft.trim()) return;
    if (view.promptBox) view.promptBox.prompt.value = op.text;
    view.store.draft = op.text;
  },
  clip: (view, op) => {
    const asked = view.wantClip.get(op.key);
    if (!asked) return;
    view.wantClip.delete(op.key);
    copyText(op.text).then((ok) => flash(asked, ok));
  },
  tokens: (view, op) => tokenOp(view, op), // tokens.js
  sampler: (view, op) => samplerOp(view, op), // sampling.js
  tree: (view, op) => treeOp(view, op), // tree.js
  prompt_tokens: (view, op) => promptOp(view, op), // prompt.js
};

// ----- the shell: title, transcript list, placeholder, status line, gauge --------------------
function makeShell(model, kind) {
  const root = node("div", `lion-view lion-front lion-${kind}`);
  root.setAttribute("data-lm-suppress-shortcuts", "true");
  const scroller = node("div", "lion-scroll");
  const list = node("div", "lion-transcript");
  const empty = node("div", "lion-placeholder");
  empty.append(
    node("div", "lion-placeholder-title", model.get("title") || "lion_nb"),
    node("div", "lion-placeholder-hint", model.get("hint")),
  );
  const jump = button("lion-jump", "Jump to latest ↓");
  jump.hidden = true;
  const status = node("div", "lion-view-statusline");
  status.setAttribute("role", "status");
  const gauge = node("div", "lion-gauge");
  gauge.hidden = true;
  scroller.append(list);
  return {
    root, scroller, list, empty, jump, status, gauge,
    title: node("div", "lion-title", model.get("title")),
    error: node("div", "lion-view-errors"),
  };
}

// ----- the prompt box: the textarea, Send, Stop, Clear, and their keys -----------------------
function makePromptBox(view) {
  const { model, store } = view;
  const controls = node("div", "lion-controls");
  const prompt = node("textarea", "lion-prompt");
  prompt.rows = 3;
  prompt.placeholder = model.get("placeholder");
  prompt.setAttribute("aria-label", "Message");
  prompt.value = store.draft;
  const stop = () => view.gone || model.send({ action: "stop" });
  const submit = () => {
    const text = prompt.value;
    if (!text.trim() || view.gone) return;
    if (view.cstate.busy) {
      view.shell.status.textContent = "A reply is running: Esc or Stop ends it; your message stays here.";
      return;
    }
    model.send({ action: "send", text });
    prompt.value = "";
    store.draft = "";
  };
  const send = button("lion-send", "Send", "Send (Enter)", submit);
  const stopButton = button("lion-stop", "Stop", "Stop the running reply (Esc)", stop);
  const clear = button("lion-clear", "Clear", "Start afresh (the conversation so far stays an alternative; a running reply is stopped first)",
    () => model.send({ action: "clear" }));
  const buttons = node("div", "lion-buttons");
  buttons.append(send, stopButton, clear);
  controls.append(prompt, buttons);
  promptKeys(prompt, store, submit, stop);
  return {
    el: controls,
    prompt,
    chrome(cstate) {
      setDisabled(send, cstate.busy, prompt);
      setDisabled(stopButton, !cstate.can_stop, prompt);
    },
  };
}

function promptKeys(prompt, store, submit, stop) {
  const keep = (event) => event.stopPropagation(); // JupyterLab's shortcuts never see them
  prompt.addEventListener("keydown", (event) => {
    event.stopPropagation();
    if (event.isComposing || event.keyCode === 229) return;
    const plain = !event.shiftKey && !event.altKey && !event.ctrlKey && !event.metaKey;
    if (event.key === "Enter" && plain) {
      event.preventDefault();
      submit();
    } else if (event.key === "Escape") {
      event.preventDefault();
      stop();
    }
  });
  prompt.addEventListener("keyup", keep);
  prompt.addEventListener("keypress", keep);
  prompt.addEventListener("input", () => {
    store.draft = prompt.value;
  });
  prompt.addEventListener("focus", () => {
    store.focused = true;
  });
  prompt.addEventListener("blur", () => {
    store.focused = false;
    store.selection = [prompt.selectionStart, prompt.selectionEnd];
  });
}

// ----- the comparison panel: the CompareView a "Compare" control opened ----------------------
function makeComparePanel(model) {
  const panel = node("div", "lion-compare-panel");
  panel.hidden = true;
  const head = node("div", "lion-compare-panel-head");
  const close = button("lion-act", "Close", "Close the comparison", () => model.send({ action: "compare_close" }));
  named(close, "Close the comparison");
  head.append(node("span", "lion-compare-panel-title", "Comparing alternatives"), close);
  const body = node("div", "lion-compare-panel-body");
  panel.append(head, body);
  let shown = null;
  return {
    el: panel,
    show(html) {
      if (shown !== html) {
        body.innerHTML = html; // sanitized by the kernel (render.compare)
        shown = html;
      }
      panel.hidden = !html;
    },
  };
}

// ----- message controls: copy, regenerate, edit (added to the kernel's cards) ----------------
function addCopyControls(view, container) {
  for (const head of container.querySelectorAll(".lion-msg > .lion-head, [data-slot=head] > .lion-head")) {
    if (head.querySelector(".lion-copy")) continue;
    const copy = button("lion-copy lion-copy-msg", "Copy", "Copy this message as Markdown", () => {
      const part = copy.closest(".lion-part");
      if (!part) return;
      const key = part.getAttribute("data-key");
      view.wantClip.set(key, copy);
      view.model.send({ action: "copy", key });
    });
    head.appendChild(copy);
  }
}

function addTurnControls(view, container) {
  const { model } = view;
  for (const card of container.querySelectorAll(".lion-msg[data-id]")) {
    const head = card.querySelector(".lion-head");
    if (!head || head.querySelector(".lion-act")) continue;
    const key = card.getAttribute("data-id");
    if (card.classList.contains("lion-assistant")) {
      head.appendChild(button("lion-act lion-regenerate", "Regenerate", "Answer this turn again (on a new alternative)",
        () => model.send({ action: "regenerate", key })));
    } else if (card.classList.contains("lion-user")) {
      head.appendChild(button("lion-act lion-edit-msg", "Edit", "Edit this message and send it again (Enter sends, Esc cancels)",
        () => editInPlace(view, card, key)));
    }
  }
}

function addCodeCopy(container) {
  for (const pre of container.querySelectorAll("pre.lion-code")) {
    if (pre.querySelector(".lion-copy")) continue;
    const copy = button("lion-copy lion-copy-code", "Copy", "Copy this code", async () => {
      const code = pre.querySelector("code");
      flash(copy, await copyText((code || pre).textContent));
    });
    named(copy, "Copy code");
    pre.appendChild(copy);
  }
}

function editInPlace(view, card, key) {
  const body = card.querySelector(".lion-body");
  if (!body || card.querySelector(".lion-edit")) return;
  const box = node("textarea", "lion-prompt lion-edit");
  box.value = body.innerText.trim();
  box.rows = Math.min(8, box.value.split("\n").length + 1);
  box.setAttribute("aria-label", "Edit the message (Enter sends, Esc cancels)");
  const { bar, save, cancel } = editButtons();
  body.hidden = true;
  body.after(box, bar);
  box.focus();
  const done = () => {
    box.remove();
    bar.remove();
    body.hidden = false;
  };
  const send = () => {
    const text = box.value;
    done();
    if (text.trim()) view.model.send({ action: "edit", key, text });
  };
  save.addEventListener("click", send);
  cancel.addEventListener("click", done);
  box.addEventListener("keydown", (event) => {
    event.stopPropagation();
    if (event.isComposing) return;
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      send();
    } else if (event.key === "Escape") {
      event.preventDefault();
      done();
    }
  });
  box.addEventListener("keyup", (event) => event.stopPropagation());
}

function editButtons() {
  // what the edit box's keys do, as buttons that say so (the keys are not only in its label)
  const bar = node("div", "lion-edit-actions");
  const save = button("lion-act lion-edit-save", "Save (Enter)", "Send the edited message again, on a new alternative (the original stays: ‹ ›)");
  const cancel = button("lion-act lion-edit-cancel", "Cancel (Esc)", "Leave the message as it was");
  bar.append(save, cancel, node("span", "lion-meta lion-edit-hint", "Shift+Enter: new line"));
  return { bar, save, cancel };
}

const NOUN = { assistant: "reply", user: "message", system: "system message", action_request: "tool call", action_response: "tool result" };

function nameControls(list) {
  // every control's accessible name says which message it acts on: "Copy reply 3"
  const count = {};
  for (const card of list.querySelectorAll(".lion-msg")) {
    const role = card.getAttribute("data-role") || "message";
    count[role] = (count[role] || 0) + 1;
    const what = `${NOUN[role] || `${role} message`} ${count[role]}`;
    const head = card.querySelector(".lion-head");
    if (!head) continue;
    const label = (sel, name) => {
      for (const el of head.querySelectorAll(sel)) named(el, name);
    };
    label(".lion-copy-msg", `Copy ${what}`);
    label(".lion-regenerate", `Regenerate ${what}`);
    // the visible words first ("Regenerate at temperature 0.8"): a name holds its label
    for (const el of head.querySelectorAll(".lion-regenerate-warm")) named(el, `${el.textContent} (${what})`);
    label(".lion-edit-msg", `Edit ${what}`);
    label(".lion-cut", `Continue ${what}`);
    label(".lion-compare-alt", `Compare ${what} with the previous alternative`);
    label(".lion-tokens-btn", `Tokens of ${what}`); // tokens.js
    label(".lion-sample-btn", `Sample ${what} 5 times`);
    label(".lion-read-btn", `What the model read for ${what}`); // prompt.js
  }
}

// ----- marks: the ‹ n/of › switchers, Continue, the context gauge and cut notice -------------
function altSwitch(model, key, n, of) {
  const sw = node("span", "lion-switch");
  const prev = named(button("lion-act", "‹", "Previous alternative", () => model.send({ action: "switch", key, step: -1 })), "Previous alternative");
  const next = named(button("lion-act", "›", "Next alternative", () => model.send({ action: "switch", key, step: 1 })), "Next alternative");
  const pos = node("span", "lion-switch-pos", `${n}/${of}`);
  pos.title = `alternative ${n} of ${of}`;
  const compare = button("lion-act lion-compare-alt", "Compare", "Compare this alternative with the previous one (shown below)",
    () => model.send({ action: "compare", key }));
  sw.append(prev, pos, next, compare);
  return sw;
}

function messageMarks(view) {
  const { model, cstate } = view;
  const alts = cstate.alt_marks || {};
  const cut = new Set(cstate.cut_marks || []);
  for (const card of view.shell.list.querySelectorAll(".lion-msg[data-id]")) {
    const key = card.getAttribute("data-id");
    const head = card.querySelector(".lion-head");
    if (!head) continue;
    // drawn again only when they change (a live region would announce them each time)
    const want = `${alts[key] || ""}|${cut.has(key)}`;
    if (head.__marks === want) continue;
    head.__marks = want;
    for (const old of head.querySelectorAll(".lion-switch, .lion-cut")) old.remove();
    if (alts[key]) {
      // beside the message's own controls, not before its role label
      head.insertBefore(altSwitch(model, key, ...alts[key]), head.querySelector(".lion-copy-msg"));
    }
    if (cut.has(key)) {
      // the "truncated" badge is in the card (render/html.py); Continue goes with the
      // message's other controls, offered only while the reply is not continued
      const more = button("lion-act lion-cut", "Continue", "Ask for the rest of this reply",
        () => model.send({ action: "continue", key }));
      head.appendChild(more);
    }
  }
}

function samplingMarks(view) {
  // at temperature 0 Regenerate gives the same reply: each reply's Regenerate says so, and a
  // control beside it samples at the temperature the kernel offers (chrome: sampling)
  const warm = (view.cstate.sampling || {}).warm;
  for (const regen of view.shell.list.querySelectorAll(".lion-msg .lion-regenerate")) {
    const card = regen.closest(".lion-msg[data-id]");
    let other = regen.nextElementSibling;
    if (!other || !other.classList.contains("lion-regenerate-warm")) other = null;
    const says = warm === undefined ? "Answer this turn again (on a new alternative)"
      : "At temperature 0 the model gives the same reply again (on a new alternative)";
    if (regen.title !== says) regen.title = says;
    if (warm === undefined || !card) {
      if (other) other.remove();
      continue;
    }
    if (other && other.__warm === warm) continue;
    if (other) other.remove();
    const key = card.getAttribute("data-id");
    const at = button("lion-act lion-regenerate-warm", `Regenerate at temperature ${warm}`,
      `Sample another reply at temperature ${warm} (on a new alternative)`,
      () => view.model.send({ action: "regenerate", key, temperature: warm }));
    at.__warm = warm;
    regen.after(at);
  }
}

function contextMarks(view) {
  // the gauge of what the next turn sends against the window, and the notice where the last
  // request was cut (kernel state: ctx; the notice's HTML and the gauge's words are rendered by
  // the kernel: render/html.py)
  const { list, gauge } = view.shell;
  const ctx = view.cstate.ctx || {};
  const at = ctx.cut && ctx.note ? view.parts.get(ctx.cut) : null;
  const old = list.querySelectorAll(".lion-ctx-cut-part");
  const same = at && old.length === 1 && old[0].__note === ctx.note && old[0].nextSibling === at.el;
  if (!same) {
    for (const el of old) el.remove();
    if (at) {
      const note = node("div", "lion-ctx-cut-part");
      note.innerHTML = view.cstate.ctx.note; // the kernel rendered it (render/html.py)
      note.__note = ctx.note;
      list.insertBefore(note, at.el);
    }
  }
  gauge.hidden = !ctx.w;
  if (!ctx.w) return;
  gauge.textContent = "";
  const share = Math.min(1, ctx.t / ctx.w);
  const bar = node("span", "lion-gauge-bar");
  const fill = node("span", "lion-gauge-fill");
  fill.style.width = `${Math.round(share * 100)}%`;
  if (share > 0.75) fill.classList.add("lion-gauge-high");
  bar.append(fill);
  gauge.append(bar, node("span", "lion-gauge-text", ctx.text || ""));
  gauge.title = ctx.text || "";
}

// ----- the flow view: its Stop button and each node row's open/close control ---------------
function makeFlowStop(view) {
  const bar = node("div", "lion-flow-top");
  const stop = button("lion-flow-stop", "Stop", "Cancel the flow's run()", () => view.model.send({ action: "stop" }));
  named(stop, "Stop the flow");
  bar.append(stop);
  return {
    el: bar,
    chrome(cstate) {
      // busy: the flow runs; can_stop: a Stop may go (not once asked)
      stop.disabled = !cstate.can_stop;
      stop.textContent = cstate.busy && !cstate.can_stop ? "Stopping…" : "Stop";
    },
  };
}

function addFlowOpen(view, container) {
  const rows = container.matches(".lion-flow-row[data-id]") ? [container] : container.querySelectorAll(".lion-flow-row[data-id]");
  for (const row of rows) {
    if (row.querySelector(".lion-flow-open")) continue;
    const key = row.getAttribute("data-id");
    const open = !row.classList.contains("lion-flow-selected");
    const n = (row.querySelector(".lion-flow-n") || {}).textContent || "";
    const ctl = button("lion-act lion-flow-open", open ? "open" : "close", open ? "Show this node's transcript" : "Close this node's transcript",
      () => view.model.send({ action: "open", key }));
    named(ctl, `${open ? "Open" : "Close"} the transcript of node ${n.replace(".", "")}`.trim());
    row.insertBefore(ctl, row.firstChild);
  }
}

// ----- the inspector: its pager, and each row's expand and "Fork here" controls -------------
// The kernel sends the rows (parts r<position>, their details d<position>) and the pager's state
// (the chrome trait `pager`); the page draws the controls and sends their actions.
const PAGES = [["first", "«", "First page"], ["prev", "‹", "Previous page"], ["next", "›", "Next page"], ["last", "»", "Last page"]];

function keepKeys(el) {
  // typing in the inspector's boxes never reaches JupyterLab's shortcuts
  for (const type of ["keydown", "keyup", "keypress"]) el.addEventListener(type, (event) => event.stopPropagation());
}

function makeGoTo(model) {
  const box = node("label", "lion-tl-goto", "#");
  const input = node("input", "lion-tl-goto-input");
  input.type = "number";
  input.min = "0";
  input.value = "0";
  named(input, "Message number to show");
  keepKeys(input);
  const go = () => {
    const index = Number.parseInt(input.value, 10);
    if (Number.isFinite(index)) model.send({ action: "goto", index });
  };
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      event.preventDefault();
      go();
    }
  });
  box.append(input);
  const button_ = named(button("lion-act lion-tl-go", "Go", "Show and expand this message", go), "Show and expand the message with this number");
  return { box, input, go: button_ };
}

function makeRoleFilter(model) {
  const select = node("select", "lion-tl-filter");
  named(select, "Show the messages of");
  keepKeys(select);
  select.addEventListener("change", () => model.send({ action: "filter", name: select.value }));
  return {
    el: select,
    set(names, value) {
      const want = (names || []).join("|");
      if (select.__names !== want) {
        select.textContent = "";
        for (const name of names || []) select.append(node("option", "", name));
        select.__names = want;
      }
      if (value && select.value !== value) select.value = value;
    },
  };
}

function makePager(view) {
  const { model } = view;
  const bar = node("div", "lion-tl-pager");
  bar.setAttribute("role", "toolbar");
  bar.setAttribute("aria-label", "Pages of messages");
  const turn = ([to, glyph, name]) => named(button(`lion-act lion-tl-${to}`, glyph, name, () => model.send({ action: "page", to })), name);
  const [first, prev, next, last] = PAGES.map(turn);
  const label = node("span", "lion-tl-page lion-meta");
  const goTo = makeGoTo(model);
  const roles = makeRoleFilter(model);
  const collapse = named(button("lion-act lion-tl-collapse", "Collapse all", "Collapse every expanded message",
    () => model.send({ action: "collapse" })), "Collapse all messages");
  bar.append(first, prev, label, next, last, goTo.box, goTo.go, roles.el, collapse);
  return {
    el: bar,
    chrome(cstate) {
      const state = cstate.pager || {};
      if (label.textContent !== (state.text || "")) label.textContent = state.text || "";
      // a page button that brought the reader to the first or last page hands its focus to the
      // one that pages back: those are enabled first, then the others disabled
      const atFirst = Boolean(state.first);
      const atLast = Boolean(state.last);
      const pages = [[first, atFirst, next], [prev, atFirst, next], [next, atLast, prev], [last, atLast, prev]];
      for (const [el, off, back] of pages) if (!off) setDisabled(el, off, back);
      for (const [el, off, back] of pages) if (off) setDisabled(el, off, back);
      goTo.input.max = String(state.max || 0);
      roles.set(state.filters, state.filter);
    },
  };
}

function rowControls(view, item) {
  const line = item.querySelector(":scope > .lion-tl-line");
  if (!line || line.querySelector(":scope > .lion-tl-toggle")) return;
  const key = item.getAttribute("data-index");
  const toggle = button("lion-act lion-tl-toggle", "▸", "", () => view.model.send({ action: "open", key }));
  const fork = button("lion-act lion-tl-fork", "Fork here", "Fork the branch at this message", () => view.model.send({ action: "fork", key }));
  named(fork, `Fork at message ${key}`);
  line.prepend(toggle);
  line.append(fork);
  rowState(item);
}

function rowState(item) {
  // the expand control says whether its row is open (the kernel's attrs op sets the class)
  const toggle = item.querySelector(":scope > .lion-tl-line > .lion-tl-toggle");
  if (!toggle) return;
  const open = item.classList.contains("lion-tl-open");
  const word = open ? "Collapse" : "Expand";
  if (toggle.getAttribute("aria-expanded") === String(open)) return;
  toggle.textContent = open ? "▾" : "▸";
  toggle.title = word;
  toggle.setAttribute("aria-expanded", String(open));
  named(toggle, `${word} message ${item.getAttribute("data-index")}`);
}

function makeInspector(view) {
  const pager = makePager(view);
  const items = (container) => (container.matches(".lion-tl-item") ? [container] : container.querySelectorAll(".lion-tl-item"));
  return {
    chrome: pager.chrome,
    decorate(container) {
      const slotEl = container.querySelector(".lion-tl-pager-slot");
      if (slotEl && !slotEl.contains(pager.el)) slotEl.append(pager.el);
      for (const item of items(container)) rowControls(view, item);
    },
    settle() {
      for (const item of view.shell.list.querySelectorAll(".lion-tl-item")) rowState(item);
    },
  };
}

// ----- nested parts: a part inside another part's element marked data-parts -----------------
function cardOf(part) {
  // the part's own element: a nested part is its element, a part is in a wrapper
  return part.parent === undefined ? part.el.firstElementChild : part.el;
}

function setAttrs(part, op) {
  const el = cardOf(part);
  if (!el) return;
  el.className = op.cls;
  for (const [name, value] of Object.entries(op.attrs || {})) el.setAttribute(name, value);
  part.html = null;
}

function boxOf(part) {
  const el = cardOf(part);
  return el && el.hasAttribute("data-parts") ? el : part.el.querySelector("[data-parts]");
}

function forgetInside(view, part) {
  // the parts inside `part` go with it
  for (const [key, p] of [...view.parts]) {
    if (p !== part && p.parent !== undefined && part.el.contains(p.el)) {
      view.reveal.stop(p);
      view.parts.delete(key);
    }
  }
}

function makeNested(view, key, html, parent) {
  // the first element of the HTML (sanitized by the kernel) is the part; a template parses
  // table rows too
  const tpl = document.createElement("template");
  tpl.innerHTML = html;
  const el = tpl.content.firstElementChild || node("div");
  el.setAttribute("data-part", key);
  view.transcript.decorate(el);
  return { el, html, fp: null, parent };
}

function putNested(view, op, html) {
  const { parts } = view;
  const old = parts.get(op.replace) || parts.get(op.key);
  const part = makeNested(view, op.key, html, op.parent === undefined ? old.parent : op.parent);
  const shown = view.reveal.rowText(old); // what the row it replaces showed
  if (old) {
    forgetInside(view, old);
    old.el.replaceWith(part.el);
    parts.delete(op.replace);
  } else {
    const host = parts.get(op.parent);
    const box = host && boxOf(host);
    if (!box) throw new Error(`no part ${op.parent} to hold ${op.key}`);
    const before = op.before ? parts.get(op.before) : null;
    box.insertBefore(part.el, before ? before.el : null);
  }
  parts.set(op.key, part);
  view.reveal.row(part, shown);
}

function nestedFromState(view, [key, html, parent], prevs) {
  // a nested part of the synced state: kept when the page shows it already, put in order
  const { parts } = view;
  const host = parts.get(parent);
  const box = host && boxOf(host);
  if (!box) return;
  let part = parts.get(key);
  const same = part && (part.html === html || (part.html === null && part.fp !== null && part.fp === fnv(html)));
  if (same) part.html = html;
  else {
    const fresh = makeNested(view, key, html, parent);
    if (part) {
      forgetInside(view, part);
      part.el.replaceWith(fresh.el);
    }
    parts.set(key, fresh);
    part = fresh;
  }
  const prev = prevs.get(parent);
  const want = prev ? prev.el.nextSibling : box.firstChild;
  if (want !== part.el) box.insertBefore(part.el, want);
  prevs.set(parent, part);
}

// ----- the transcript: parts from ops and from the synced state ------------------------------
function makeTranscript(view) {
  const { model, parts, shell } = view;
  const decorate = (container) => {
    if (view.chat) {
      addCopyControls(view, container);
      addTurnControls(view, container);
    }
    if (view.flow) addFlowOpen(view, container);
    if (view.inspector) view.inspector.decorate(container);
    addCodeCopy(container);
    // a reply being streamed is a polite live region, announced a finished block at a time:
    // its growing tail is busy until the block is finished (never read token by token)
    for (const body of container.querySelectorAll(".lion-streaming-msg .lion-body")) {
      body.setAttribute("aria-live", "polite");
      body.setAttribute("aria-relevant", "additions");
    }
    for (const tail of container.querySelectorAll(".lion-streaming-msg [data-slot=tail]")) {
      tail.setAttribute("aria-busy", "true");
    }
  };
  const makePart = (key, html) => {
    const wrapper = node("div", "lion-part");
    wrapper.setAttribute("data-key", key);
    wrapper.innerHTML = html; // sanitized by the kernel
    decorate(wrapper);
    return { el: wrapper, html, fp: null };
  };
  return {
    decorate,
    makePart,
    put(op) {
      // `tpl`: HTML the page holds as a synced template (Channel.templates), not sent again
      const html = op.tpl === undefined ? op.html : (model.get("templates") || {})[op.tpl];
      if (typeof html !== "string") throw new Error(`unknown template ${op.tpl}`);
      // a nested part put again (without `parent`) stays where it is, nested: a table row
      // in its table, not a wrapper in the transcript
      const old = parts.get(op.replace) || parts.get(op.key);
      if (op.parent !== undefined || (old && old.parent !== undefined)) return putNested(view, op, html);
      const part = makePart(op.key, html);
      if (old) {
        forgetInside(view, old);
        old.el.replaceWith(part.el);
        parts.delete(op.replace);
      } else {
        const before = op.before ? parts.get(op.before) : null;
        shell.list.insertBefore(part.el, before ? before.el : null);
      }
      parts.set(op.key, part);
    },
    tail: (part, op) => setTail(slot(part, "tail"), op, decorate),
    seal: (part, op) => sealCard(view, part, op),
    fromState: () => partsFromState(view, makePart),
  };
}

function setTail(el, op, decorate) {
  // the growing last block: its rendered HTML, or text appended after the rendered start
  if (op.html !== undefined) {
    el.innerHTML = op.html; // sanitized by the kernel
    decorate(el);
    return;
  }
  let text = el.querySelector(":scope > .lion-tail-text");
  if (!op.add) el.textContent = "";
  if (!text || !op.add) {
    text = node("span", "lion-tail-text");
    el.appendChild(text);
  }
  text.appendChild(document.createTextNode(op.text));
}

function keepTail(el, keep, more) {
  // blocks were finished: the tail keeps only the last `keep` characters of its text (the
  // start of the next block, which the kernel does not send again), so nothing shown shrinks,
  // and goes on with `more`, what that block grew by since
  const text = el.querySelector(":scope > .lion-tail-text");
  const kept = (keep && text ? text.textContent.slice(-keep) : "") + (more || "");
  el.textContent = "";
  if (kept) el.appendChild(node("span", "lion-tail-text", kept));
}

function sealCard(view, part, op) {
  // the streamed card becomes the recorded one, from the pieces the kernel names
  // (render.html.assistant_parts): classes and attributes as data, each slot's HTML
  const card = cardOf(part);
  if (card) {
    card.className = op.cls;
    for (const [name, value] of Object.entries(op.attrs || {})) card.setAttribute(name, value);
  }
  slot(part, "head").innerHTML = op.head; // sanitized by the kernel, as every piece below
  if (op.thinking !== undefined) slot(part, "thinking").innerHTML = op.thinking;
  const tail = slot(part, "tail");
  tail.textContent = "";
  tail.removeAttribute("aria-busy");
  slot(part, "frozen").insertAdjacentHTML("beforeend", op.add || "");
  if (op.after !== undefined) slot(part, "tools").innerHTML = op.after;
  if (op.id) {
    view.parts.delete(op.key);
    part.el.setAttribute("data-key", op.id);
    view.parts.set(op.id, part);
  }
  part.html = null;
  part.fp = op.fp === undefined ? null : op.fp;
  view.transcript.decorate(part.el);
  tail.removeAttribute("aria-busy");
}

function partsFromState(view, makePart) {
  const { model, parts } = view;
  const list = view.shell.list;
  const seen = new Set();
  const prevs = new Map(); // parent key -> its nested part placed last
  let prev = null;
  for (const entry of model.get("parts") || []) {
    const [key, html] = entry;
    seen.add(key);
    if (entry.length > 2) {
      nestedFromState(view, entry, prevs);
      continue;
    }
    let part = parts.get(key);
    if (part && part.html !== html) {
      if (part.html === null && part.fp !== null && part.fp === fnv(html)) {
        part.html = html; // the DOM built from ops already shows this card
      } else {
        const fresh = makePart(key, html);
        forgetInside(view, part);
        part.el.replaceWith(fresh.el);
        parts.set(key, fresh);
        part = fresh;
      }
    } else if (!part) {
      part = makePart(key, html);
      parts.set(key, part);
    }
    const want = prev ? prev.el.nextSibling : list.firstChild;
    if (want !== part.el) list.insertBefore(part.el, want);
    prev = part;
  }
  for (const [key, part] of [...parts]) {
    if (!seen.has(key)) {
      part.el.remove();
      parts.delete(key);
    }
  }
}

// ----- reveal: the text of one message shown over the frames until the next ----------------
// The kernel sends streamed text at most ~15 times a second; shown at once, a reader would see
// that rate. The page shows what came in one message a few characters a frame instead, done
// by the time the next message is due (the gap between messages, measured, at most 100 ms),
// and at once when the next op touches the card or seals it, or when the view's run ends (a
// chrome op: busy false): not a byte more is sent, and the final text is exact when the reply
// ends. Counted in non-space characters, so what shows never shrinks when the kernel sends
// rendered blocks for text the page showed as plain text.
//
// A table's rows (the parse view's tree) are sent whole, each a nested part re-sent when it
// changes: a row put in place of one shows its value growing from what the old one showed; new
// rows appear one after another, each with its value growing. When one message reveals several
// parts, they take their turns, each for its share of the characters.
const SPACE = /\s/;
const FRAME_MS = 1000 / 60;
const REVEAL_MAX_MS = 100;
const UNREVEALED = "lion-unrevealed"; // an element none of whose text shows yet (CSS: hidden)
const ROW_VALUE = ".lion-parse-value, .lion-parse-partial"; // a tree row's value (render/parse_tree.py)

function solid(text) {
  return text.replace(/\s+/g, "").length;
}

export function cutAt(text, k) {
  // the length of the shortest start of `text` that holds k non-space characters
  if (k <= 0) return 0;
  for (let i = 0; i < text.length; i++) {
    if (SPACE.test(text[i])) continue;
    if (--k === 0) {
      const code = text.charCodeAt(i);
      return code >= 0xd800 && code < 0xdc00 ? i + 2 : i + 1; // never half a surrogate pair
    }
  }
  return text.length;
}

function eachTextAndElement(body, fn) {
  // the text nodes and elements of a card's body in document order, controls left out
  const walk = document.createTreeWalker(body, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT, {
    acceptNode: (n) => (n.nodeName === "BUTTON" ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  for (let n = walk.nextNode(); n; n = walk.nextNode()) fn(n);
}

function shownCount(body) {
  let count = 0;
  eachTextAndElement(body, (n) => {
    if (n.nodeType === Node.TEXT_NODE) count += solid(n.data);
  });
  return count;
}

function revealRun(body, from) {
  // what of `body` lies past its first `from` non-space characters: the text nodes and the
  // elements that start there, each with the number of characters before it
  const run = { from, total: 0, nodes: [], els: [] };
  if (!body) return run;
  eachTextAndElement(body, (n) => {
    if (n.nodeType !== Node.TEXT_NODE) {
      if (run.total >= from) run.els.push([n, run.total]);
      return;
    }
    const size = solid(n.data);
    if (run.total + size > from) run.nodes.push([n, n.data, run.total, size]);
    run.total += size;
  });
  return run;
}

function clipRun(run, shown) {
  // show the first `shown` non-space characters of the run's text (Infinity: all of it)
  for (const [n, full, before, size] of run.nodes) {
    const want = shown - before;
    const text = want >= size ? full : want <= 0 ? "" : full.slice(0, cutAt(full, want));
    if (n.data !== text) n.data = text;
  }
  for (const [el, before] of run.els) {
    const hide = shown <= before;
    if (el.classList.contains(UNREVEALED) !== hide) el.classList.toggle(UNREVEALED, hide);
  }
}

function growing(part) {
  // the element of a part whose text grows: a card's body, a table row's value
  return part.el.querySelector(part.el.tagName === "TR" ? ROW_VALUE : ".lion-body");
}

function runOf(part, from, isNew) {
  // what to reveal of `part`, which showed `from` characters (a new row: nothing, not even
  // itself, until its turn)
  const run = revealRun(growing(part), from);
  if (isNew) {
    run.els.push([part.el, 0]);
    run.total = Math.max(run.total, 1);
  }
  return run;
}

function takeTurns(runs, now, span) {
  // the runs of one message, one after another, each for its share of the characters
  const size = (run) => run.total - run.from;
  const all = runs.reduce((sum, [, run]) => sum + size(run), 0);
  let at = 0;
  for (const [, run] of runs) {
    const share = size(run) / all;
    Object.assign(run, { t0: now + at * span, span: Math.max(share * span, 1), shown: run.from });
    at += share;
  }
}

function rowFrom(part, shown) {
  // a table row put, the row it replaced showing `shown` of its value (null: none): [what it
  // shows already, whether it is new]; its value grows from there, a new row appears in its
  // turn, a value that does not continue the old one shows at once (null)
  if (part.el.tagName !== "TR") return null;
  if (shown === null) return [0, true];
  const value = growing(part);
  return value && value.textContent.startsWith(shown) ? [solid(shown), false] : null;
}

function freshRuns(marked) {
  // the runs of the parts a message's ops touched: what each shows past what it showed before
  const fresh = [];
  for (const [part, [from, isNew]] of marked) {
    const run = part.el.isConnected ? runOf(part, from, isNew) : null;
    if (run && run.total > from) fresh.push([part, run]);
  }
  return fresh;
}

function makeReveal(view) {
  const runs = new Map(); // part -> the run being revealed
  const marked = new Map(); // part -> [characters it showed before this message's ops, new row]
  const calm = window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  const state = { frame: 0, last: null, gap: 1000 / 15, ended: false }; // gap: between messages (ms), measured
  const tick = (now) => {
    state.frame = 0;
    for (const [part, run] of runs) {
      // (a frame's time may precede the message that started the run: never show less)
      const share = Math.min(1, (now - run.t0 + FRAME_MS) / run.span);
      run.shown = Math.max(run.shown, Math.ceil(run.from + (run.total - run.from) * share));
      clipRun(run, share >= 1 ? Infinity : run.shown);
      if (share >= 1) runs.delete(part);
    }
    const { scroller } = view.shell;
    if (view.chat && view.scroll.atBottom) scroller.scrollTop = scroller.scrollHeight; // follow
    if (runs.size) state.frame = requestAnimationFrame(tick);
  };
  const stop = (part) => {
    // everything the part was sent shows now: before an op changes it, and at its seal
    const run = runs.get(part);
    if (run) clipRun(run, Infinity);
    runs.delete(part);
    marked.delete(part);
  };
  const showAll = () => {
    for (const run of runs.values()) clipRun(run, Infinity);
    runs.clear();
  };
  const finish = () => {
    showAll();
    marked.clear();
    state.ended = false;
    if (state.frame) cancelAnimationFrame(state.frame);
    state.frame = 0;
  };
  return {
    stop,
    finish,
    mark(part) {
      // an op adds text to the part: remember what it shows before the message's ops
      if (marked.has(part)) return;
      stop(part);
      const el = growing(part);
      if (el) marked.set(part, [shownCount(el), false]);
    },
    rowText(old) {
      // what a table row about to be replaced shows of its value (all it was sent)
      if (!old || old.el.tagName !== "TR") return null;
      stop(old);
      const value = growing(old);
      return value ? value.textContent : "";
    },
    row(part, shown) {
      const from = rowFrom(part, shown);
      if (from) marked.set(part, from);
    },
    ended() {
      state.ended = true; // the view's run ended: this message's text shows at once, exact
    },
    start() {
      // after a message's ops: reveal what they added over the frames until the next
      if (state.ended || !marked.size) {
        if (state.ended) finish();
        return;
      }
      const now = performance.now();
      if (state.last !== null && now - state.last < 250) state.gap = 0.7 * state.gap + 0.3 * Math.max(now - state.last, FRAME_MS);
      state.last = now;
      showAll(); // the last message's text, all of it, before this one's
      const fresh = calm ? [] : freshRuns(marked);
      marked.clear();
      takeTurns(fresh, now, Math.min(state.gap, REVEAL_MAX_MS));
      for (const [part, run] of fresh) runs.set(part, run);
      if (state.frame) cancelAnimationFrame(state.frame);
      if (runs.size) tick(now);
    },
  };
}

// ----- scroll: follow the stream only while the reader is at the bottom ----------------------
function makeScroll(view) {
  const { scroller, jump } = view.shell;
  const store = view.store;
  const gap = () => scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight;
  const scroll = { atBottom: store.atBottom, gap };
  scroller.addEventListener("scroll", () => {
    scroll.atBottom = gap() < 24;
    store.atBottom = scroll.atBottom;
    store.scrollTop = scroller.scrollTop;
    if (scroll.atBottom) jump.hidden = true;
  });
  jump.addEventListener("click", () => {
    scroll.atBottom = true;
    store.atBottom = true;
    scroller.scrollTop = scroller.scrollHeight;
    store.scrollTop = scroller.scrollTop;
    jump.hidden = true;
    // the hidden button would drop the focus out of the view (a "leave", which refreshes the
    // saved output): typing goes on in the prompt box instead
    if (view.promptBox) view.promptBox.prompt.focus({ preventScroll: true });
  });
  return scroll;
}

function marks(view) {
  if (!view.chat) return;
  contextMarks(view);
  messageMarks(view);
  samplingMarks(view);
  tokenMarks(view); // tokens.js
  treeMarks(view); // tree.js
  nameControls(view.shell.list);
}

function settle(view, follow) {
  const { shell } = view;
  promptMarks(view); // prompt.js
  marks(view);
  if (view.inspector) view.inspector.settle();
  if (view.grid) view.grid.settle();
  shell.empty.hidden = view.parts.size > 0 || !view.chat;
  if (!view.chat) return;
  if (follow) {
    shell.scroller.scrollTop = shell.scroller.scrollHeight;
  } else if (view.scroll.gap() > 24) {
    shell.jump.hidden = false;
  }
}

// ----- the message loop: ordered ops, gaps healed from the synced state ----------------------
function resync(view) {
  view.healing = true;
  view.model.send({ action: "resync", have: view.applied });
}

function onMessage(view, msg) {
  if (!msg || typeof msg.seq !== "number") return;
  if (msg.seq <= view.applied) return; // already in the synced state
  if (msg.seq !== view.applied + 1) {
    if (!view.healing) resync(view);
    return;
  }
  const follow = view.scroll.atBottom;
  try {
    for (const op of msg.ops) {
      const apply = OPS[op.op];
      if (!apply) throw new Error(`unknown op ${op.op}`);
      apply(view, op);
    }
    view.reveal.start();
    view.applied = msg.seq;
    view.store.applied = Math.max(view.store.applied, view.applied);
  } catch (err) {
    console.warn("lion_nb: could not apply an update; asking for the full state", err);
    resync(view);
  }
  settle(view, follow);
}

function fromState(view) {
  view.stateQueued = false;
  view.reveal.finish();
  const follow = view.scroll.atBottom;
  view.transcript.fromState();
  view.applied = view.model.get("seq");
  view.store.applied = Math.max(view.store.applied, view.applied);
  view.healing = false;
  settle(view, follow);
}

function chrome(view) {
  const { cstate, shell } = view;
  if (view.gone) return; // nothing the kernel said last counts any more
  shell.error.innerHTML = cstate.error_box; // sanitized by the kernel (render.chrome)
  shell.status.innerHTML = cstate.status_line;
  if (cstate.cassette) (shell.status.firstElementChild || shell.status).insertAdjacentHTML("beforeend", cstate.cassette);
  if (view.flowStop) view.flowStop.chrome(cstate);
  if (view.inspector) view.inspector.chrome(cstate);
  if (view.grid) view.grid.chrome(cstate);
  if (!view.chat) return;
  view.promptBox.chrome(cstate);
  view.comparePanel.show(cstate.compare_html || "");
}

// ----- the kernel gone: restarted, died, or the view's comm closed ----------------------------
// Nothing more will come from the kernel and nothing sent reaches it: the view says so, shows
// nothing as running and disables its controls (the prompt box keeps its text, read-only). What
// each front end gives: ipywidgets' model (JupyterLab, Notebook 7, Voilà) marks its comm dead on
// a restart (the DOMWidgetView's element gets `jupyter-widgets-disconnected`, and the model
// triggers `comm_live_update`) and triggers `comm:close` when the kernel closes it; the widget
// manager's kernel says "dead" when the kernel dies for good. marimo gives its widgets no such
// event; a restart there draws its outputs anew, and a kernel that stops leaves the page's app
// element saying `data-connection-state="CLOSED"` (the view stays marked if marimo reconnects).
const GONE_TEXT = "This view's kernel is gone — run its cell again.";
const DISCONNECTED = "jupyter-widgets-disconnected";

function kernelGone(view) {
  if (view.gone) return;
  view.gone = true;
  view.reveal.finish();
  const { root, status, list } = view.shell;
  root.classList.add("lion-gone");
  for (const card of list.querySelectorAll(".lion-streaming-msg")) {
    card.classList.replace("lion-streaming-msg", "lion-gone-msg");
    for (const badge of card.querySelectorAll(".lion-status.lion-streaming")) {
      badge.className = "lion-status lion-stopped";
      badge.textContent = "cut off: the kernel is gone";
    }
    for (const busy of card.querySelectorAll("[aria-busy]")) busy.removeAttribute("aria-busy");
  }
  status.textContent = "";
  status.append(node("div", "lion-view-status lion-view-failed lion-view-gone", GONE_TEXT));
  for (const el of root.querySelectorAll("button, input, select")) {
    if (!el.matches(".lion-copy-code, .lion-jump")) el.disabled = true; // code copies need no kernel
  }
  if (view.flowStop) view.flowStop.el.querySelector("button").textContent = "Stop";
  if (view.promptBox) {
    const { prompt } = view.promptBox;
    prompt.readOnly = true;
    prompt.setAttribute("aria-readonly", "true");
    prompt.title = GONE_TEXT;
  }
}

function connectionOf(el) {
  // marimo's app element, found from inside the shadow roots its widgets are drawn in
  for (let n = el; n; ) {
    const found = n.closest ? n.closest("[data-connection-state]") : null;
    if (found) return found;
    const root = n.getRootNode();
    n = root && root.host ? root.host : null;
  }
  return null;
}

function watchConnection(el, gone) {
  let observer = null;
  let tries = 0;
  let stopped = false;
  const attach = () => {
    if (stopped) return;
    const app = connectionOf(el);
    if (!app) {
      if (++tries < 20) setTimeout(attach, 250); // drawn before it is attached; none: not marimo
      return;
    }
    const check = () => app.getAttribute("data-connection-state") === "CLOSED" && gone();
    observer = new MutationObserver(check);
    observer.observe(app, { attributes: true, attributeFilter: ["data-connection-state"] });
    check();
  };
  attach();
  return () => {
    stopped = true;
    if (observer) observer.disconnect();
  };
}

function watchKernel(view, el) {
  const { model } = view;
  const dead = () => el.classList.contains(DISCONNECTED) || Boolean(el.closest(`.${DISCONNECTED}`));
  const check = () => queueMicrotask(() => dead() && kernelGone(view));
  const gone = () => kernelGone(view);
  const handlers = [["comm_live_update", check], ["comm:close", gone]];
  for (const [name, fn] of handlers) model.on(name, fn);
  let kernel = null;
  try {
    kernel = model.widget_manager && model.widget_manager.kernel; // JupyterLab's widget managers
  } catch (_err) {
    kernel = null;
  }
  const onStatus = (_k, state) => {
    if (state === "dead" || state === "restarting" || state === "autorestarting") gone();
  };
  const signal = kernel && kernel.statusChanged;
  if (signal && typeof signal.connect === "function") signal.connect(onStatus);
  check(); // a view drawn from saved state has no kernel either
  const unwatch = watchConnection(el, gone);
  return () => {
    unwatch();
    for (const [name, fn] of handlers) model.off(name, fn);
    if (signal && typeof signal.disconnect === "function") signal.disconnect(onStatus);
  };
}

// ----- the view ------------------------------------------------------------------------------
function storeOf(model) {
  const uid = model.get("uid") || "";
  if (!STORE.has(uid)) STORE.set(uid, { draft: "", scrollTop: null, atBottom: true, applied: 0 });
  return STORE.get(uid);
}

function makeView(model) {
  const kind = model.get("kind");
  const protocol = model.get("protocol") || {};
  for (const name of protocol.ops || []) {
    if (!OPS[name]) console.warn(`lion_nb: the kernel sends op ${name}, which this page does not handle`);
  }
  const view = {
    model, kind, chat: kind === "chat", flow: kind === "flow-view", store: storeOf(model),
    chromeNames: protocol.chrome || [],
    parts: new Map(), // key -> {el, html, fp}
    wantClip: new Map(), // key -> the copy button that asked
    cstate: {}, // the small traits: synced state, then `chrome` ops
    applied: model.get("seq"), healing: false, stateQueued: false,
    shell: makeShell(model, kind),
  };
  view.chrome = () => chrome(view);
  view.loadChrome = () => {
    for (const name of view.chromeNames) view.cstate[name] = model.get(name);
  };
  view.transcript = makeTranscript(view);
  view.scroll = makeScroll(view);
  view.reveal = makeReveal(view);
  if (view.flow) view.flowStop = makeFlowStop(view);
  if (kind === "inspector") view.inspector = makeInspector(view);
  if (kind === "grid") view.grid = makeGrid(view); // grid.js
  if (view.chat) {
    view.promptBox = makePromptBox(view);
    view.comparePanel = makeComparePanel(model);
  }
  return view;
}

function assemble(view, el) {
  const { shell, model } = view;
  const { root, title } = shell;
  if (view.chat) {
    const height = model.get("height");
    if (height) shell.scroller.style.maxHeight = height;
    shell.scroller.classList.add("lion-scroll-bounded");
    root.append(title);
  }
  if (view.flowStop) root.append(view.flowStop.el);
  if (view.grid) root.append(view.grid.el);
  root.append(shell.empty, shell.scroller, shell.jump, shell.error);
  if (view.chat) root.append(view.promptBox.el);
  root.append(shell.status, shell.gauge);
  if (view.grid) root.append(view.grid.chat);
  if (view.chat) root.append(view.comparePanel.el);
  el.appendChild(root);
  root.addEventListener("focusout", (event) => {
    // focus left the view for the rest of the page (when the window itself loses focus the
    // active element stays in the view): a saved-output refresh may be drawn now
    if (event.relatedTarget && root.contains(event.relatedTarget)) return;
    setTimeout(() => {
      if (!root.contains(document.activeElement)) model.send({ action: "leave" });
    }, 0);
  });
}

function restore(view) {
  const { store, shell } = view;
  if (store.applied > view.applied) {
    // the page has had newer updates than the synced state holds (the kernel keeps its state
    // without re-sending it) — another view of this widget applied them, or they came while
    // none was on the page (initialize): ask for it
    resync(view);
  }
  if (store.scrollTop !== null && !store.atBottom) shell.scroller.scrollTop = store.scrollTop;
  else {
    settle(view, true);
    // a chat drawn anew may not be laid out yet: follow the bottom again once it is (only a
    // chat follows its bottom: a grid opens at its first row)
    requestAnimationFrame(() => {
      if (view.chat && view.scroll.atBottom) shell.scroller.scrollTop = shell.scroller.scrollHeight;
    });
  }
  const prompt = view.promptBox && view.promptBox.prompt;
  if (prompt && store.focused) {
    prompt.focus();
    if (store.selection) prompt.setSelectionRange(...store.selection);
  }
}

function render({ model, el }) {
  const view = makeView(model);
  const { title } = view.shell;
  // the title names the branch shown (the kernel retitles the view when it shows a fork)
  const retitle = () => {
    title.textContent = model.get("title") || "";
    title.hidden = !title.textContent;
  };
  retitle();
  view.loadChrome();
  assemble(view, el);
  fromState(view);
  view.chrome();
  restore(view);
  const queueState = () => {
    if (view.stateQueued) return;
    view.stateQueued = true;
    queueMicrotask(() => fromState(view));
  };
  const fromModel = () => {
    view.loadChrome();
    view.chrome();
    marks(view);
  };
  const handlers = [
    ["msg:custom", (msg) => onMessage(view, msg)],
    ["change:parts", queueState],
    ["change:seq", queueState],
    ["change:title", retitle],
    ...view.chromeNames.map((name) => [`change:${name}`, fromModel]),
  ];
  for (const [name, fn] of handlers) model.on(name, fn);
  const unwatch = watchKernel(view, el);
  return () => {
    view.reveal.finish();
    if (view.grid) view.grid.dispose();
    unwatch();
    for (const [name, fn] of handlers) model.off(name, fn);
  };
}

function initialize({ model }) {
  // updates that come while no view of this widget is on the page (made in one cell and shown
  // in a later one, or sent before the page drew it) reach no view: their newest seq is kept,
  // so the view drawn later knows what it missed and asks for the state (restore)
  const heard = (msg) => {
    if (!msg || typeof msg.seq !== "number") return;
    const store = storeOf(model);
    store.applied = Math.max(store.applied, msg.seq);
  };
  model.on("msg:custom", heard);
  return () => model.off("msg:custom", heard);
}

export default { initialize, render };
