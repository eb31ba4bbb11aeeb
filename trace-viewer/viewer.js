// The trace viewer's renderer, for both faces: `acp trace` (a page served by acp, its data
// from the HTTP API: http-source.js) and the VS Code extension's "ACP: Show Protocol Trace"
// webview (its data from the extension's model over postMessage). It asks a *source* for
// what it shows, a page of rows at a time, so a trace of any size costs the page only what is
// on screen (at most MAX_PAGES pages of rows are kept).
//
// Everything from the trace is shown as text: DOM built with createElement and textContent
// only (never innerHTML), control, bidi and invisible characters shown escaped, long strings
// and large objects folded. Styles come from viewer.css; nothing inline (the pages' CSPs allow
// only their own files).
//
// A source: { status(), summary(), rows(filter, from, count), locate(filter, n), turns(session),
// message(n) },
// each a promise of the JSON described in trace-viewer/README.md; rows/locate may reject with
// an error whose `superseded` is true (a newer search replaced it), which is ignored.

import { jsonTree, textBlock } from "./viewer/json.js";
import { count, el, formatBytes, formatMs, visibleLine } from "./viewer/text.js";

export { formatMs, visibleLine, visibleText } from "./viewer/text.js";
export { jsonTree } from "./viewer/json.js";

const ROW_H = 24;
const PAGE = 200;
const MAX_PAGES = 40;
/** Browsers cap an element's height; past it the scrollbar maps to rows proportionally. */
const MAX_SCROLL_PX = 8_000_000;
const POLL_MS = 1000;

// ---- the viewer ------------------------------------------------------------------------------

/** Starts the viewer in `root` over `source`. Options: `filter` (the first filter), `poll`
 *  (ms between looks at the source's status; 0: never). Returns { refresh, dispose }. */
export function startViewer(root, source, options = {}) {
  const v = new Viewer(root, source, options);
  v.start();
  return { refresh: () => v.poll(true), dispose: () => v.dispose(), viewer: v };
}

class Viewer {
  constructor(root, source, options) {
    this.root = root;
    this.source = source;
    this.options = options;
    this.filter = { group: true, ...(options.filter ?? {}) };
    this.status = undefined;
    this.total = 0;
    this.pages = new Map();
    this.loading = new Set();
    this.key = "";
    this.selected = undefined; // row n
    this.selectedIndex = undefined;
    this.pairOfSelected = undefined;
    this.lanes = [];
    this.tab = "timeline";
    this.timer = undefined;
    this.disposed = false;
    this.renderQueued = false;
    this.followTail = false;
    this.detailFor = undefined;
    this.settled = 0;
    this.build();
  }

