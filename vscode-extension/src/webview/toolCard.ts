// A tool call's card in the chat: a status icon (a command's end: passed or failed), the kind
// as an icon (its name for screen readers), a human title (the agent's, with the workspace's
// absolute paths made relative), the files it touches once each as workspace-relative links
// (a click opens the file at the line), then its content: a diff's Open diff, a terminal, text
// (a command's output as it is; else markdown through the linear-time, no-HTML renderer).
// Every string of the agent's goes in as text (textContent), never as HTML.

import type { ThreadToolCall, ThreadToolContent } from "acp-wasm-client";
import type { WebviewToHost } from "./messages";
import { statusIcon, statusWords } from "./promptInput";

export interface CardParts {
  post(m: WebviewToHost): void;
  el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string): HTMLElementTagNameMap[K];
  icon(name: string, extra?: string): HTMLElement;
  markdown(text: string, box: HTMLElement): void;
  /** The workspace folder (absolute), or "" when none. */
  root: string;
}

/** `p` relative to `root` when inside it (either separator), else `p` as it is. */
export function relativePath(root: string, p: string): string {
  if (!root) return p;
  const r = root.replace(/[\\/]+$/, "");
  if (p.length > r.length && p.startsWith(r) && (p[r.length] === "/" || p[r.length] === "\\")) return p.slice(r.length + 1);
  return p;
}

/** The agent's title with every occurrence of the workspace folder's absolute prefix removed,
 *  or words for the kind when it gave none. */
export function humanTitle(title: string, kind: string | null | undefined, root: string): string {
  const t = title.trim();
  if (!t) return KIND_WORDS[kind ?? "other"] ?? "Tool call";
  if (!root) return t;
  const r = root.replace(/[\\/]+$/, "");
  return t.split(`${r}/`).join("").split(`${r}\\`).join("");
}

const KIND_WORDS: Record<string, string> = {
  read: "Read a file",
  edit: "Edit a file",
  delete: "Delete a file",
  move: "Move a file",
  search: "Search",
  execute: "Run a command",
  think: "Think",
  fetch: "Fetch",
  switch_mode: "Switch mode",
  other: "Tool call",
};

const KIND_ICONS: Record<string, string> = {
  read: "file",
  edit: "edit",
  delete: "trash",
  move: "arrow-swap",
  search: "search",
  execute: "terminal",
  think: "lightbulb",
  fetch: "globe",
  switch_mode: "symbol-enum",
};

/** The files a card shows, once each (its locations first, then its diffs' paths), with the
 *  first line a location gives. */
export function cardPaths(t: Pick<ThreadToolCall, "locations" | "content">): Array<{ path: string; line?: number }> {
  const seen = new Map<string, { path: string; line?: number }>();
  for (const l of t.locations) if (!seen.has(l.path)) seen.set(l.path, { path: l.path, line: l.line ?? undefined });
  for (const c of t.content) if (c.type === "diff" && !seen.has(c.path)) seen.set(c.path, { path: c.path });
  return [...seen.values()];
}

