// The chat webview. Runs in the webview's browser context under a strict CSP (no inline script
// but this nonce'd bundle, no eval, no remote content). Agent text is rendered through
// markdown.ts (DOM built with textContent), never assigned as HTML. Changed messages are
// re-rendered once per animation frame (renderQueue.ts), only the part of a message after its
// last stable block is parsed again, and a message that cannot be rendered shows its raw text.

import { StreamingMarkdown, renderMarkdown } from "./markdown";
import { RenderQueue, frameScheduler, type Renderable } from "./renderQueue";
import type { HostToWebview, SessionInfo, WebviewToHost } from "./messages";
import type { PlanEntry, SessionUpdate, ToolCallContent, ToolCallUpdate } from "../protocol/types";

declare function acquireVsCodeApi(): { postMessage(m: WebviewToHost): void };
const vscode = acquireVsCodeApi();
const post = (m: WebviewToHost) => vscode.postMessage(m);

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const transcript = $<HTMLDivElement>("transcript");
const input = $<HTMLTextAreaElement>("prompt");
const sendBtn = $<HTMLButtonElement>("send");
const cancelBtn = $<HTMLButtonElement>("cancel");
const newBtn = $<HTMLButtonElement>("new-session");
const statusEl = $<HTMLSpanElement>("status");
const controls = $<HTMLDivElement>("session-controls");

function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// ---- transcript model -------------------------------------------------------------------------

interface TextBlock extends Renderable {
  kind: "agent" | "thought" | "user";
  text: string;
  node: HTMLElement;
  body: HTMLElement;
  md?: StreamingMarkdown;
  /** Rendering threw once: from then on the block shows its raw text. */
  failed: boolean;
}
let current: TextBlock | undefined; // the block the next chunk of the same kind extends
const toolCalls = new Map<string, { node: HTMLElement; data: ToolCallUpdate }>();
let planNode: HTMLElement | undefined;
const renders = new RenderQueue(frameScheduler, scrollToEnd);

function scrollToEnd() {
  transcript.scrollTop = transcript.scrollHeight;
}

function textBlock(kind: TextBlock["kind"]): TextBlock {
  if (current && current.kind === kind) return current;
  let node: HTMLElement;
  let body: HTMLElement;
  if (kind === "thought") {
    const d = el("details", "thought");
    d.appendChild(el("summary", undefined, "Thinking"));
    body = el("div", "md");
    d.appendChild(body);
    node = d;
  } else {
    node = el("div", kind === "agent" ? "msg agent" : "msg user");
    body = el("div", "md");
    node.appendChild(body);
  }
  transcript.appendChild(node);
  const b: TextBlock = {
    kind,
    text: "",
    node,
    body,
    md: kind === "user" ? undefined : new StreamingMarkdown(document, body),
    failed: false,
    render() {
      if (b.md && !b.failed) b.md.render();
      else b.body.textContent = b.text;
    },
    fallback(error: unknown) {
      b.failed = true;
      console.error("acp: markdown rendering failed; showing the raw text", error);
      b.body.replaceChildren();
      b.body.textContent = b.text;
    },
  };
  current = b;
  return b;
}

