// The chat webview. Runs in the webview's browser context under a strict CSP (no inline script
// but this nonce'd bundle, no eval, no remote content). It renders acp-client's thread model:
// the host folds every session/update in wasm (bridges/conversation.ts) and sends coalesced
// deltas; threadModel.ts turns each into work on the entries shown, by number. Agent text is
// rendered through markdown.ts (DOM built with textContent), never assigned as HTML. Changed
// messages are re-rendered once per animation frame (renderQueue.ts), only the part of a
// message after its last stable block is parsed again, and a message that cannot be rendered
// shows its raw text.

import type { SessionConfigOption } from "@agentclientprotocol/sdk";
import { renderToolCall as renderTool, showDiffCounts, type CardParts } from "./toolCard";
import type { SavedThread, ThreadBlock, ThreadDelta, ThreadEntry, ThreadMeta, ThreadToolCall } from "acp-wasm-client";
import { StreamingMarkdown, renderMarkdown } from "./markdown";
import type { CompletionItem, EditsCheckpoint, EditsFile, HostToWebview, ViewAttachment, WebviewToHost } from "./messages";
import {
  applyCompletion,
  base64OfDataUrl,
  completionContext,
  matchCommands,
  statusIcon,
  statusWords,
  type CompletionContext,
} from "./promptInput";
import { QueueView } from "./queueView";
import { RenderQueue, frameScheduler, type Renderable } from "./renderQueue";
import type { TabState } from "../sessions/tabState";
import { ThreadModel, headerUsage, messageSource, textChange, type ViewOp } from "./threadModel";

declare function acquireVsCodeApi(): { postMessage(m: WebviewToHost): void; setState(state: TabState): void };
const vscode = acquireVsCodeApi();
const post = (m: WebviewToHost) => vscode.postMessage(m);

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const transcript = $<HTMLDivElement>("transcript");
const input = $<HTMLTextAreaElement>("prompt");
const sendBtn = $<HTMLButtonElement>("send");
const cancelBtn = $<HTMLButtonElement>("cancel");
const statusEl = $<HTMLSpanElement>("status");
const titleEl = $<HTMLSpanElement>("title");
const headerUsageEl = $<HTMLSpanElement>("header-usage");
const controls = $<HTMLDivElement>("session-controls");
const planEl = $<HTMLDivElement>("plan");
const infoEl = $<HTMLDivElement>("session-info");
const editsEl = $<HTMLDivElement>("edits");
const completionsEl = $<HTMLDivElement>("completions");
const inputError = $<HTMLDivElement>("input-error");
const attachmentsEl = $<HTMLDivElement>("attachments");
const imageFile = $<HTMLInputElement>("image-file");
// The prompts waiting for the turn to end, above the prompt (queueView.ts).
const queueEl = document.createElement("div");
attachmentsEl.before(queueEl);
const queueView = new QueueView(queueEl, (a) => post({ type: "queue", ...a }));
// Whether the chat has keyboard focus, for the host's notifications (ui/turnNotifier.ts).
window.addEventListener("focus", () => post({ type: "focus", focused: true }));
window.addEventListener("blur", () => post({ type: "focus", focused: false }));

