// lion_nb's live views in the page: one ES module for anywidget (no build step, no framework).
//
// The kernel decides what to show; this module turns its ordered ops into DOM updates, keys
// into page actions, and owns focus, draft and scroll. Every HTML string it inserts was
// rendered and sanitized by the kernel (lion_nb.render); model text otherwise reaches the DOM
// only as textContent. The protocol is described in lion_nb/widgets/channel.py.
//
// State: `parts` ([[key, html], ...]) and `seq` are synced widget state: a reload, a second
// view or a late front end renders them, then applies the custom messages {seq, ops} that
// follow. A message whose seq is not the next one means some were missed: the page asks for
// {"action": "resync"} and renders the synced state the kernel then sends.

const STORE = new Map(); // uid -> what survives a view drawn anew: draft, scroll, focus

function fnv(text) {
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

function flash(button, ok) {
  button.textContent = ok ? "Copied" : "Copy failed";
  button.classList.toggle("lion-copied", ok);
  setTimeout(() => {
    button.textContent = "Copy";
    button.classList.remove("lion-copied");
  }, 1200);
}

function render({ model, el }) {
  const kind = model.get("kind");
  const chat = kind === "chat";
  const uid = model.get("uid") || "";
  if (!STORE.has(uid)) {
    STORE.set(uid, { draft: "", scrollTop: null, atBottom: true, applied: 0 });
  }
  const store = STORE.get(uid);
  const parts = new Map(); // key -> {el, html, fp}
  const wantClip = new Map(); // key -> the copy button that asked
  let applied = model.get("seq");
  const CHROME = ["status_line", "error_box", "busy", "can_stop", "alt_marks", "cut_marks", "ctx", "compare_html"];
  const cstate = {}; // the small traits: synced state, then `chrome` ops
  const loadChrome = () => {
    for (const name of CHROME) cstate[name] = model.get(name);
  };
  loadChrome();
  let healing = false;
  let stateQueued = false;

  const root = node("div", `lion-view lion-front lion-${kind}`);
  root.setAttribute("data-lm-suppress-shortcuts", "true");
  const title = node("div", "lion-title", model.get("title"));
  const scroller = node("div", "lion-scroll");
  const list = node("div", "lion-transcript");
  const empty = node("div", "lion-placeholder");
  empty.append(
    node("div", "lion-placeholder-title", model.get("title") || "lion_nb"),
    node("div", "lion-placeholder-hint", model.get("hint")),
  );
  const jump = node("button", "lion-jump", "Jump to latest ↓");
  jump.type = "button";
  jump.hidden = true;
  const error = node("div", "lion-view-errors");
  const status = node("div", "lion-view-statusline");
  const gauge = node("div", "lion-gauge");
  gauge.hidden = true;
  // the CompareView opened by a "Compare" control, under the chat view
  const comparePanel = node("div", "lion-compare-panel");
  comparePanel.hidden = true;
  const compareHead = node("div", "lion-compare-panel-head");
  const compareClose = node("button", "lion-act", "Close");
  compareClose.type = "button";
  compareClose.title = "Close the comparison";
  compareClose.addEventListener("click", () => model.send({ action: "compare_close" }));
  compareHead.append(node("span", "lion-compare-panel-title", "Comparing alternatives"), compareClose);
  const compareBody = node("div", "lion-compare-panel-body");
  comparePanel.append(compareHead, compareBody);
  scroller.append(list);
  if (chat) {
    const height = model.get("height");
    if (height) scroller.style.maxHeight = height;
    scroller.classList.add("lion-scroll-bounded");
  }
  // the title names the branch shown (the kernel retitles the view when it shows a fork)
  const retitle = () => {
    title.textContent = model.get("title") || "";
    title.hidden = !title.textContent;
  };
  retitle();
  if (chat) root.append(title);
  root.append(empty, scroller, jump, error);

  // ----- the prompt box ---------------------------------------------------------------------
  let prompt = null;
  let sendButton = null;
  let stopButton = null;
  if (chat) {
    const controls = node("div", "lion-controls");
    prompt = node("textarea", "lion-prompt");
    prompt.rows = 3;
    prompt.placeholder = model.get("placeholder");
    prompt.setAttribute("aria-label", "Message");
    prompt.value = store.draft;
    const buttons = node("div", "lion-buttons");
    sendButton = node("button", "lion-send", "Send");
    sendButton.type = "button";
    sendButton.title = "Send (Enter)";
    stopButton = node("button", "lion-stop", "Stop");
    stopButton.type = "button";
    stopButton.title = "Stop the running reply (Esc)";
    const clearButton = node("button", "lion-clear", "Clear");
    clearButton.type = "button";
    clearButton.title = "Start afresh (the conversation so far stays an alternative)";
    clearButton.addEventListener("click", () => model.send({ action: "clear" }));
    buttons.append(sendButton, stopButton, clearButton);
    controls.append(prompt, buttons);
    root.append(controls);
  }
  root.append(status, gauge);
  if (chat) root.append(comparePanel);
  el.appendChild(root);

  function submit() {
    const text = prompt.value;
    if (!text.trim()) return;
    if (cstate.busy) {
      status.textContent = "A reply is running: Esc or Stop ends it; your message stays here.";
      return;
    }
    model.send({ action: "send", text });
    prompt.value = "";
    store.draft = "";
  }

  function stop() {
    model.send({ action: "stop" });
  }

  if (chat) {
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
    sendButton.addEventListener("click", submit);
    stopButton.addEventListener("click", stop);
  }

  root.addEventListener("focusout", (event) => {
    // focus left the view for the rest of the page (when the window itself loses focus the
    // active element stays in the view): a saved-output refresh may be drawn now
    if (event.relatedTarget && root.contains(event.relatedTarget)) return;
    setTimeout(() => {
      if (!root.contains(document.activeElement)) model.send({ action: "leave" });
    }, 0);
  });

  // ----- scroll: follow the stream only while the reader is at the bottom ----------------------
  let atBottom = store.atBottom;
  const bottomGap = () => scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight;
  scroller.addEventListener("scroll", () => {
    atBottom = bottomGap() < 24;
    store.atBottom = atBottom;
    store.scrollTop = scroller.scrollTop;
    if (atBottom) jump.hidden = true;
  });
  jump.addEventListener("click", () => {
    atBottom = true;
    store.atBottom = true;
    scroller.scrollTop = scroller.scrollHeight;
    jump.hidden = true;
  });

  function settle(follow) {
    marks();
    empty.hidden = parts.size > 0 || !chat;
    if (!chat) return;
    if (follow) {
      scroller.scrollTop = scroller.scrollHeight;
    } else if (bottomGap() > 24) {
      jump.hidden = false;
    }
  }

  // ----- parts ------------------------------------------------------------------------------
  function decorate(container) {
    if (chat) {
      for (const head of container.querySelectorAll(".lion-msg > .lion-head, [data-slot=head] > .lion-head")) {
        if (head.querySelector(".lion-copy")) continue;
        const button = node("button", "lion-copy lion-copy-msg", "Copy");
        button.type = "button";
        button.title = "Copy this message as Markdown";
        button.addEventListener("click", () => {
          const part = button.closest(".lion-part");
          if (!part) return;
          const key = part.getAttribute("data-key");
          wantClip.set(key, button);
          model.send({ action: "copy", key });
        });
        head.appendChild(button);
      }
    }
    if (chat) {
      for (const card of container.querySelectorAll(".lion-msg[data-id]")) {
        const head = card.querySelector(".lion-head");
        if (!head || head.querySelector(".lion-act")) continue;
        const key = card.getAttribute("data-id");
        if (card.classList.contains("lion-assistant")) {
          head.appendChild(control("Regenerate", "Answer this turn again (on a new alternative)", () =>
            model.send({ action: "regenerate", key })));
        } else if (card.classList.contains("lion-user")) {
          head.appendChild(control("Edit", "Edit this message and send it again (Enter sends, Esc cancels)", () =>
            editInPlace(card, key)));
        }
      }
    }
    for (const pre of container.querySelectorAll("pre.lion-code")) {
      if (pre.querySelector(".lion-copy")) continue;
      const button = node("button", "lion-copy lion-copy-code", "Copy");
      button.type = "button";
      button.title = "Copy this code";
      button.addEventListener("click", async () => {
        const code = pre.querySelector("code");
        flash(button, await copyText((code || pre).textContent));
      });
      pre.appendChild(button);
    }
  }

  function control(label, title, onClick) {
    const button = node("button", "lion-act", label);
    button.type = "button";
    button.title = title;
    button.addEventListener("click", onClick);
    return button;
  }

  function editInPlace(card, key) {
    const body = card.querySelector(".lion-body");
    if (!body || card.querySelector(".lion-edit")) return;
    const box = node("textarea", "lion-prompt lion-edit");
    box.value = body.innerText.trim();
    box.rows = Math.min(8, box.value.split("\n").length + 1);
    body.hidden = true;
    body.after(box);
    box.focus();
    const done = () => {
      box.remove();
      body.hidden = false;
    };
    box.addEventListener("keydown", (event) => {
      event.stopPropagation();
      if (event.isComposing) return;
      if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        const text = box.value;
        done();
        if (text.trim()) model.send({ action: "edit", key, text });
      } else if (event.key === "Escape") {
        event.preventDefault();
        done();
      }
    });
    box.addEventListener("keyup", (event) => event.stopPropagation());
  }

  function contextMarks() {
    // the gauge of what the next turn sends against the window, and the notice where the last
    // request was cut (kernel state: ctx)
    // (the notice's HTML and the gauge's words are rendered by the kernel: render/html.py)
    const ctx = cstate.ctx || {};
    for (const old of list.querySelectorAll(".lion-ctx-cut-part")) old.remove();
    if (ctx.cut && ctx.note && parts.get(ctx.cut)) {
      const note = node("div", "lion-ctx-cut-part");
      note.innerHTML = cstate.ctx.note; // the kernel rendered it (render/html.py)
      list.insertBefore(note, parts.get(ctx.cut).el);
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

  function marks() {
    // the ‹ n/of › switchers and "continue" of truncated replies (kernel state by message id)
    if (!chat) return;
    contextMarks();
    const alts = cstate.alt_marks || {};
    const cut = new Set(cstate.cut_marks || []);
    for (const card of list.querySelectorAll(".lion-msg[data-id]")) {
      const key = card.getAttribute("data-id");
      const head = card.querySelector(".lion-head");
      if (!head) continue;
      for (const old of head.querySelectorAll(".lion-switch, .lion-cut")) old.remove();
      if (alts[key]) {
        const [n, of] = alts[key];
        const sw = node("span", "lion-switch");
        const prev = control("‹", "Previous alternative", () => model.send({ action: "switch", key, step: -1 }));
        const next = control("›", "Next alternative", () => model.send({ action: "switch", key, step: 1 }));
        sw.append(prev, node("span", "lion-switch-pos", `${n}/${of}`), next,
          control("Compare", "Compare this alternative with the previous one (shown below)", () =>
            model.send({ action: "compare", key })));
        // beside the message's own controls, not before its role label
        head.insertBefore(sw, head.querySelector(".lion-copy-msg"));
      }
      if (cut.has(key)) {
        // the "truncated" badge is in the card (render/html.py); Continue goes with the
        // message's other controls, offered only while the reply is not continued
        const more = control("Continue", "Ask for the rest of this reply", () =>
          model.send({ action: "continue", key }));
        more.classList.add("lion-cut");
        head.appendChild(more);
      }
    }
  }

  function makePart(key, html) {
    const wrapper = node("div", "lion-part");
    wrapper.setAttribute("data-key", key);
    wrapper.innerHTML = html; // sanitized by the kernel
    decorate(wrapper);
    return { el: wrapper, html, fp: null };
  }

  function slot(part, name) {
    return part.el.querySelector(`[data-slot="${name}"]`);
  }

  function put(op) {
    // `tpl`: HTML the page holds as a synced template (Channel.templates), not sent again
    const html = op.tpl === undefined ? op.html : (model.get("templates") || {})[op.tpl];
    if (typeof html !== "string") throw new Error(`unknown template ${op.tpl}`);
    const part = makePart(op.key, html);
    const old = parts.get(op.replace) || parts.get(op.key);
    if (old) {
      old.el.replaceWith(part.el);
      parts.delete(op.replace);
    } else {
      const before = op.before ? parts.get(op.before) : null;
      list.insertBefore(part.el, before ? before.el : null);
    }
    parts.set(op.key, part);
  }

  function seal(part, op) {
    const card = part.el.firstElementChild;
    if (card && op.tag) {
      const tpl = document.createElement("template");
      tpl.innerHTML = `${op.tag}</div>`;
      const model_card = tpl.content.firstElementChild;
      for (const name of card.getAttributeNames()) card.removeAttribute(name);
      for (const name of model_card.getAttributeNames()) {
        card.setAttribute(name, model_card.getAttribute(name));
      }
    } else if (card && op.cls) {
      card.className = op.cls;
    }
    slot(part, "head").innerHTML = op.head;
    if (op.thinking !== undefined) slot(part, "thinking").innerHTML = op.thinking;
    slot(part, "tail").textContent = "";
    slot(part, "frozen").insertAdjacentHTML("beforeend", op.add || "");
    if (op.after !== undefined) slot(part, "tools").innerHTML = op.after;
    if (op.id) {
      parts.delete(op.key);
      part.el.setAttribute("data-key", op.id);
      parts.set(op.id, part);
    }
    part.html = null;
    part.fp = op.fp === undefined ? null : op.fp;
    decorate(part.el);
  }

  function tail(part, op) {
    // the growing last block: its rendered HTML, or text appended after the rendered start
    const el = slot(part, "tail");
    if (op.html !== undefined) {
      el.innerHTML = op.html;
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

  function apply(op) {
    if (op.op === "put") return put(op);
    if (op.op === "draft") {
      if (prompt) prompt.value = op.text;
      store.draft = op.text;
      return;
    }
    if (op.op === "chrome") {
      Object.assign(cstate, op.values);
      chrome();
      return;
    }
    if (op.op === "clip") {
      const button = wantClip.get(op.key);
      if (button) {
        wantClip.delete(op.key);
        copyText(op.text).then((ok) => flash(button, ok));
      }
      return;
    }
    const part = parts.get(op.key);
    if (!part) return;
    if (op.op === "drop") {
      part.el.remove();
      parts.delete(op.key);
    } else if (op.op === "add") {
      const frozen = slot(part, "frozen");
      frozen.insertAdjacentHTML("beforeend", op.html);
      slot(part, "tail").textContent = "";
      decorate(frozen);
      part.html = null;
    } else if (op.op === "tail") {
      tail(part, op);
      part.html = null;
    } else if (op.op === "slot") {
      slot(part, op.slot).innerHTML = op.html;
      decorate(slot(part, op.slot));
      part.html = null;
    } else if (op.op === "seal") {
      seal(part, op);
    }
  }

  function fromState() {
    stateQueued = false;
    const follow = atBottom;
    const seen = new Set();
    let prev = null;
    for (const [key, html] of model.get("parts") || []) {
      seen.add(key);
      let part = parts.get(key);
      if (part && part.html !== html) {
        if (part.html === null && part.fp !== null && part.fp === fnv(html)) {
          part.html = html; // the DOM built from ops already shows this card
        } else {
          const fresh = makePart(key, html);
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
    applied = model.get("seq");
    store.applied = Math.max(store.applied, applied);
    healing = false;
    settle(follow);
  }

  function queueState() {
    if (stateQueued) return;
    stateQueued = true;
    queueMicrotask(fromState);
  }

  function onMessage(msg) {
    if (!msg || typeof msg.seq !== "number") return;
    if (msg.seq <= applied) return; // already in the synced state
    if (msg.seq !== applied + 1) {
      if (!healing) {
        healing = true;
        model.send({ action: "resync", have: applied });
      }
      return;
    }
    const follow = atBottom;
    try {
      for (const op of msg.ops) apply(op);
      applied = msg.seq;
      store.applied = Math.max(store.applied, applied);
    } catch (err) {
      console.warn("lion_nb: could not apply an update; asking for the full state", err);
      healing = true;
      model.send({ action: "resync", have: applied });
    }
    settle(follow);
  }

  function fromModel() {
    loadChrome();
    chrome();
    marks();
  }

  function chrome() {
    error.innerHTML = cstate.error_box; // sanitized by the kernel (render.chrome)
    status.innerHTML = cstate.status_line;
    if (chat) {
      sendButton.disabled = cstate.busy;
      stopButton.disabled = !cstate.can_stop;
      const html = cstate.compare_html || "";
      if (compareBody.__html !== html) {
        compareBody.innerHTML = html; // sanitized by the kernel (render.compare)
        compareBody.__html = html;
      }
      comparePanel.hidden = !html;
    }
  }

  fromState();
  chrome();
  if (store.applied > applied) {
    // another view of this widget on the page has seen newer updates than the synced state
    // holds (the kernel keeps its state without re-sending it): ask for it
    healing = true;
    model.send({ action: "resync", have: applied });
  }
  if (store.scrollTop !== null && !store.atBottom) scroller.scrollTop = store.scrollTop;
  else settle(true);
  if (prompt && store.focused) {
    prompt.focus();
    if (store.selection) prompt.setSelectionRange(...store.selection);
  }

  const handlers = [
    ["msg:custom", onMessage],
    ["change:parts", queueState],
    ["change:seq", queueState],
    ["change:title", retitle],
    ...CHROME.map((name) => [`change:${name}`, fromModel]),
  ];
  for (const [name, fn] of handlers) model.on(name, fn);
  return () => {
    for (const [name, fn] of handlers) model.off(name, fn);
  };
}

export default { render };