  build() {
    const r = this.root;
    r.replaceChildren();
    r.classList.add("tv");
    const header = el("div", "tv-header");
    this.titleEl = el("span", "tv-title", "Protocol trace");
    this.countsEl = el("span", "tv-counts", "reading…");
    const tabs = el("div", "tv-tabs");
    this.tabButtons = {};
    for (const [id, label] of [
      ["timeline", "Timeline"],
      ["summary", "Summary"],
    ]) {
      const b = el("button", "tv-tab", label);
      b.type = "button";
      b.dataset.tab = id;
      b.addEventListener("click", () => this.showTab(id));
      tabs.append(b);
      this.tabButtons[id] = b;
    }
    header.append(this.titleEl, this.countsEl, tabs);
    this.noticesEl = el("div", "tv-notices");

    const filters = el("div", "tv-filters");
    const labelled = (text, input) => {
      const l = el("label", "", text);
      l.append(input);
      return l;
    };
    this.methodSel = el("select", "tv-f-method");
    this.sessionSel = el("select", "tv-f-session");
    this.turnSel = el("select", "tv-f-turn");
    this.errorsBox = el("input", "tv-f-errors");
    this.errorsBox.type = "checkbox";
    this.groupBox = el("input", "tv-f-group");
    this.groupBox.type = "checkbox";
    this.minMsInput = el("input", "tv-f-minms");
    this.minMsInput.type = "number";
    this.minMsInput.min = "0";
    this.minMsInput.placeholder = "ms";
    this.searchInput = el("input", "tv-f-search");
    this.searchInput.type = "search";
    this.searchInput.placeholder = "Search the messages";
    const clear = el("button", "tv-f-clear", "Clear");
    clear.type = "button";
    filters.append(
      labelled("Method", this.methodSel),
      labelled("Session", this.sessionSel),
      labelled("Turn", this.turnSel),
      labelled("Errors only", this.errorsBox),
      labelled("Slower than", this.minMsInput),
      labelled("Group updates", this.groupBox),
      this.searchInput,
      clear,
    );
    this.methodSel.addEventListener("change", () => this.setFilter({ method: this.methodSel.value || undefined }));
    this.sessionSel.addEventListener("change", () => {
      void this.setFilter({ session: this.sessionSel.value || undefined, turn: undefined });
      void this.fillTurns();
    });
    this.turnSel.addEventListener("change", () =>
      this.setFilter({ turn: this.turnSel.value === "" ? undefined : Number(this.turnSel.value) }),
    );
    this.errorsBox.addEventListener("change", () => this.setFilter({ errors: this.errorsBox.checked || undefined }));
    this.groupBox.addEventListener("change", () => this.setFilter({ group: this.groupBox.checked || undefined }));
    let minTimer;
    this.minMsInput.addEventListener("input", () => {
      clearTimeout(minTimer);
      minTimer = setTimeout(() => {
        const v = Number(this.minMsInput.value);
        this.setFilter({ minMs: this.minMsInput.value !== "" && Number.isFinite(v) ? v : undefined });
      }, 300);
    });
    let searchTimer;
    this.searchInput.addEventListener("input", () => {
      clearTimeout(searchTimer);
      searchTimer = setTimeout(() => this.setFilter({ q: this.searchInput.value || undefined }), 300);
    });
    clear.addEventListener("click", () => {
      this.searchInput.value = "";
      this.minMsInput.value = "";
      this.setFilter({ method: undefined, session: undefined, turn: undefined, errors: undefined, minMs: undefined, q: undefined }, true);
    });

    const main = el("div", "tv-main");
    const timeline = el("section", "tv-timeline");
    this.headEl = el("div", "tv-head");
    this.scrollEl = el("div", "tv-scroll");
    this.scrollEl.tabIndex = 0;
    this.spacerEl = el("div", "tv-spacer");
    this.rowsEl = el("div", "tv-rows");
    this.emptyEl = el("div", "tv-empty tv-hidden");
    this.scrollEl.append(this.spacerEl, this.rowsEl, this.emptyEl);
    timeline.append(this.headEl, this.scrollEl);
    this.detailEl = el("aside", "tv-detail");
    this.detailEl.append(el("div", "tv-placeholder", "Select a message to see it here."));
    main.append(timeline, this.detailEl);
    this.summaryEl = el("section", "tv-summary tv-hidden");
    this.timelineParts = [filters, main];
    r.append(header, this.noticesEl, filters, main, this.summaryEl);

    this.scrollEl.addEventListener("scroll", () => this.queueRender());
    this.scrollEl.addEventListener("keydown", (e) => this.key_(e));
    this.rowsEl.addEventListener("click", (e) => {
      const row = e.target.closest(".tv-row");
      if (row && row.dataset.index !== undefined) this.select(Number(row.dataset.index), Number(row.dataset.n));
      const turn = e.target.closest(".tv-turn");
      if (turn && turn.dataset.turn !== undefined && e.detail === 2) {
        this.setFilter({ session: turn.dataset.session, turn: Number(turn.dataset.turn) });
      }
    });
    this.resizeObserver = typeof ResizeObserver !== "undefined" ? new ResizeObserver(() => this.queueRender()) : undefined;
    this.resizeObserver?.observe(this.scrollEl);
    this.syncControls();
    this.showTab("timeline");
  }

  start() {
    void this.poll(true);
    const every = this.options.poll ?? POLL_MS;
    if (every > 0) {
      const tick = async () => {
        if (this.disposed) return;
        if (typeof document === "undefined" || document.visibilityState !== "hidden") await this.poll(false);
        this.timer = setTimeout(tick, every);
      };
      this.timer = setTimeout(tick, every);
    }
  }

