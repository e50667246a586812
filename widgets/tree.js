// ----- the tree of what could have been: one turn's alternatives as a prefix tree ----
//
// Joined after lion_nb.js and tokens.js into one ES module (lion_nb.widgets.front.MODULE_FILES):
// it uses lion_nb.js's helpers (node, button, named) and is reached from it at two places: the
// `tree` op and the marks drawn after each update (treeMarks). The kernel's side is
// lion_nb/widgets/reply_tree_panel.py (the words it sends come from
// lion_nb/viewmodels/reply_tree.py); the op and the actions are in lion_nb/widgets/protocol.py.
//
// Drawn as an indented outline (an ARIA tree), not a node-link graph: 5-10 replies of ~50 tokens
// are mostly text, and text reads best as lines: the shared start once, each branch indented
// under the node it leaves, a badge counting the alternatives through a node out of those at
// its parent, the alternative's name where its reply ends. A graph would leave the text in
// boxes too small to read or in tooltips. Keys: Up/Down move between nodes, Right/Left to a
// child/the parent, Home/End, Enter (or a click) shows that branch in the chat view.

function treeOp(view, op) {
  if (view.tree && op.v <= view.tree.v) return; // already drawn (from the synced state)
  if (op.open === false) {
    if (view.tree) view.tree.el.remove();
    view.tree = null;
    return;
  }
  if (!view.tree) {
    if (!op.reset) {
      // a delta the page cannot place: draw the kernel's whole tree (the synced state)
      const state = view.cstate.tree_state;
      if (state && state.op === "tree" && state.v >= op.v) treeOp(view, state);
      return;
    }
    view.tree = makeTree(view);
  }
  applyTree(view, view.tree, op);
}

function treeMarks(view) {
  if (!view.chat) return;
  const state = view.cstate.tree_state;
  if (state && state.op === "tree" && state.v > (view.tree ? view.tree.v : 0)) treeOp(view, state);
  treeControls(view);
}

// ----- the panel -----------------------------------------------------------------------------
function makeTree(view) {
  const tree = {
    v: 0, nodes: new Map(), alts: [], shown: -1, active: null,
    el: node("section", "lion-rtree lion-rtree-live"),
    title: node("span", "lion-rtree-title"),
    meta: node("span", "lion-meta lion-rtree-meta"),
    note: node("div", "lion-rtree-note"),
    list: node("ul", "lion-rtree-list"),
  };
  named(tree.el, "What could have been");
  tree.note.setAttribute("role", "status");
  tree.list.setAttribute("role", "tree");
  tree.el.append(treeHead(view, tree), tree.note, tree.list);
  treeEvents(view, tree);
  const { root } = view.shell;
  root.insertBefore(tree.el, view.comparePanel ? view.comparePanel.el : null);
  return tree;
}

function treeHead(view, tree) {
  const head = node("div", "lion-rtree-head");
  const close = button("lion-act lion-rtree-close", "Close", "Close the tree",
    () => view.model.send({ action: "tree", key: "", open: false }));
  named(close, "Close the tree of alternatives");
  head.append(tree.title, tree.meta, close);
  return head;
}

function treeEvents(view, tree) {
  tree.list.addEventListener("keydown", (event) => treeKeys(view, tree, event));
  tree.list.addEventListener("keyup", (event) => event.stopPropagation());
  tree.list.addEventListener("click", (event) => {
    const item = itemOf(tree, event.target);
    if (item) pickNode(view, tree, item);
  });
}

function itemOf(tree, target) {
  const el = target && target.closest ? target.closest(".lion-rtree-node") : null;
  return el && tree.list.contains(el) ? el : null;
}

function applyTree(view, tree, op) {
  if (op.reset) {
    tree.nodes.clear();
    tree.list.textContent = "";
    tree.active = null;
  }
  tree.v = op.v;
  applyHead(tree, op);
  const relabel = op.alts !== undefined || op.shown !== undefined;
  if (op.alts !== undefined) tree.alts = op.alts;
  if (op.shown !== undefined) tree.shown = op.shown;
  for (const n of op.nodes || []) putNode(tree, n);
  for (const id of op.drop || []) {
    const gone = tree.nodes.get(id);
    if (gone) gone.el.remove();
    tree.nodes.delete(id);
  }
  const touched = relabel ? [...tree.nodes.values()] : (op.nodes || []).map((n) => tree.nodes.get(n.id));
  for (const item of touched) drawNode(tree, item);
  if (op.drop || op.nodes) treeShape(tree);
}

function applyHead(tree, op) {
  if (op.title !== undefined) {
    tree.title.textContent = op.title;
    named(tree.list, op.title);
  }
  if (op.head !== undefined) tree.meta.textContent = op.head;
  if (op.note !== undefined) {
    tree.note.textContent = op.note;
    tree.note.hidden = !op.note;
  }
}

function putNode(tree, n) {
  let item = tree.nodes.get(n.id);
  if (!item) {
    item = makeNode(n.id);
    tree.nodes.set(n.id, item);
  }
  Object.assign(item, { o: n.o, b: n.b, e: n.e, of: n.of });
  if (n.t !== undefined) item.text = n.t;
  if (n.a !== undefined) item.text += n.a;
  if (n.w !== undefined) item.words = n.w;
  if (item.p !== n.p || !item.el.parentNode) {
    item.p = n.p;
    placeNode(tree, item);
  }
}

