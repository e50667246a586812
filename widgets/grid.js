// ----- the exploration grid: prompts down, columns across, live ------------------------------
//
// Joined after lion_nb.js into one ES module (lion_nb.widgets.front.MODULE_FILES): it uses that
// file's helpers (node, button, named, render) and is reached from it at a few places: makeView
// (kind "grid"), assemble, chrome, settle and the view's clean-up. The kernel's side is
// lion_nb/widgets/grid_view.py; its actions (grid_run, grid_show, grid_window, and the shared
// open and stop) are in lion_nb/widgets/protocol.py; the static table (a saved notebook) is
// lion_nb/render/grid_html.py, in the same classes.
//
// The kernel sends the table as parts (a row per prompt, a cell per column, the summaries) and
// streams a running cell's text into it; the page draws the bar (Stop, and what the chosen cell
// offers: Open, Full text, Diff, Run again, its row's and column's Run again), moves between
// cells with the arrow keys (Enter opens, Escape closes the panel under the grid), tells the
// kernel which rows are in view (a large grid has only those on the page), and draws the chat
// view "Open" shows (the synced trait `chat`: another view of this module) under the grid.

const GRID_KEYS = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
const GRID_WINDOW_MS = 80; // at most one `grid_window` per this many ms while scrolling

function gridKey(row, col) {
  return `c${row}-${col}`;
}

function gridAt(key) {
  const found = /^c(\d+)-(\d+)$/.exec(key || "");
  return found ? [Number(found[1]), Number(found[2])] : null;
}

function gridFrame(view) {
  return view.shell.list.querySelector(".lion-grid-frame");
}

function gridShape(view) {
  const frame = gridFrame(view);
  if (!frame) return [0, 0];
  return [Number(frame.getAttribute("data-rows")) || 0, Number(frame.getAttribute("data-cols")) || 0];
}

function gridCell(view, key) {
  return view.shell.list.querySelector(`td.lion-grid-cell[data-key="${key}"]`);
}

function gridLabel(view, col) {
  const head = view.shell.list.querySelector(`th.lion-grid-col[data-col="${col}"]`);
  return head ? head.firstChild.textContent.trim() : `column ${col + 1}`;
}

// ----- the bar: Stop and the chosen cell's actions -------------------------------------------
function gridBar(view) {
  const { model } = view;
  const bar = node("div", "lion-grid-bar");
  bar.setAttribute("role", "toolbar");
  named(bar, "Grid controls");
  const stop = button("lion-act lion-grid-stop", "Stop", "Stop the grid's run", () => model.send({ action: "stop" }));
  named(stop, "Stop the grid");
  const chosen = node("span", "lion-grid-chosen");
  const send = (content) => view.gone || model.send(content);
  const acts = {
    open: button("lion-act lion-grid-open", "Open", "Show this cell's conversation in a chat view below, where you can continue it (Enter)",
      () => send({ action: "open", key: view.grid.key })),
    text: button("lion-act lion-grid-fulltext", "Full text", "Show this cell's whole reply under the grid",
      () => gridShow(view, "text")),
    diff: button("lion-act lion-grid-diff", "Diff", "Show this cell's reply against the baseline column's, word by word",
      () => gridShow(view, "diff")),
    cell: button("lion-act lion-grid-rerun", "Run again", "Run this cell again, afresh (the earlier reply stays reachable)",
      () => send({ action: "grid_run", cells: [gridAt(view.grid.key)] })),
    row: button("lion-act lion-grid-rerun-row", "Run row again", "Run every cell of this row again",
      () => send({ action: "grid_run", rows: [gridAt(view.grid.key)[0]] })),
    col: button("lion-act lion-grid-rerun-col", "Run column again", "Run every cell of this column again",
      () => send({ action: "grid_run", columns: [gridAt(view.grid.key)[1]] })),
  };
  bar.append(stop, chosen, ...Object.values(acts));
  return { bar, stop, chosen, acts };
}

function gridShow(view, what) {
  // the panel under the grid shows this cell's full text or diff; asked again: closed
  const panel = view.shell.list.querySelector(".lion-grid-detail");
  const same = panel && panel.getAttribute("data-key") === view.grid.key && panel.getAttribute("data-what") === what;
  if (!view.gone) view.model.send({ action: "grid_show", key: view.grid.key, what: same ? "" : what });
}

function gridNames(view) {
  // the bar names the chosen cell: "Row 2, gpt-4.1-mini"
  const { grid } = view;
  const at = gridAt(grid.key);
  const { chosen, acts } = grid.ui;
  const shown = at !== null && gridCell(view, grid.key) !== null;
  chosen.textContent = shown ? `Row ${at[0] + 1}, ${gridLabel(view, at[1])}:` : "";
  for (const el of Object.values(acts)) el.hidden = !shown;
  if (!shown) return;
  const where = `row ${at[0] + 1}, ${gridLabel(view, at[1])}`;
  named(acts.open, `Open the conversation of ${where}`);
  named(acts.text, `Full text of ${where}`);
  named(acts.diff, `Diff of ${where} against the baseline`);
  named(acts.cell, `Run ${where} again`);
  named(acts.row, `Run row ${at[0] + 1} again`);
  named(acts.col, `Run column ${gridLabel(view, at[1])} again`);
  const cell = gridCell(view, grid.key);
  acts.diff.disabled = view.gone || cell.classList.contains("lion-grid-base");
}