  dispose() {
    this.disposed = true;
    clearTimeout(this.timer);
    this.resizeObserver?.disconnect();
  }

  /** Looks at the source's status; reloads what is shown when the trace changed. */
  async poll(force) {
    let status;
    try {
      status = await this.source.status();
    } catch (e) {
      this.notices([{ text: `Cannot reach the trace: ${e.message}`, bad: true }]);
      return;
    }
    const before = this.status;
    this.status = status;
    this.showStatus();
    const changed = force || !before || before.rows !== status.rows || before.generation !== status.generation;
    if (!changed) return;
    if (before && before.generation !== status.generation) {
      this.selected = undefined;
      this.selectedIndex = undefined;
    }
    this.lanes = status.lanes ?? [];
    this.drawHead();
    this.fillSelects();
    const atEnd = this.atEnd();
    await this.reload(atEnd && this.followTail);
    if (this.tab === "summary") void this.showSummary();
  }

  atEnd() {
    const s = this.scrollEl;
    return s.scrollHeight - s.scrollTop - s.clientHeight < ROW_H * 2;
  }

  filterKey() {
    return JSON.stringify(this.filter);
  }

  /** Drops the pages and loads the first one again (and the rows on screen). */
  async reload(toEnd) {
    this.key = this.filterKey();
    this.pages.clear();
    this.loading.clear();
    await this.loadPage(Math.floor(this.firstVisible() / PAGE));
    if (toEnd) this.scrollEl.scrollTop = this.scrollEl.scrollHeight;
    this.queueRender();
  }

  async loadPage(p) {
    const key = this.key;
    const id = `${key}#${p}`;
    if (this.pages.has(p) || this.loading.has(id)) return;
    this.loading.add(id);
    let page;
    try {
      page = await this.source.rows(this.filter, p * PAGE, PAGE);
    } catch (e) {
      this.loading.delete(id);
      if (!e.superseded) this.notices([{ text: `Cannot read the trace: ${e.message}`, bad: true }]);
      return;
    }
    this.loading.delete(id);
    if (key !== this.key) return;
    this.pages.set(p, page.items);
    while (this.pages.size > MAX_PAGES) this.pages.delete(this.pages.keys().next().value);
    if (page.total !== this.total) {
      this.total = page.total;
      this.sizeSpacer();
    }
    this.queueRender();
  }

  sizeSpacer() {
    this.spacerEl.style.height = `${Math.min(this.total * ROW_H, MAX_SCROLL_PX)}px`;
    this.emptyEl.classList.toggle("tv-hidden", this.total > 0);
    this.emptyEl.textContent = this.status && this.status.rows === 0 ? "The trace has no messages yet." : "No message matches the filters.";
  }

  /** The first item on screen. */
  firstVisible() {
    const s = this.scrollEl;
    const visible = Math.max(1, Math.ceil(s.clientHeight / ROW_H));
    if (this.total * ROW_H <= MAX_SCROLL_PX) return Math.floor(s.scrollTop / ROW_H);
    const room = Math.max(1, s.scrollHeight - s.clientHeight);
    return Math.round((s.scrollTop / room) * Math.max(0, this.total - visible));
  }

  /** Scrolls so that item `i` is on screen. */
  scrollToIndex(i) {
    const s = this.scrollEl;
    const visible = Math.max(1, Math.floor(s.clientHeight / ROW_H));
    const first = this.firstVisible();
    if (i >= first && i < first + visible) return;
    const target = Math.max(0, i - Math.floor(visible / 2));
    if (this.total * ROW_H <= MAX_SCROLL_PX) s.scrollTop = target * ROW_H;
    else s.scrollTop = (target / Math.max(1, this.total - visible)) * (s.scrollHeight - s.clientHeight);
  }

  queueRender() {
    if (this.renderQueued) return;
    this.renderQueued = true;
    requestAnimationFrame(() => {
      this.renderQueued = false;
      this.render();
    });
  }

  item(i) {
    const page = this.pages.get(Math.floor(i / PAGE));
    return page?.[i % PAGE];
  }