function appendText(kind: TextBlock["kind"], text: string) {
  const b = textBlock(kind);
  b.text += text;
  b.md?.append(text);
  renders.add(b);
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

const STATUS_ICON: Record<string, string> = { pending: "○", in_progress: "◐", completed: "●", failed: "✕" };

function renderToolCall(id: string, upd: ToolCallUpdate, isNew: boolean) {
  let entry = toolCalls.get(id);
  if (!entry) {
    const node = el("div", "tool");
    node.dataset.toolCallId = id;
    entry = { node, data: { toolCallId: id } };
    toolCalls.set(id, entry);
    transcript.appendChild(node);
    current = undefined;
  }
  const d = entry.data;
  if (isNew) Object.assign(d, { content: [], locations: [] });
  for (const k of ["title", "kind", "status", "content", "locations", "rawInput", "rawOutput"] as const) {
    if (upd[k] !== undefined && upd[k] !== null) (d as unknown as Record<string, unknown>)[k] = upd[k];
  }
  const node = entry.node;
  node.replaceChildren();
  const status = d.status ?? "pending";
  node.className = `tool status-${status}`;
  const head = el("div", "tool-head");
  head.appendChild(el("span", "tool-status", `${STATUS_ICON[status] ?? "?"} ${status.replace("_", " ")}`));
  head.appendChild(el("span", "tool-title", d.title ?? id));
  if (d.kind) head.appendChild(el("span", "tool-kind", d.kind));
  node.appendChild(head);
  for (const loc of d.locations ?? []) node.appendChild(el("div", "tool-loc", `${loc.path}${loc.line ? `:${loc.line}` : ""}`));
  (d.content ?? []).forEach((c: ToolCallContent, index: number) => node.appendChild(renderToolContent(id, c, index)));
}

function renderToolContent(toolCallId: string, c: ToolCallContent, index: number): HTMLElement {
  if (c.type === "diff") {
    const box = el("div", "tool-diff");
    box.appendChild(el("span", undefined, `${c.oldText == null ? "New file" : "Edit"}: ${c.path} `));
    const btn = el("button", "open-diff", "Open diff");
    btn.addEventListener("click", () => post({ type: "openDiff", toolCallId, index }));
    box.appendChild(btn);
    return box;
  }
  if (c.type === "terminal") return el("div", "tool-term", `Terminal ${c.terminalId} (see the terminal panel)`);
  const inner = c.content;
  if (inner?.type === "text") {
    const box = el("div", "tool-content md");
    renderMarkdownSafely(inner.text, box);
    return box;
  }
  if (inner?.type === "resource_link") return el("div", "tool-content", `${inner.title ?? inner.name}: ${inner.uri}`);
  return el("div", "tool-content", `[${inner?.type ?? "unknown"} content]`);
}

function renderPlan(entries: PlanEntry[]) {
  if (!planNode || !planNode.isConnected) {
    planNode = el("div", "plan");
    transcript.appendChild(planNode);
    current = undefined;
  }
  planNode.replaceChildren(el("div", "plan-title", "Plan"));
  const ol = el("ol");
  for (const e of entries) {
    const li = el("li", `plan-entry plan-${e.status}`);
    li.appendChild(el("span", "plan-status", `${STATUS_ICON[e.status] ?? "?"} `));
    li.appendChild(el("span", "plan-content", e.content));
    if (e.priority) li.appendChild(el("span", "plan-priority", ` (${e.priority})`));
    ol.appendChild(li);
  }
  planNode.appendChild(ol);
}

function applyUpdate(u: SessionUpdate) {
  switch (u.sessionUpdate) {
    case "agent_message_chunk":
    case "agent_thought_chunk":
    case "user_message_chunk": {
      const kind = u.sessionUpdate === "agent_message_chunk" ? "agent" : u.sessionUpdate === "agent_thought_chunk" ? "thought" : "user";
      const c = u.content;
      appendText(kind, c.type === "text" ? c.text : c.type === "resource_link" ? `[${c.name}](${c.uri})` : `[${c.type}]`);
      break;
    }
    case "tool_call":
      renderToolCall(u.toolCallId, u, true);
      break;
    case "tool_call_update":
      renderToolCall(u.toolCallId, u, false);
      break;
    case "plan":
      renderPlan(u.entries ?? []);
      break;
    case "current_mode_update":
      if (session?.modes) {
        session.modes.currentModeId = u.currentModeId;
        renderControls();
      }
      break;
    case "config_option_update":
      if (session) {
        session.configOptions = u.configOptions;
        renderControls();
      }
      break;
    default:
      break;
  }
}

// ---- session controls (modes, config options) -------------------------------------------------

let session: SessionInfo | null = null;

function renderControls() {
  controls.replaceChildren();
  if (!session) return;
  const modes = session.modes;
  if (modes && modes.availableModes.length > 0) {
    const label = el("label", "control", "Mode ");
    const sel = el("select");
    sel.id = "mode-select";
    for (const m of modes.availableModes) {
      const o = el("option", undefined, m.name);
      o.value = m.id;
      o.selected = m.id === modes.currentModeId;
      sel.appendChild(o);
    }
    sel.addEventListener("change", () => {
      modes.currentModeId = sel.value; // until the host confirms (or restores) it
      post({ type: "setMode", modeId: sel.value });
    });
    label.appendChild(sel);
    controls.appendChild(label);
  }
  for (const opt of session.configOptions ?? []) {
    const label = el("label", "control", `${opt.name} `);
    if (opt.type === "boolean") {
      const cb = el("input");
      cb.type = "checkbox";
      cb.checked = opt.currentValue;
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
      for (const o of opt.options) {
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

// ---- host messages ------------------------------------------------------------------------------

function setBusy(busy: boolean) {
  document.body.classList.toggle("busy", busy);
  sendBtn.disabled = busy;
  cancelBtn.disabled = !busy;
}

function notice(level: "info" | "error", text: string) {
  transcript.appendChild(el("div", `notice ${level}`, text));
  current = undefined;
}

window.addEventListener("message", (ev: MessageEvent<HostToWebview>) => {
  const m = ev.data;
  if (!m || typeof m !== "object" || typeof m.type !== "string") return;
  switch (m.type) {
    case "status":
      statusEl.textContent = m.text;
      statusEl.dataset.state = m.state;
      break;
    case "session":
      session = m.info;
      transcript.replaceChildren();
      transcript.dataset.sessionId = m.info?.sessionId ?? "";
      transcript.dataset.sessionSeq = String(Number(transcript.dataset.sessionSeq ?? 0) + 1);
      toolCalls.clear();
      planNode = undefined;
      current = undefined;
      renderControls();
      if (m.info) notice("info", `New session with ${m.info.agent}`);
      break;
    case "userPrompt": {
      current = undefined;
      appendText("user", m.text);
      current = undefined;
      planNode = undefined;
      break;
    }
    case "updates":
      for (const u of m.updates) applyUpdate(u);
      break;
    case "turnEnded": {
      // The turn is over: its text is shown now, before the line that says so.
      renders.flush();
      current = undefined;
      const text = m.stopReason === "error" ? `Error: ${m.message ?? "prompt failed"}` : `Turn ended: ${m.stopReason}`;
      const n = el("div", `turn-end stop-${m.stopReason}`, text);
      transcript.appendChild(n);
      break;
    }
    case "busy":
      setBusy(m.busy);
      break;
    case "notice":
      notice(m.level, m.text);
      break;
  }
  // Text blocks render on the next frame (renders); everything else is in place already.
  if (renders.pending === 0) scrollToEnd();
});

function send() {
  const text = input.value.trim();
  if (!text || sendBtn.disabled) return;
  input.value = "";
  post({ type: "prompt", text });
}

sendBtn.addEventListener("click", send);
input.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    send();
  }
});
cancelBtn.addEventListener("click", () => post({ type: "cancel" }));
newBtn.addEventListener("click", () => post({ type: "newSession" }));
setBusy(false);
post({ type: "ready" });