// ----- choosing a cell, and the keys -----------------------------------------------------------
function gridChoose(view, key, focus) {
  const { grid } = view;
  const old = gridCell(view, grid.key);
  if (old && grid.key !== key) {
    old.setAttribute("tabindex", "-1");
    old.removeAttribute("aria-selected");
  }
  grid.key = key;
  view.store.gridKey = key;
  const cell = gridCell(view, key);
  if (cell) {
    cell.setAttribute("tabindex", "0");
    cell.setAttribute("aria-selected", "true");
    if (focus) cell.focus({ preventScroll: false });
    grid.pendingFocus = null;
  } else if (focus) {
    grid.pendingFocus = key; // its row is not on the page yet: focused when it comes
  }
  gridNames(view);
}

function gridMove(view, [dr, dc]) {
  const [rows, cols] = gridShape(view);
  const at = gridAt(view.grid.key) || [0, 0];
  const row = Math.max(0, Math.min(rows - 1, at[0] + dr));
  const col = Math.max(0, Math.min(cols - 1, at[1] + dc));
  const key = gridKey(row, col);
  if (!gridCell(view, key)) gridScrollTo(view, row);
  gridChoose(view, key, true);
}

function gridScrollTo(view, row) {
  // a row off the page: scroll to where it will be; the kernel puts it (grid_window)
  const { scroller } = view.shell;
  const { head, rowH } = gridMetrics(view);
  scroller.scrollTop = Math.max(0, head + row * rowH - scroller.clientHeight / 2);
  gridWindow(view, true);
}

function gridKeydown(view, event, target) {
  const cell = target.closest && target.closest("td.lion-grid-cell");
  if (!cell) return;
  const move = GRID_KEYS[event.key];
  let handled = true;
  if (move) gridMove(view, move);
  else if (event.key === "Home") gridMove(view, [0, -1e9]);
  else if (event.key === "End") gridMove(view, [0, 1e9]);
  else if (event.key === "Enter" && !view.gone) view.model.send({ action: "open", key: view.grid.key });
  else if (event.key === "Escape" && view.shell.list.querySelector(".lion-grid-detail")) view.model.send({ action: "grid_show", key: view.grid.key, what: "" });
  else handled = false;
  if (handled) {
    event.preventDefault();
    event.stopPropagation(); // never JupyterLab's shortcuts
  }
}

function gridTakeFocus(view, frames) {
  // the notebook draws a view anew when its saved output is refreshed (a cell's end): the new
  // one takes the focus the old one had in a cell, once it is on the page and the old one is off
  // it (a second display of the same grid, still on the page, keeps its focus: after ~2 s of
  // frames this one gives up)
  requestAnimationFrame(() => {
    const { store, shell, grid } = view;
    const cell = gridCell(view, grid.key);
    const old = store.gridFocusList;
    if (!cell || !cell.isConnected || (old && old !== shell.list && old.isConnected)) {
      if (frames > 0) gridTakeFocus(view, frames - 1);
      return;
    }
    const active = document.activeElement;
    if (store.gridFocused && (!active || active === document.body)) gridChoose(view, grid.key, true);
  });
}

// ----- rows in view: a large grid has only those on the page ----------------------------------
function gridMetrics(view) {
  const row = view.shell.list.querySelector("tr.lion-grid-row");
  const cols = view.shell.list.querySelector("tr.lion-grid-cols");
  return { rowH: (row && row.offsetHeight) || 1, head: (cols && cols.offsetHeight) || 0 };
}

function gridWindow(view, now) {
  const { grid } = view;
  if (grid.windowTimer && !now) return;
  clearTimeout(grid.windowTimer);
  grid.windowTimer = setTimeout(() => {
    grid.windowTimer = 0;
    const [rows] = gridShape(view);
    const { scroller, list } = view.shell;
    const { rowH, head } = gridMetrics(view);
    const first = Math.max(0, Math.floor((scroller.scrollTop - head) / rowH));
    const count = Math.ceil(scroller.clientHeight / rowH) + 1;
    const want = [];
    for (let r = first; r < Math.min(rows, first + count); r++) want.push(r);
    const missing = want.some((r) => !list.querySelector(`tr.lion-grid-row[data-row="${r}"]`));
    if (missing && !view.gone && grid.asked !== `${first}:${count}`) {
      grid.asked = `${first}:${count}`;
      view.model.send({ action: "grid_window", first, count });
    }
  }, now ? 0 : GRID_WINDOW_MS);
}