  render() {
    if (this.disposed) return;
    const s = this.scrollEl;
    const first = this.firstVisible();
    const visible = Math.ceil(s.clientHeight / ROW_H) + 1;
    const last = Math.min(this.total, first + visible);
    const exact = this.total * ROW_H <= MAX_SCROLL_PX;
    const top = exact ? first * ROW_H : s.scrollTop;
    this.rowsEl.style.transform = `translateY(${top}px)`;
    this.followTail = this.total > 0 && last >= this.total;
    const rows = [];
    let prev = first > 0 ? this.item(first - 1) : undefined;
    for (let i = first; i < last; i++) {
      const it = this.item(i);
      if (!it) {
        void this.loadPage(Math.floor(i / PAGE));
        const ph = el("div", "tv-row tv-placeholder");
        ph.append(el("span", "tv-line", "…"));
        rows.push(ph);
        prev = undefined;
        continue;
      }
      rows.push(this.rowEl(it, i, prev));
      prev = it;
    }
    this.rowsEl.replaceChildren(...rows);
  }

  laneX(name) {
    const i = this.lanes.indexOf(name);
    const n = this.lanes.length;
    if (i < 0) return undefined;
    return n === 1 ? 50 : 6 + (i * 88) / (n - 1);
  }

  drawHead() {
    const lanes = el("div", "tv-lanes");
    for (const name of this.lanes) {
      const s = el("span", "", visibleLine(name));
      s.style.left = `${this.laneX(name)}%`;
      lanes.append(s);
    }
    this.headEl.replaceChildren(
      el("span", "tv-line", "line"),
      el("span", "tv-time", "time (s)"),
      lanes,
      el("span", "tv-dur", "took"),
      el("span", "tv-turn tv-none", "turn"),
    );
  }