function makeNode(id) {
  // <li treeitem> named by its row: "3 of 5 samples continue “ the tide” , sample 2/5"
  const item = { id, p: -1, text: "", words: "", el: node("li", "lion-rtree-node") };
  const row = node("div", "lion-rtree-row");
  row.id = `lion-rtree-${Math.random().toString(36).slice(2)}-${id}`;
  item.badge = node("span", "lion-rtree-n");
  item.badge.setAttribute("aria-hidden", "true");
  item.said = node("span", "lion-sr");
  item.textEl = node("span", "lion-rtree-text");
  item.ends = node("span", "lion-rtree-ends");
  row.append(item.badge, item.said, item.textEl, node("span", "lion-sr", "”"), item.ends);
  item.group = node("ul", "lion-rtree-list");
  item.group.setAttribute("role", "group");
  item.el.append(row, item.group);
  item.el.setAttribute("role", "treeitem");
  item.el.setAttribute("aria-labelledby", row.id);
  item.el.tabIndex = -1;
  item.el.setAttribute("data-id", id);
  return item;
}

function placeNode(tree, item) {
  // among its siblings in order (`o`: the earliest alternative through it)
  const parent = item.p === 0 ? null : tree.nodes.get(item.p);
  const group = parent ? parent.group : tree.list;
  let before = null;
  for (const sib of group.children) {
    const other = tree.nodes.get(Number(sib.getAttribute("data-id")));
    if (other && other !== item && other.o > item.o) {
      before = sib;
      break;
    }
  }
  group.insertBefore(item.el, before);
}

function drawNode(tree, item) {
  if (!item) return;
  item.badge.textContent = `${item.b.length}/${item.of}`;
  item.said.textContent = `${item.words} “`;
  if (item.textEl.textContent !== item.text) item.textEl.textContent = item.text;
  drawEnds(tree, item);
  const on = item.b.includes(tree.shown);
  item.el.classList.toggle("lion-rtree-on", on);
  item.el.setAttribute("aria-selected", on && item.e.includes(tree.shown) ? "true" : "false");
}

function drawEnds(tree, item) {
  // the alternatives whose reply ends here, by name ("sample 2/5 · streaming")
  item.ends.textContent = "";
  for (const i of item.e) {
    const shown = i === tree.shown;
    const end = node("span", shown ? "lion-rtree-end lion-rtree-shown" : "lion-rtree-end",
      `${tree.alts[i] || `reply ${i + 1}`}${shown ? " · shown" : ""}`);
    item.ends.append(node("span", "lion-sr", ", "), end);
  }
}

function treeShape(tree) {
  // levels, positions among siblings, expanded state; one tab stop (roving tabindex)
  const walk = (group, level) => {
    const items = [...group.children];
    items.forEach((el, k) => {
      el.setAttribute("aria-level", level);
      el.setAttribute("aria-setsize", items.length);
      el.setAttribute("aria-posinset", k + 1);
      const item = tree.nodes.get(Number(el.getAttribute("data-id")));
      const kids = item.group.children.length > 0;
      if (kids) el.setAttribute("aria-expanded", "true");
      else el.removeAttribute("aria-expanded");
      item.group.hidden = !kids;
      walk(item.group, level + 1);
    });
  };
  walk(tree.list, 1);
  const items = treeItems(tree);
  if (!items.includes(tree.active)) tree.active = items[0] || null;
  for (const el of items) el.tabIndex = el === tree.active ? 0 : -1;
}

// ----- keys, picking -------------------------------------------------------------------------
function treeItems(tree) {
  return [...tree.list.querySelectorAll(".lion-rtree-node")];
}

function focusNode(tree, el) {
  if (!el) return;
  if (tree.active && tree.active !== el) tree.active.tabIndex = -1;
  tree.active = el;
  el.tabIndex = 0;
  el.focus();
}

function treeKeys(view, tree, event) {
  event.stopPropagation(); // JupyterLab's shortcuts never see them
  const el = itemOf(tree, event.target);
  if (!el) return;
  const to = keyTarget(tree, el, event.key);
  if (to !== undefined) {
    event.preventDefault();
    if (to) focusNode(tree, to);
  } else if (event.key === "Enter" || event.key === " ") {
    event.preventDefault();
    pickNode(view, tree, el);
  }
}

function keyTarget(tree, el, key) {
  // where a key moves the focus (undefined: not a moving key; null: nowhere to go)
  const items = treeItems(tree);
  const at = items.indexOf(el);
  const item = tree.nodes.get(Number(el.getAttribute("data-id")));
  const parent = item && item.p ? tree.nodes.get(item.p) : null;
  const moves = {
    ArrowDown: () => items[at + 1] || null,
    ArrowUp: () => items[at - 1] || null,
    Home: () => items[0],
    End: () => items[items.length - 1],
    ArrowRight: () => item.group.firstElementChild,
    ArrowLeft: () => (parent ? parent.el : null),
  };
  return moves[key] ? moves[key]() : undefined;
}

function pickNode(view, tree, el) {
  focusNode(tree, el);
  view.model.send({ action: "tree_pick", node: Number(el.getAttribute("data-id")) });
}

// ----- the "Tree" control on replies that have alternatives --------------------------------------
function treeControls(view) {
  const alts = view.cstate.alt_marks || {};
  let n = 0;
  for (const card of view.shell.list.querySelectorAll('.lion-msg[data-id][data-role="assistant"]')) {
    n += 1;
    const head = card.querySelector(".lion-head");
    if (!head) continue;
    const key = card.getAttribute("data-id");
    let control = head.querySelector(".lion-tree-btn");
    if (!alts[key]) {
      if (control) control.remove();
      continue;
    }
    if (!control) {
      control = button("lion-act lion-tree-btn", "Tree", "Show this turn's alternatives as one tree (where they diverge)",
        () => view.model.send({ action: "tree", key: control.closest(".lion-msg").getAttribute("data-id"), open: true }));
      head.insertBefore(control, head.querySelector(".lion-copy-msg"));
    }
    named(control, `Tree of the alternatives of reply ${n}`);
  }
}