// ----- the chat view "Open" shows, drawn by this module --------------------------------------
async function gridChat(view) {
  const { grid, model } = view;
  if (grid.chatDone) grid.chatDone();
  grid.chatDone = null;
  grid.chat.textContent = "";
  const ref = model.get("chat");
  const token = (grid.chatToken = {});
  if (!ref || !model.widget_manager) return;
  const id = String(ref).replace(/^(IPY_MODEL_|anywidget:)/, "");
  let child = null;
  try {
    child = await model.widget_manager.get_model(id);
  } catch (err) {
    console.warn("lion_nb: the opened cell's chat view is not on this page", err);
    return;
  }
  if (grid.chatToken !== token || !child) return;
  const el = node("div", "lion-grid-chat-view");
  grid.chat.append(el);
  grid.chatDone = render({ model: child, el });
  grid.chat.scrollIntoView({ block: "nearest" });
}

// ----- the grid ---------------------------------------------------------------------------------
function makeGrid(view) {
  const ui = gridBar(view);
  const chat = node("div", "lion-grid-chat");
  const head = node("div", "lion-grid-head");
  head.append(node("div", "lion-title", view.model.get("title") || ""), ui.bar);
  const grid = { el: head, ui, chat, key: view.store.gridKey || gridKey(0, 0), pendingFocus: null, focused: false, windowTimer: 0, asked: "", chatDone: null };
  const { list, scroller } = view.shell;
  // the keys are taken on the window, before the page's own: Notebook 7 handles keydown on the
  // document in the capture phase and stops the arrow keys there, before they reach the grid.
  // The target is the first of the event's path (marimo draws the view in a shadow root).
  const onKey = (event) => {
    const target = event.composedPath ? event.composedPath()[0] : event.target;
    if (target instanceof Element && list.contains(target)) gridKeydown(view, event, target);
  };
  window.addEventListener("keydown", onKey, true);
  // a cell put anew (its status changed) while focused takes the focus with it: given back
  const { store } = view;
  list.addEventListener("focusin", (event) => {
    grid.focused = Boolean(event.target.closest && event.target.closest("td.lion-grid-cell"));
    store.gridFocused = grid.focused;
    store.gridFocusList = list;
  });
  list.addEventListener("focusout", (event) => {
    if (event.relatedTarget) {
      grid.focused = store.gridFocused = false;
      return;
    }
    // to nowhere: a cell put anew (the focus is given back), the reader left for the page (the
    // list is still on it) or the notebook took this view off the page (the list is not)
    setTimeout(() => {
      if (list.isConnected && !list.contains(list.getRootNode().activeElement)) grid.focused = store.gridFocused = false;
    }, 0);
  });
  if (store.gridFocused) gridTakeFocus(view, 120);
  list.addEventListener("click", (event) => {
    const cell = event.target.closest && event.target.closest("td.lion-grid-cell");
    if (cell) gridChoose(view, cell.getAttribute("data-key"), true);
  });
  const onScroll = () => gridWindow(view, false);
  scroller.addEventListener("scroll", onScroll);
  const onChat = () => gridChat(view);
  view.model.on("change:chat", onChat);
  Object.assign(grid, {
    chrome(cstate) {
      // a button that disables itself (Stop, Run again) hands the focus to the chosen cell
      const chosen = gridCell(view, grid.key);
      setDisabled(ui.stop, view.gone || !cstate.can_stop, chosen);
      ui.stop.textContent = cstate.busy && !cstate.can_stop ? "Stopping…" : "Stop";
      for (const name of ["cell", "row", "col"]) setDisabled(ui.acts[name], view.gone || cstate.busy, chosen);
    },
    settle() {
      // cells put anew: one of them (the chosen) is in the tab order, the others by arrows
      for (const cell of list.querySelectorAll("td.lion-grid-cell:not([tabindex])")) cell.setAttribute("tabindex", "-1");
      if (!gridCell(view, grid.key)) {
        const first = list.querySelector("td.lion-grid-cell");
        if (first && !grid.pendingFocus) grid.key = first.getAttribute("data-key");
      }
      const lost = grid.focused && !list.contains(document.activeElement);
      const want = grid.pendingFocus || grid.key;
      gridChoose(view, want, Boolean((grid.pendingFocus || lost) && gridCell(view, want)));
      for (const panel of list.querySelectorAll(".lion-grid-detail:not([data-closer])")) {
        panel.setAttribute("data-closer", "");
        const close = button("lion-act lion-grid-close", "Close", "Close this panel (Escape)",
          () => view.gone || view.model.send({ action: "grid_show", key: view.grid.key, what: "" }));
        named(close, "Close the panel under the grid");
        panel.prepend(close);
      }
      gridWindow(view, false);
    },
    dispose() {
      clearTimeout(grid.windowTimer);
      scroller.removeEventListener("scroll", onScroll);
      window.removeEventListener("keydown", onKey, true);
      view.model.off("change:chat", onChat);
      if (grid.chatDone) grid.chatDone();
    },
  });
  if (view.model.get("chat")) queueMicrotask(onChat);
  return grid;
}