  rowEl(it, i, prev) {
    const row = el("div", `tv-row tv-k-${it.kind}`);
    row.dataset.index = String(i);
    row.dataset.n = String(it.n);
    if (it.error) row.classList.add("tv-error");
    if (it.cancel) row.classList.add("tv-cancel");
    if (it.n === this.selected) row.classList.add("tv-selected");
    else if (it.n === this.pairOfSelected) row.classList.add("tv-paired");
    if (it.turn !== null && (!prev || prev.turn !== it.turn) && it.kind === "request" && it.method === "session/prompt")
      row.classList.add("tv-turn-start");
    row.append(el("span", "tv-line", it.entry ? `${it.line}.${it.entry}` : String(it.line)));
    row.append(el("span", "tv-time", it.t === null ? "" : (it.t / 1000).toFixed(3)));
    const lanes = el("div", "tv-lanes");
    for (const name of this.lanes) {
      const l = el("div", "tv-lane");
      l.style.left = `${this.laneX(name)}%`;
      lanes.append(l);
    }
    const label = el("span", "tv-label");
    const mark = it.error ? "✕" : it.cancel ? "⊘" : "";
    if (mark) label.append(el("span", "tv-mark", `${mark} `));
    const x1 = this.laneX(it.from);
    const x2 = this.laneX(it.to);
    if (it.kind === "malformed" || x1 === undefined) {
      const free = el("span", "tv-free");
      free.append(el("span", "tv-method tv-error-text", it.kind === "malformed" ? "not a trace line: " : `${it.kind}: `));
      free.append(el("span", "tv-preview", visibleLine(it.preview ?? "")));
      lanes.append(free);
    } else if (x2 === undefined) {
      const dot = el("div", "tv-dot");
      dot.style.left = `${x1}%`;
      lanes.append(dot);
      const free = el("span", "tv-free");
      free.style.left = `calc(${x1}% + 10px)`;
      free.append(el("span", "tv-sub", `${it.kind} `), el("span", "tv-preview", visibleLine(it.preview ?? "")));
      lanes.append(free);
    } else {
      const arrow = el("div", `tv-arrow ${x2 >= x1 ? "tv-ltr" : "tv-rtl"}`);
      arrow.style.left = `${Math.min(x1, x2)}%`;
      arrow.style.width = `${Math.abs(x2 - x1)}%`;
      if (it.kind === "response" || it.kind === "error") arrow.classList.add("tv-answer");
      if (it.kind === "notification") arrow.classList.add("tv-note");
      const pairId = it.kind === "request" ? it.n : it.pair;
      if (pairId !== null && pairId !== undefined) arrow.style.setProperty("--tv-h", String(Math.round((pairId * 137.508) % 360)));
      const name = it.method ?? (it.kind === "invalid" ? "invalid message" : it.kind === "oversize" ? "oversize message" : it.kind);
      label.append(el("span", "tv-method", visibleLine(name)));
      if (it.count > 1) label.append(el("span", "tv-sub", ` ×${count(it.count)}`));
      if (it.sub) label.append(el("span", "tv-sub", ` · ${visibleLine(it.sub)}`));
      if (it.kind === "response" || it.kind === "error") label.prepend(el("span", "tv-sub", "↩ "));
      if (it.preview && it.preview !== it.sub) label.append(el("span", "tv-preview", `  ${visibleLine(it.preview)}`));
      arrow.append(label);
      lanes.append(arrow);
    }
    row.append(lanes);
    const dur = el("span", "tv-dur");
    if (it.ms !== null && it.ms !== undefined) {
      dur.textContent = formatMs(it.ms);
      if (this.filter.minMs !== undefined || it.ms >= 1000) dur.classList.add("tv-slow");
    } else if (it.kind === "request" && it.pair === null) {
      dur.textContent = "no answer";
    }
    row.append(dur);
    const turn = el("span", "tv-turn");
    if (it.turn !== null && it.turnN !== null) {
      const si = this.status?.sessions?.indexOf(it.session) ?? 0;
      turn.textContent = `S${si + 1}·T${it.turnN}`;
      turn.title = `session ${visibleLine(it.session ?? "")}, turn ${it.turnN} (double-click: only this turn)`;
      turn.dataset.turn = String(it.turn);
      turn.dataset.session = it.session ?? "";
      turn.style.setProperty("--tv-s", String(Math.round(((si + 1) * 97.3) % 360)));
    } else {
      turn.classList.add("tv-none");
      if (it.session) {
        const si = this.status?.sessions?.indexOf(it.session) ?? 0;
        turn.textContent = `S${si + 1}`;
        turn.title = `session ${visibleLine(it.session)}`;
      }
    }
    row.append(turn);
    return row;
  }

  key_(e) {
    const moves = { ArrowDown: 1, ArrowUp: -1, PageDown: 20, PageUp: -20 };
    if (e.key in moves || e.key === "Home" || e.key === "End") {
      e.preventDefault();
      const i =
        e.key === "Home"
          ? 0
          : e.key === "End"
            ? this.total - 1
            : Math.min(this.total - 1, Math.max(0, (this.selectedIndex ?? -1) + moves[e.key]));
      void this.selectIndex(i);
    } else if (e.key === "Enter" && this.pairOfSelected !== undefined) {
      e.preventDefault();
      void this.goToRow(this.pairOfSelected);
    }
  }

  async selectIndex(i) {
    if (i < 0 || i >= this.total) return;
    this.scrollToIndex(i);
    let it = this.item(i);
    if (!it) {
      await this.loadPage(Math.floor(i / PAGE));
      it = this.item(i);
    }
    if (it) this.select(i, it.n);
  }

  select(i, n) {
    this.selectedIndex = i;
    this.selected = n;
    const it = this.item(i);
    this.pairOfSelected = it && it.pair !== null ? it.pair : undefined;
    this.queueRender();
    void this.showDetail(n);
  }

  /** Selects row `n`, wherever it is (the filters are cleared if they hide it). */
  async goToRow(n) {
    let at = await this.source.locate(this.filter, n).catch(() => ({ index: null }));
    if (at.index === null) {
      this.filter = { group: this.filter.group };
      this.searchInput.value = "";
      this.minMsInput.value = "";
      this.syncControls();
      await this.reload(false);
      at = await this.source.locate(this.filter, n).catch(() => ({ index: null }));
      if (at.index === null) return;
    }
    this.showTab("timeline");
    await this.selectIndex(at.index);
  }