function icon(name: string, extra = ""): HTMLElement {
  const i = el("i", `codicon codicon-${name}${extra ? ` ${extra}` : ""}`);
  i.setAttribute("aria-hidden", "true");
  return i;
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// ---- entries ----------------------------------------------------------------------------------

/** A message or thought: its markdown grows as the thread's entry does. */
interface MessageView extends Renderable {
  node: HTMLElement;
  body: HTMLElement;
  /** The source shown so far (messageSource of the entry). */
  source: string;
  md?: StreamingMarkdown;
  /** Rendering threw once: from then on the entry shows its raw text. */
  failed: boolean;
}

interface EntryView {
  node: HTMLElement;
  message?: MessageView;
}

const model = new ThreadModel();
const views = new Map<number, EntryView>();
let stickToBottom = true;
const renders = new RenderQueue(frameScheduler, scrollIfFollowing);

function scrollIfFollowing() {
  if (stickToBottom) transcript.scrollTop = transcript.scrollHeight;
}

/** The transcript's height when the last scroll or resize was seen. */
let seenHeight = transcript.clientHeight;
transcript.addEventListener("scroll", () => {
  // A scroll that a resize caused (the view got taller and the browser clamped the position)
  // says nothing about where the user wants to be: only the user's own scrolls change it.
  if (transcript.clientHeight !== seenHeight) {
    seenHeight = transcript.clientHeight;
    scrollIfFollowing();
    return;
  }
  // Following the stream only while the view is at (or near) its end: the user can read back.
  stickToBottom = transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 40;
});
// After a resize (the panel dragged, the plan or edits row shown or hidden, the window resized)
// a view that was following the bottom still is.
new ResizeObserver(() => {
  seenHeight = transcript.clientHeight;
  scrollIfFollowing();
}).observe(transcript);

// A code block's Copy and Insert buttons (markdown.ts makes them): the block's text to the host.
transcript.addEventListener("click", (e) => {
  const button = (e.target as Element | null)?.closest?.("button.code-copy, button.code-insert");
  const code = button?.closest(".code-block")?.querySelector("pre > code");
  if (!button || !code) return;
  const text = code.textContent ?? "";
  if (button.classList.contains("code-copy")) {
    post({ type: "copyCode", text });
    button.classList.add("done");
    button.setAttribute("title", "Copied");
    setTimeout(() => {
      button.classList.remove("done");
      button.setAttribute("title", "Copy the code");
    }, 1500);
  } else post({ type: "insertCode", text });
});

function messageView(kind: "agent" | "thought" | "user"): MessageView {
  let node: HTMLElement;
  const body = el("div", "md");
  if (kind === "thought") {
    const d = el("details", "thought");
    d.appendChild(el("summary", undefined, "Thinking"));
    d.appendChild(body);
    node = d;
  } else {
    node = el("div", kind === "agent" ? "msg agent" : "msg user");
    node.appendChild(body);
  }
  const v: MessageView = {
    node,
    body,
    source: "",
    md: kind === "user" ? undefined : new StreamingMarkdown(document, body),
    failed: false,
    render() {
      if (v.md && !v.failed) v.md.render();
      else v.body.textContent = v.source;
    },
    fallback(error: unknown) {
      v.failed = true;
      console.error("acp: markdown rendering failed; showing the raw text", error);
      v.body.replaceChildren();
      v.body.textContent = v.source;
    },
  };
  return v;
}

function showMessage(v: MessageView, content: readonly ThreadBlock[], appended?: string) {
  // Text added to the message's end (the thread's delta said so): added as it is, without
  // building the whole source again (that would cost the message's length on every update).
  const change = appended !== undefined ? { append: appended } : textChange(v.source, messageSource(content));
  if ("append" in change) {
    if (change.append === "") return;
    v.source += change.append;
    v.md?.append(change.append);
  } else {
    v.source = change.replace;
    if (v.md) {
      v.md = new StreamingMarkdown(document, v.body);
      v.md.append(v.source);
    }
  }
  renders.add(v);
}

/** Markdown into `box`, or its raw text if rendering throws. */
function renderMarkdownSafely(text: string, box: HTMLElement) {
  try {
    renderMarkdown(document, text, box);
  } catch (e) {
    console.error("acp: markdown rendering failed; showing the raw text", e);
    box.replaceChildren();
    box.textContent = text;
  }
}

/** The turn is over (what is still pending or running did not finish). */
let turnOver = true;

const cardParts: CardParts = { post, el, icon, markdown: renderMarkdownSafely, root: document.body.dataset.root ?? "" };

function renderToolCall(n: number, node: HTMLElement, t: ThreadToolCall) {
  renderTool(cardParts, n, node, t, turnOver);
}

function showEntry(n: number, entry: ThreadEntry, view: EntryView | undefined, appended?: string): EntryView {
  switch (entry.type) {
    case "user":
    case "agent":
    case "thought": {
      const message = view?.message ?? messageView(entry.type);
      showMessage(message, entry.content, view?.message ? appended : undefined);
      return { node: message.node, message };
    }
    case "tool": {
      const node = view?.node ?? el("div", "tool");
      renderToolCall(n, node, entry);
      return { node };
    }
    case "notice": {
      const node = view?.node ?? el("div");
      node.className = `notice ${entry.level}`;
      node.textContent = entry.text;
      return { node };
    }
  }
}

// ---- the session's fields: title, plan, modes and options, commands, usage ------------------

function renderMeta(m: ThreadMeta) {
  titleEl.textContent = m.title ?? "";
  headerUsageEl.textContent = headerUsage(m);
  renderPlan(m);
  renderControls(m);
  renderInfo(m);
}

/** The user opened or closed the finished plan (kept until the next turn runs). */
let planOpenedByUser: boolean | undefined;

function renderPlan(m: ThreadMeta) {
  planEl.replaceChildren();
  const over = m.turn === "idle";
  if (!over) planOpenedByUser = undefined;
  if (m.plan.length === 0) return;
  // While the turn runs the plan is open; once it is over it folds to one line (its steps done),
  // so the transcript gets the room back.
  const box = el("details", "plan");
  box.open = over ? (planOpenedByUser ?? false) : true;
  box.addEventListener("toggle", () => {
    if (over) planOpenedByUser = box.open;
  });
  const done = m.plan.filter((e) => e.status === "completed").length;
  const summary = el("summary", "plan-title", "Plan");
  summary.appendChild(el("span", "plan-count", ` ${done}/${m.plan.length + (m.planMore ?? 0)} done`));
  box.appendChild(summary);
  const ol = el("ol");
  for (const e of m.plan) {
    const li = el("li", `plan-entry plan-${over && e.status !== "completed" ? "unfinished" : e.status}`);
    const st = el("span", "plan-status");
    st.appendChild(icon(statusIcon(e.status, over)));
    st.title = statusWords(e.status, over);
    li.appendChild(st);
    li.appendChild(el("span", "plan-content", ` ${e.content}`));
    if (e.priority === "high") li.appendChild(el("span", "plan-priority", " (high)"));
    ol.appendChild(li);
  }
  box.appendChild(ol);
  if (m.planMore) box.appendChild(el("div", "plan-more", `(${m.planMore} more steps not shown)`));
  planEl.appendChild(box);
}

let commands: ThreadMeta["commands"] = [];

function renderInfo(m: ThreadMeta) {
  infoEl.replaceChildren();
  commands = [];
  if (m.commands.length > 0) {
    commands = m.commands;
    const line = el("div", "commands", "Commands: ");
    for (const c of m.commands) {
      const s = el("span", "command", `/${c.name}`);
      s.title = c.hint ? `${c.description} (${c.hint})` : c.description;
      line.appendChild(s);
      line.appendChild(document.createTextNode(" "));
    }
    if (m.commandsMore) line.appendChild(document.createTextNode(`(+${m.commandsMore})`));
    infoEl.appendChild(line);
  }
  // A "/" typed before the agent's commands arrived (they come after session/new's answer, or
  // change later): the open completion follows the new list instead of staying empty.
  if (document.activeElement === input && completionContext(input.value, input.selectionStart ?? input.value.length)?.trigger === "/")
    updateCompletions();
  // The context usage is in the header (headerUsage).
}

function renderControls(m: ThreadMeta) {
  controls.replaceChildren();
  if (m.modes.length > 0) {
    const label = el("label", "control", "Mode ");
    const sel = el("select");
    sel.id = "mode-select";
    for (const mode of m.modes) {
      const o = el("option", undefined, mode.name);
      o.value = mode.id;
      o.selected = mode.id === m.currentMode;
      sel.appendChild(o);
    }
    // Until the agent confirms it (a new delta), or the host shows the old one back.
    sel.addEventListener("change", () => post({ type: "setMode", modeId: sel.value }));
    label.appendChild(sel);
    controls.appendChild(label);
  }
  const options = Array.isArray(m.configOptions) ? (m.configOptions as SessionConfigOption[]) : [];
  for (const opt of options) {
    if (!opt || typeof opt !== "object" || typeof opt.name !== "string") continue;
    const label = el("label", "control", `${opt.name} `);
    if (opt.type === "boolean") {
      const cb = el("input");
      cb.type = "checkbox";
      cb.checked = opt.currentValue === true;
      cb.addEventListener("change", () => post({ type: "setConfig", configId: opt.id, value: cb.checked }));
      label.appendChild(cb);
    } else if (opt.type === "select") {
      const sel = el("select");
      const add = (parent: HTMLElement, o: { value: string; name: string }) => {
        const e = el("option", undefined, o.name);
        e.value = o.value;
        e.selected = o.value === opt.currentValue;
        parent.appendChild(e);
      };
      for (const o of opt.options ?? []) {
        if ("group" in o) {
          const g = el("optgroup");
          g.label = o.name;
          for (const x of o.options) add(g, x);
          sel.appendChild(g);
        } else add(sel, o);
      }
      sel.addEventListener("change", () => post({ type: "setConfig", configId: opt.id, value: sel.value }));
      label.appendChild(sel);
    } else continue;
    controls.appendChild(label);
  }
}

// ---- applying the thread's changes ------------------------------------------------------------

function run(ops: ViewOp[]) {
  for (const op of ops) {
    switch (op.op) {
      case "add": {
        const v = showEntry(op.n, op.entry, undefined);
        v.node.dataset.entry = String(op.n);
        transcript.appendChild(v.node);
        views.set(op.n, v);
        break;
      }
      case "update": {
        const old = views.get(op.n);
        const v = showEntry(op.n, op.entry, old, op.appended);
        if (old && old.node !== v.node) old.node.replaceWith(v.node);
        views.set(op.n, v);
        break;
      }
      case "drop":
        views.get(op.n)?.node.remove();
        views.delete(op.n);
        break;
      case "meta":
        turnOver = op.meta.turn === "idle";
        renderMeta(op.meta);
        break;
      case "turnEnded": {
        // The turn's text is shown now, before the line that says it is over.
        renders.flush();
        const end = el("div", `turn-end stop-${op.stop}`, op.words);
        end.dataset.stop = op.stop;
        transcript.appendChild(end);
        // Tool calls still shown as running did not finish: say so.
        for (const [n, v] of views) {
          const e = model.entries.get(n);
          if (e?.type === "tool" && (e.status === "pending" || e.status === "in_progress")) renderToolCall(n, v.node, e);
        }
        break;
      }
    }
  }
}

function startOver(saved: SavedThread | undefined) {
  transcript.replaceChildren();
  views.clear();
  planEl.replaceChildren();
  infoEl.replaceChildren();
  controls.replaceChildren();
  titleEl.textContent = "";
  headerUsageEl.textContent = "";
  stickToBottom = true;
  run(model.reset(saved));
}

// ---- host messages ------------------------------------------------------------------------------

function setBusy(busy: boolean) {
  document.body.classList.toggle("busy", busy);
  // A prompt sent while the agent works waits in the queue (acp-client's queue decides).
  sendBtn.title = busy ? "Queue: sent when the turn ends (Enter)" : "Send (Enter)";
  cancelBtn.disabled = !busy;
}

window.addEventListener("message", (ev: MessageEvent<HostToWebview>) => {
  const m = ev.data;
  if (!m || typeof m !== "object" || typeof m.type !== "string") return;
  switch (m.type) {
    case "status":
      statusEl.textContent = m.text;
      statusEl.dataset.state = m.state;
      break;
    case "conversation":
      transcript.dataset.sessionId = m.sessionId ?? "";
      // An editor tab shows this session again after a window reload (sessions/tabState.ts); a
      // conversation shown before its session opens keeps the session it restores.
      if (m.sessionId) vscode.setState({ sessionId: m.sessionId });
      transcript.dataset.sessionSeq = String(Number(transcript.dataset.sessionSeq ?? 0) + 1);
      if (m.reset) startOver(typeof m.saved === "string" ? (JSON.parse(m.saved) as SavedThread) : undefined);
      break;
    case "delta":
      if (typeof m.json === "string")
        run(model.apply(JSON.parse(m.json) as ThreadDelta, typeof m.stopWords === "string" ? m.stopWords : undefined));
      break;
    case "queue":
      queueView.show(m.items, m.held);
      break;
    case "busy":
      setBusy(m.busy);
      break;
    case "capabilities":
      caps = { image: m.image, embeddedContext: m.embeddedContext };
      imageBtn.title = caps.image ? "Attach an image" : "This agent does not accept images";
      break;
    case "completions":
      if (m.id === completionSeq && pending?.trigger === "@") showCompletions(m.items.map(fromHost));
      break;
    case "attach":
      addAttachment(m.attachment);
      input.focus();
      break;
    case "promptFailed":
      if (!input.value.trim()) input.value = m.text;
      if (attachments.length === 0) for (const a of m.attachments) addAttachment(a);
      showInputError(m.message);
      break;
    case "edits": // the review and its checkpoints
      renderEdits(m.files, m.checkpoints);
      break;
    case "focusPrompt":
      input.focus();
      break;
    case "diffCounts": // a tool card's +N −M
      if (Number.isInteger(m.entry) && Number.isInteger(m.index) && Number.isInteger(m.added) && Number.isInteger(m.removed))
        showDiffCounts(document, m.entry, m.index, m.added, m.removed);
      break;
  }
  // Messages render on the next frame (renders); everything else is in place already.
  if (renders.pending === 0) scrollIfFollowing();
});

// ---- the prompt input: completions, attachments, sending ---------------------------------------

let caps = { image: false, embeddedContext: false };
let attachments: ViewAttachment[] = [];
const attachSelBtn = $<HTMLButtonElement>("attach-selection");
const imageBtn = $<HTMLButtonElement>("attach-image");

interface Choice {
  label: string;
  detail: string;
  icon: string;
  /** Text put in place of the trigger and query. */
  insert: string;
  attachment?: ViewAttachment;
}
let pending: CompletionContext | null = null;
let choices: Choice[] = [];
let active = 0;
let completionSeq = 0;

const fromHost = (c: CompletionItem): Choice => ({
  label: c.label,
  detail: c.detail,
  icon: c.icon === "file" ? "file" : "symbol-method",
  insert: `@${c.label} `,
  attachment: c.attachment,
});

function showInputError(message: string) {
  inputError.textContent = message;
  inputError.hidden = !message;
}

function addAttachment(a: ViewAttachment) {
  const key = (x: ViewAttachment) => JSON.stringify(x.kind === "image" ? [x.kind, x.name, x.data.length] : x);
  if (!attachments.some((x) => key(x) === key(a))) attachments.push(a);
  renderAttachments();
}

function renderAttachments() {
  attachmentsEl.replaceChildren();
  attachments.forEach((a, i) => {
    const chip = el("span", `chip chip-${a.kind}`);
    chip.appendChild(icon({ file: "file", symbol: "symbol-method", selection: "selection", image: "file-media" }[a.kind]));
    const what =
      a.kind === "selection" ? `${a.name}:${a.lines.start}-${a.lines.end}` : a.kind === "symbol" ? `${a.name} (line ${a.line})` : a.name;
    chip.appendChild(el("span", "chip-label", ` ${what}`));
    chip.title = a.kind === "image" ? `${a.name} (${a.mimeType})` : a.path;
    const x = el("button", "chip-remove icon");
    x.title = `Remove ${what}`;
    x.setAttribute("aria-label", `Remove ${what}`);
    x.appendChild(icon("close"));
    x.addEventListener("click", () => {
      attachments.splice(i, 1);
      renderAttachments();
    });
    chip.appendChild(x);
    attachmentsEl.appendChild(chip);
  });
}

function hideCompletions() {
  pending = null;
  choices = [];
  completionsEl.hidden = true;
  completionsEl.replaceChildren();
  input.removeAttribute("aria-activedescendant");
}

/** The screen reader follows the highlighted row while the keyboard stays in the prompt. */
function markActive() {
  completionsEl.querySelectorAll(".completion").forEach((r, j) => {
    r.classList.toggle("active", j === active);
    r.setAttribute("aria-selected", String(j === active));
  });
  if (choices.length > 0) input.setAttribute("aria-activedescendant", `completion-${active}`);
  else input.removeAttribute("aria-activedescendant");
}

function showCompletions(list: Choice[]) {
  choices = list;
  active = 0;
  completionsEl.replaceChildren();
  if (list.length === 0) {
    completionsEl.appendChild(
      el("div", "completion-empty", pending?.trigger === "/" ? "No matching command" : "No matching file or symbol"),
    );
  }
  list.forEach((c, i) => {
    const row = el("div", "completion");
    row.id = `completion-${i}`;
    row.setAttribute("role", "option");
    row.appendChild(icon(c.icon));
    row.appendChild(el("span", "completion-label", ` ${c.label}`));
    row.appendChild(el("span", "completion-detail", c.detail));
    row.addEventListener("mousedown", (e) => {
      e.preventDefault();
      choose(i);
    });
    completionsEl.appendChild(row);
  });
  completionsEl.hidden = false;
  markActive();
}

function highlight(i: number) {
  active = (i + choices.length) % choices.length;
  markActive();
  completionsEl.querySelectorAll(".completion")[active]?.scrollIntoView({ block: "nearest" });
}

function choose(i: number) {
  const c = choices[i];
  if (!c || !pending) return;
  const next = applyCompletion(input.value, input.selectionStart ?? input.value.length, pending, c.insert);
  input.value = next.text;
  input.setSelectionRange(next.caret, next.caret);
  if (c.attachment) addAttachment(c.attachment);
  hideCompletions();
  input.focus();
}

function updateCompletions() {
  const ctx = completionContext(input.value, input.selectionStart ?? input.value.length);
  if (!ctx) return hideCompletions();
  pending = ctx;
  if (ctx.trigger === "/") {
    showCompletions(
      matchCommands(commands, ctx.query).map((c) => ({
        label: `/${c.name}`,
        detail: c.hint ? `${c.description} (${c.hint})` : c.description,
        icon: "terminal",
        insert: `/${c.name} `,
      })),
    );
  } else post({ type: "complete", id: ++completionSeq, query: ctx.query });
}

function send() {
  const text = input.value.trim();
  if ((!text && attachments.length === 0) || sendBtn.disabled) return;
  const sent = attachments;
  input.value = "";
  attachments = [];
  renderAttachments();
  hideCompletions();
  showInputError("");
  stickToBottom = true;
  post({ type: "prompt", text, attachments: sent });
}

function readImage(file: File) {
  // Whether it can be sent is acp-client's decision at send time (the prompt is kept if not).
  const r = new FileReader();
  r.onload = () =>
    addAttachment({ kind: "image", name: file.name || "pasted image", mimeType: file.type, data: base64OfDataUrl(String(r.result)) });
  r.onerror = () => showInputError(`${file.name}: could not be read`);
  r.readAsDataURL(file);
}

sendBtn.addEventListener("click", send);
input.addEventListener("input", updateCompletions);
input.addEventListener("blur", () => setTimeout(hideCompletions, 150));
input.addEventListener("keydown", (e) => {
  if (!completionsEl.hidden && choices.length > 0) {
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      highlight(active + (e.key === "ArrowDown" ? 1 : -1));
      return;
    }
    if ((e.key === "Enter" || e.key === "Tab") && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      choose(active);
      return;
    }
  }
  if (e.key === "Escape" && !completionsEl.hidden) {
    e.preventDefault();
    e.stopPropagation();
    hideCompletions();
    return;
  }
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    send();
  }
});
// Escape anywhere in the chat stops the running turn (the acp.cancel keybinding does the same
// when focus is elsewhere in the view).
document.addEventListener("keydown", (e) => {
  if (e.key === "Escape" && !e.defaultPrevented && document.body.classList.contains("busy")) {
    e.preventDefault();
    post({ type: "cancel" });
  }
});
input.addEventListener("paste", (e) => {
  const files = Array.from(e.clipboardData?.files ?? []).filter((f) => f.type.startsWith("image/"));
  if (files.length === 0) return;
  e.preventDefault();
  for (const f of files) readImage(f);
});
attachSelBtn.addEventListener("click", () => post({ type: "attachSelection" }));
imageBtn.addEventListener("click", () => {
  imageFile.click();
});
imageFile.addEventListener("change", () => {
  for (const f of Array.from(imageFile.files ?? [])) readImage(f);
  imageFile.value = "";
});