export function renderToolCall(p: CardParts, n: number, node: HTMLElement, t: ThreadToolCall, turnOver: boolean): void {
  const { el, icon } = p;
  node.replaceChildren();
  node.className = `tool status-${t.status}`;
  node.dataset.toolCallId = t.toolCallId;
  const head = el("div", "tool-head");
  const st = el("span", "tool-status");
  st.title = statusWords(t.status, turnOver);
  st.setAttribute("role", "img");
  st.setAttribute("aria-label", st.title);
  st.append(icon(statusIcon(t.status, turnOver), t.status === "in_progress" && !turnOver ? "codicon-modifier-spin" : ""));
  head.appendChild(st);
  const kind = t.kind && t.kind !== "other" ? t.kind : "";
  if (KIND_ICONS[kind]) {
    const k = el("span", "tool-kind");
    k.title = KIND_WORDS[kind] ?? kind;
    k.setAttribute("role", "img");
    k.setAttribute("aria-label", k.title);
    k.appendChild(icon(KIND_ICONS[kind]!));
    head.appendChild(k);
  }
  head.appendChild(el("span", "tool-title", humanTitle(t.title, t.kind, p.root)));
  node.appendChild(head);
  const paths = cardPaths(t);
  if (paths.length) {
    const row = el("div", "tool-paths");
    for (const f of paths) {
      const shown = relativePath(p.root, f.path) + (f.line ? `:${f.line}` : "");
      const a = el("a", "tool-path", shown);
      a.href = "#";
      a.title = `Open ${f.path}${f.line ? ` at line ${f.line}` : ""}`;
      a.addEventListener("click", (e) => {
        e.preventDefault();
        p.post({ type: "openFile", path: f.path, line: f.line });
      });
      row.appendChild(a);
    }
    node.appendChild(row);
  }
  const several = t.content.filter((c) => c.type === "diff").length > 1;
  t.content.forEach((c, index) => node.appendChild(renderToolContent(p, n, c, index, t.kind === "execute", several)));
  if (t.contentMore) node.appendChild(el("div", "tool-content", `(${t.contentMore} more items not shown)`));
}

/** Fills in a diff's +N −M on its card (the host's `diffCounts` answer); a card drawn again
 *  since asked again, so only the counts' current element is filled. */
export function showDiffCounts(root: ParentNode, entry: number, index: number, added: number, removed: number): void {
  const span = root.querySelector<HTMLElement>(`.diff-counts[data-entry="${entry}"][data-index="${index}"]`);
  if (!span) return;
  const plus = document.createElement("span");
  plus.className = "added";
  plus.textContent = `+${added}`;
  const minus = document.createElement("span");
  minus.className = "removed";
  minus.textContent = `\u2212${removed}`;
  span.replaceChildren(plus, " ", minus, " ");
  span.setAttribute("aria-label", `${added} added, ${removed} removed`);
}

function renderToolContent(p: CardParts, n: number, c: ThreadToolContent, index: number, output: boolean, several: boolean): HTMLElement {
  const { el, icon } = p;
  if (c.type === "diff") {
    const box = el("div", "tool-diff");
    box.appendChild(icon(c.oldText == null ? "new-file" : "diff"));
    // The path is in the card's paths row; with several diffs each names its file.
    const name = c.path.split(/[\\/]/).pop() ?? c.path;
    box.appendChild(el("span", "path", ` ${c.oldText == null ? "New file" : "Edit"}${several ? `: ${name}` : ""} `));
    // +N −M: counted by the host with acp-client's hunks (the edits row's counts), filled in
    // by showDiffCounts when its answer comes.
    const counts = el("span", "diff-counts counts");
    counts.dataset.entry = String(n);
    counts.dataset.index = String(index);
    box.appendChild(counts);
    p.post({ type: "diffCounts", entry: n, index });
    const btn = el("button", "open-diff secondary", "Open diff");
    btn.addEventListener("click", () => p.post({ type: "openDiff", entry: n, index }));
    box.appendChild(btn);
    return box;
  }
  if (c.type === "terminal") return el("div", "tool-term", `Running in the terminal panel (terminal ${c.terminalId})`);
  if (c.type === "content") {
    const inner = c.content;
    // A command's output: as it is, in a monospace block (line breaks kept), never markdown.
    if (inner.type === "text" && output) return el("pre", "tool-output", inner.text ?? "");
    if (inner.type === "text") {
      const box = el("div", "tool-content md");
      p.markdown(inner.text ?? "", box);
      return box;
    }
    if (inner.type === "resource_link") return el("div", "tool-content", `${inner.title ?? inner.name ?? ""}: ${inner.uri ?? ""}`);
    return el("div", "tool-content", `[${inner.type} content]`);
  }
  return el("div", "tool-content", "[content of a kind this version does not show]");
}