  async setFilter(change, keepGroup) {
    const next = { ...this.filter, ...change };
    for (const k of Object.keys(next)) if (next[k] === undefined) delete next[k];
    if (keepGroup) next.group = this.filter.group;
    this.filter = next;
    this.syncControls();
    this.total = 0;
    this.scrollEl.scrollTop = 0;
    await this.reload(false);
    this.sizeSpacer();
    if (this.selected !== undefined) {
      const at = await this.source.locate(this.filter, this.selected).catch(() => ({ index: null }));
      if (at.index !== null) {
        this.selectedIndex = at.index;
        this.scrollToIndex(at.index);
        this.queueRender();
      }
    }
    // For tests and tools: how many filter changes have been shown.
    this.root.dataset.settled = String(++this.settled);
  }

  syncControls() {
    const f = this.filter;
    this.errorsBox.checked = !!f.errors;
    this.groupBox.checked = !!f.group;
    this.methodSel.value = f.method ?? "";
    this.sessionSel.value = f.session ?? "";
    this.turnSel.value = f.turn === undefined ? "" : String(f.turn);
    if (f.q !== undefined && this.searchInput.value !== f.q) this.searchInput.value = f.q;
  }

  fillSelects() {
    const s = this.status;
    const fill = (sel, values, all) => {
      const want = [all, ...values.map((v) => v.label)].join("\n");
      if (sel.dataset.filled === want) return;
      sel.dataset.filled = want;
      const opts = [el("option", "", all)];
      opts[0].value = "";
      for (const v of values) {
        const o = el("option", "", v.label);
        o.value = v.value;
        opts.push(o);
      }
      sel.replaceChildren(...opts);
    };
    fill(
      this.methodSel,
      [...(s.methods ?? [])].sort().map((m) => ({ value: m, label: visibleLine(m) })),
      "all",
    );
    fill(
      this.sessionSel,
      (s.sessions ?? []).map((m, i) => ({ value: m, label: `S${i + 1} ${visibleLine(m)}` })),
      "all",
    );
    this.syncControls();
    void this.fillTurns();
  }

  /** The turn menu: the turns of the session chosen (none without one). */
  async fillTurns() {
    const session = this.filter.session;
    let turns = [];
    if (session) {
      try {
        turns = (await this.source.turns(session)).turns;
      } catch {
        turns = [];
      }
      if (session !== this.filter.session) return;
    }
    const si = (this.status?.sessions ?? []).indexOf(session) + 1;
    const want = [session ?? "", ...turns.map((t) => `${t.turn}:${t.stop}`)].join("\n");
    if (this.turnSel.dataset.filled === want) return;
    this.turnSel.dataset.filled = want;
    const all = el("option", "", session ? "all" : "(choose a session)");
    all.value = "";
    const opts = [all];
    for (const t of turns) {
      const o = el(
        "option",
        "",
        `S${si}·T${t.n}${t.stop ? ` · ${visibleLine(t.stop)}` : " · open"}${t.ms !== null ? ` · ${formatMs(t.ms)}` : ""}`,
      );
      o.value = String(t.turn);
      opts.push(o);
    }
    this.turnSel.replaceChildren(...opts);
    this.turnSel.disabled = !session;
    this.syncControls();
  }

  showStatus() {
    const s = this.status;
    const name = s.file ? s.file.split(/[\\/]/).pop() : "trace";
    this.titleEl.textContent = visibleLine(name);
    this.titleEl.title = visibleLine(s.file ?? "");
    const reading = s.size > s.fed && !s.capped ? ` · reading… ${Math.floor((100 * s.fed) / Math.max(1, s.size))}%` : "";
    this.countsEl.textContent = `${count(s.rows)} messages · ${count(s.turns)} turns · ${formatBytes(s.fed)}${reading}`;
    const notes = [];
    if (s.problem) notes.push({ text: `The file cannot be read now: ${s.problem}`, bad: true });
    if (s.restarted) notes.push({ text: `Read again: ${s.restarted}.` });
    if (s.capped)
      notes.push({
        text: `Reading stopped at line ${count(s.capped.line)} (byte ${count(s.capped.offset)}): the viewer keeps at most ${count(s.capped.maxRows)} messages.`,
        bad: true,
      });
    if (s.malformed > 0)
      notes.push({
        text: `${count(s.malformed)} line(s) are not trace lines (the first is line ${count(s.firstMalformed)}); they are shown as text.`,
        bad: true,
      });
    if (s.incomplete && s.fed >= s.size)
      notes.push({
        text: `The last line is incomplete (${count(s.incomplete.bytes)} bytes from byte ${count(s.incomplete.offset)}): reading stopped there. It is still being written, or the file was cut.`,
      });
    this.notices(notes);
  }