// ---- the agent's edits: Keep / Undo --------------------------------------------------------------

function counts(added: number, removed: number): HTMLElement {
  const c = el("span", "counts");
  c.append(el("span", "added", `+${added}`), " ", el("span", "removed", `\u2212${removed}`));
  c.setAttribute("aria-label", `${added} added, ${removed} removed`);
  return c;
}

function renderEdits(files: EditsFile[], checkpoints: EditsCheckpoint[] = []) {
  editsEl.replaceChildren();
  if (files.length > 0)
    editsEl.appendChild(el("div", "edits-title", `${files.length} file${files.length === 1 ? "" : "s"} changed by the agent`));
  for (const f of files) {
    const row = el("div", "edit-row");
    row.dataset.path = f.path;
    row.appendChild(icon(f.created ? "new-file" : "edit"));
    const name = el("span", "edit-name", ` ${f.shown ?? f.name}`);
    name.title = f.path;
    row.appendChild(name);
    if (f.added !== undefined && f.removed !== undefined) row.appendChild(counts(f.added, f.removed));
    const act = (action: "keep" | "undo" | "diff", label: string, ic: string, title: string) => {
      const b = el("button", `edit-${action} secondary`);
      b.title = title;
      b.append(icon(ic), ` ${label}`);
      b.addEventListener("click", () => post({ type: "editAction", action, path: f.path }));
      row.appendChild(b);
    };
    act("diff", "Diff", "diff", "Show the change (Accept or Reject each change in the diff too)");
    act("keep", "Keep", "check", "Keep the agent's change");
    act("undo", "Undo", "discard", f.created ? "Delete the file the agent created" : "Put the file back as it was");
    editsEl.appendChild(row);
    // Each change, when there is more than one to choose from.
    const hunks = f.hunks ?? [];
    if (hunks.length > 1)
      hunks.forEach((h, i) => {
        const hr = el("div", "hunk-row");
        hr.dataset.path = f.path;
        hr.dataset.hunk = String(i);
        const at = h.added > 0 ? h.newStart : Math.max(h.newStart, 1);
        const end = h.added > 1 ? `\u2013${h.newStart + h.added - 1}` : "";
        hr.append(el("span", "hunk-where", `Line${end ? "s" : ""} ${at}${end}`), counts(h.added, h.removed));
        for (const [action, label, ic, title] of [
          ["acceptHunk", "Accept", "check", "Accept this change"],
          ["rejectHunk", "Reject", "discard", "Take this change out of the file"],
        ] as const) {
          const b = el("button", `hunk-${action === "acceptHunk" ? "accept" : "reject"} secondary`);
          b.title = title;
          b.append(icon(ic), ` ${label}`);
          b.addEventListener("click", () => post({ type: "editAction", action, path: f.path, hunk: i, expect: h }));
          hr.appendChild(b);
        }
        editsEl.appendChild(hr);
      });
  }
  if (checkpoints.length > 0) {
    const row = el("div", "checkpoints");
    row.appendChild(el("span", "checkpoints-title", "Restore files to before:"));
    for (const c of checkpoints) {
      const b = el("button", "checkpoint secondary", `Turn ${c.turn}`);
      b.dataset.turn = String(c.turn);
      b.title = `Put the ${c.files} file${c.files === 1 ? "" : "s"} the agent wrote since back as they were before "${c.label}"`;
      b.addEventListener("click", () => post({ type: "restoreCheckpoint", turn: c.turn }));
      row.appendChild(b);
    }
    editsEl.appendChild(row);
  }
}

cancelBtn.addEventListener("click", () => post({ type: "cancel" }));
setBusy(false);
post({ type: "ready" });