  notices(list) {
    const want = JSON.stringify(list);
    if (this.noticesEl.dataset.shown === want) return;
    this.noticesEl.dataset.shown = want;
    this.noticesEl.replaceChildren(...list.map((n) => el("div", `tv-notice${n.bad ? " tv-bad" : ""}`, visibleLine(n.text))));
  }

  showTab(id) {
    this.tab = id;
    for (const [k, b] of Object.entries(this.tabButtons)) b.setAttribute("aria-pressed", String(k === id));
    for (const p of this.timelineParts) p.classList.toggle("tv-hidden", id !== "timeline");
    this.summaryEl.classList.toggle("tv-hidden", id !== "summary");
    if (id === "summary") void this.showSummary();
    else this.queueRender();
  }

  // ---- the detail pane -----------------------------------------------------------------------

  async showDetail(n) {
    this.detailFor = n;
    let d;
    try {
      d = await this.source.message(n);
    } catch (e) {
      if (this.detailFor === n) this.detailEl.replaceChildren(el("div", "tv-error-text", `Cannot read message: ${e.message}`));
      return;
    }
    if (this.detailFor !== n) return;
    const r = d.row;
    const parts = [];
    const title = r.method ?? r.kind;
    const h = el(
      "h2",
      r.error ? "tv-error-text" : r.cancel ? "tv-cancel-text" : "",
      visibleLine(`${r.kind === "response" || r.kind === "error" ? "↩ " : ""}${title}${r.sub ? ` · ${r.sub}` : ""}`),
    );
    parts.push(h);
    const facts = el("dl", "tv-facts");
    const fact = (k, v) => {
      if (v === null || v === undefined || v === "") return;
      facts.append(el("dt", "", k));
      const dd = el("dd");
      if (v instanceof Node) dd.append(v);
      else dd.textContent = visibleLine(v);
      facts.append(dd);
    };
    fact("kind", `${r.kind}${r.error && r.kind !== "error" ? " (an error)" : ""}${r.cancel ? " (a cancellation)" : ""}`);
    fact("line", r.entry ? `${r.line}, entry ${r.entry} of a batch` : String(r.line));
    if (r.t !== null) fact("time", `${(r.t / 1000).toFixed(3)} s`);
    if (r.from) fact("direction", r.to ? `${r.from} → ${r.to}` : r.from);
    if (r.session) fact("session", r.turnN ? `${r.session}, turn ${r.turnN}` : r.session);
    if (d.pair) {
      const p = d.pair;
      const link = el("button", "tv-link", r.kind === "request" ? `answered at line ${p.line}` : `answers the request at line ${p.line}`);
      link.type = "button";
      link.addEventListener("click", () => void this.goToRow(p.n));
      const span = el("span");
      span.append(link);
      if (r.ms !== null) span.append(document.createTextNode(` after ${formatMs(r.ms)}`));
      fact(r.kind === "request" ? "answer" : "request", span);
    } else if (r.kind === "request") fact("answer", "none (yet)");
    fact("size", `${count(d.lineBytes)} bytes in the trace`);
    parts.push(facts);
    if (d.truncated) parts.push(el("div", "tv-notice", `This line is ${count(d.lineBytes)} bytes long: only its start is shown, as text.`));
    if (d.json) {
      let value;
      let parsed = true;
      try {
        value = JSON.parse(d.text);
      } catch {
        parsed = false;
      }
      if (parsed) {
        const controls = el("div", "tv-more");
        const raw = el("button", "", "Show as text");
        raw.type = "button";
        controls.append(raw);
        const body = el("div", "tv-json");
        body.append(jsonTree(value, undefined, 0));
        raw.addEventListener("click", () => {
          const asText = raw.textContent === "Show as text";
          raw.textContent = asText ? "Show as tree" : "Show as text";
          body.replaceChildren(asText ? textBlock(JSON.stringify(value, null, 2)) : jsonTree(value, undefined, 0));
        });
        parts.push(controls, body);
      } else parts.push(textBlock(d.text));
    } else parts.push(textBlock(d.text));
    this.detailEl.replaceChildren(...parts);
  }

  // ---- the summary ----------------------------------------------------------------------------

  async showSummary() {
    let s;
    try {
      s = await this.source.summary();
    } catch (e) {
      this.summaryEl.replaceChildren(el("div", "tv-error-text", `Cannot read the summary: ${e.message}`));
      return;
    }
    const parts = [];
    const table = (head, rows, onClick) => {
      const t = el("table");
      const tr = el("tr");
      for (const h of head) tr.append(el("th", "", h));
      t.append(tr);
      rows.forEach((cells, i) => {
        const r = el("tr", onClick ? "tv-click" : "");
        for (const c of cells)
          r.append(el("td", typeof c === "number" ? "tv-n" : "", typeof c === "number" ? count(c) : visibleLine(c ?? "")));
        if (onClick) r.addEventListener("click", () => onClick(i));
        t.append(r);
      });
      return t;
    };
    const span = s.span ? s.span.last - s.span.first : null;
    parts.push(el("h3", "", "Overview"));
    parts.push(
      table(
        ["", ""],
        [
          ["messages", s.messages],
          ...Object.entries(s.kinds)
            .sort()
            .map(([k, v]) => [`  ${k}`, v]),
          ["duration", span === null ? "" : formatMs(span)],
          ["turns", s.turns.count],
          ...Object.entries(s.turns.stops)
            .sort()
            .map(([k, v]) => [`  ${k}`, v]),
          ["  still open", s.turns.open],
          ["errors", s.problems.errors],
          ["requests never answered", s.problems.unanswered],
          ["invalid / oversize messages", `${s.problems.invalid} / ${s.problems.oversize}`],
          ["lines that are not trace lines", s.problems.malformed],
        ],
      ),
    );
    parts.push(el("h3", "", "Bytes each way"));
    parts.push(
      table(
        ["from", "to", "messages", "bytes"],
        s.bytes.map((b) => [b.from, b.to, b.messages, formatBytes(b.bytes)]),
      ),
    );
    parts.push(el("h3", "", "Requests by method (durations from request to answer)"));
    parts.push(
      table(
        ["method", "count", "answered", "errors", "cancelled", "p50", "p99", "max"],
        s.requests.map((m) => [m.method, m.count, m.answered, m.errors, m.cancelled, formatMs(m.p50), formatMs(m.p99), formatMs(m.max)]),
        (i) => {
          this.showTab("timeline");
          void this.setFilter({ method: s.requests[i].method });
        },
      ),
    );
    parts.push(el("h3", "", "Notifications by method"));
    parts.push(
      table(
        ["method", "count"],
        s.notifications.map((m) => [m.method, m.count]),
      ),
    );
    parts.push(el("h3", "", "Slowest calls"));
    parts.push(
      table(
        ["line", "method", "direction", "took"],
        s.slowest.map((c) => [c.line, c.method, `${c.from} → ${c.to}`, formatMs(c.ms)]),
        (i) => void this.goToRow(s.slowest[i].n),
      ),
    );
    parts.push(el("h3", "", "Sessions"));
    parts.push(
      table(
        ["", "session", "turns", "messages"],
        s.sessions.map((x, i) => [`S${i + 1}`, x.id, x.turns, x.messages]),
        (i) => {
          this.showTab("timeline");
          void this.setFilter({ session: s.sessions[i].id, turn: undefined });
        },
      ),
    );
    this.summaryEl.replaceChildren(...parts);
  }
}
