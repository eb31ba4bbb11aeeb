// A small ACP client in a web page: the protocol engine is acp-wasm (the `web-client` build:
// the engine plus acp-client), the transport a WebSocket to `acp serve --ws`, which runs one
// agent process per connection.
//
// `acp serve` wants its token with every connection. A browser's WebSocket cannot set an
// `Authorization` header, so the page offers the token as the subprotocol `acp.token.TOKEN`
// (the server echoes it back). The token comes from the page's address, `#token=TOKEN`
// (a fragment: never sent to the server that serves this page), or is already in the WebSocket
// URL as `?token=TOKEN`.
//
// The page is the *client* of ACP: it sends initialize, session/new and session/prompt, and it
// answers the agent's requests: fs/read_text_file and fs/write_text_file from a virtual file
// map kept in the page (shown on the right), and session/request_permission with buttons.
//
// The conversation is acp-client's thread model (`Thread`, the same one `acp chat` and the VS
// Code extension render from): each session/update's params go to `applyUpdate`, and the page
// is drawn from `takeDelta()`, the entries changed since the last frame, once per animation
// frame however many chunks arrived in it.
//
// Every piece of agent text reaches the DOM through `textContent`, never `innerHTML`.

import init, { AcpConnection, Thread, type AcpEvent, type ThreadApplied, type ThreadBlock, type ThreadDelta,
  type ThreadEntry, type ThreadMeta } from "acp-wasm/client";

// ---- the page's elements and a tiny DOM helper --------------------------------------------

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
const urlInput = $<HTMLInputElement>("url");
const cwdInput = $<HTMLInputElement>("cwd");
const connectButton = $<HTMLButtonElement>("connect");
const statusLine = $("status");
const transcript = $("transcript");
const permissions = $("permissions");
const promptInput = $<HTMLTextAreaElement>("prompt");
const sendButton = $<HTMLButtonElement>("send");
const cancelButton = $<HTMLButtonElement>("cancel");
const planList = $("plan");
const toolList = $("tools");
const fileView = $("files");

/** Creates an element; `text` goes in as text, so it can never become markup. */
function el(tag: string, className = "", text = ""): HTMLElement {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text) e.textContent = text;
  return e;
}

function setStatus(state: string, text: string) {
  statusLine.dataset.state = state;
  statusLine.textContent = text;
}

// ---- the virtual file system the agent reads and writes -----------------------------------

const params = new URLSearchParams(location.search);
urlInput.value = params.get("url") ?? `ws://127.0.0.1:${params.get("port") ?? "8765"}`;
cwdInput.value = params.get("cwd") ?? "/virtual/project";
/** The token `acp serve` printed (or was given), from `#token=...`. */
const token = new URLSearchParams(location.hash.slice(1)).get("token") ?? undefined;

const files = new Map<string, string>([
  [`${cwdInput.value}/notes.txt`, "These notes live in the page, not on disk.\nEdit me from the agent!\n"],
]);

function renderFiles(changed?: string) {
  fileView.replaceChildren();
  for (const path of [...files.keys()].sort()) {
    const box = el("div", path === changed ? "file changed" : "file");
    box.dataset.path = path;
    box.append(el("div", "path", path), el("pre", "", files.get(path)));
    fileView.append(box);
  }
}
renderFiles();

// ---- the connection: engine + WebSocket ----------------------------------------------------

// Load the engine once. `npm run build` copies acp_wasm_bg.wasm next to the bundle (dist/).
const wasmReady = init({ module_or_path: new URL("acp_wasm_bg.wasm", import.meta.url) });

let conn: AcpConnection | undefined;
let ws: WebSocket | undefined;
let timer: ReturnType<typeof setTimeout> | undefined;
let sessionId: string | undefined;
const now = () => performance.now();

/** What to do when an outgoing request completes, by request id. */
const waiting = new Map<number, { ok: (result: any) => void; fail: (e: Error) => void }>();

/** Sends a request through the engine; resolves with its result. */
function request(method: string, params: unknown, timeoutMs?: number): Promise<any> {
  if (!conn) return Promise.reject(new Error("not connected"));
  const id = conn.sendRequest(method, params, now(), timeoutMs);
  const done = new Promise((ok, fail) => waiting.set(id, { ok, fail }));
  pump();
  return done;
}

/**
 * The drain rule of acp-wasm: after anything that changed the connection, take every outgoing
 * message and every event until both are empty, then re-arm the timer for the next deadline.
 * Event handlers may call respond() etc. themselves: the loop picks up what they queue.
 */
let pumping = false;
function pump() {
  if (!conn || pumping) return;
  pumping = true;
  try {
    for (;;) {
      const out = conn.pollTransmitString();
      if (out !== undefined) {
        // NDJSON out of the engine; `acp serve` wants one JSON-RPC message per text frame.
        for (const line of out.split("\n")) if (line.trim() && ws?.readyState === WebSocket.OPEN) ws.send(line);
        continue;
      }
      const event = conn.pollEvent();
      if (event === undefined) break;
      try {
        handleEvent(event);
      } catch (e) {
        // Params not shaped as the schema says: answer a request with an error, go on.
        console.error(`cannot handle ${JSON.stringify(event).slice(0, 200)}:`, e);
        if (event.type === "request") try { conn.respondError(event.token, -32602, `invalid params: ${e}`); } catch {}
      }
    }
    clearTimeout(timer);
    const deadline = conn.pollTimeout();
    if (deadline !== undefined) {
      timer = setTimeout(() => { conn?.handleTimeout(now()); pump(); }, Math.max(0, deadline - now()));
    }
    if (conn.isClosed) { conn.free(); conn = undefined; }
  } finally {
    pumping = false;
  }
}

function handleEvent(event: AcpEvent) {
  switch (event.type) {
    case "request": return answerAgentRequest(event.token, event.method, event.params as any);
    case "notification":
      if (event.method === "session/update") applyUpdate(event.params);
      return;
    case "response": waiting.get(event.requestId)?.ok(event.result); waiting.delete(event.requestId); return;
    case "requestFailed":
      waiting.get(event.requestId)?.fail(new Error(`${event.method} failed (${event.kind}): ${event.error.message}`));
      waiting.delete(event.requestId);
      return;
    // The engine answered a permission request itself (we sent session/cancel, or it closed).
    case "autoAnswered": return closePermission(event.token, `answered: ${event.reason}`);
    case "cancelRequested":
      if (permissions.querySelector(`[data-token="${event.token}"]`)) {
        conn!.respond(event.token, { outcome: { outcome: "cancelled" } });
        closePermission(event.token, "withdrawn by the agent");
      }
      return;
    case "protocolError": console.warn(`agent broke the protocol (${event.kind}): ${event.message}`); return;
    case "closed":
      setStatus("disconnected", `disconnected: ${event.reason}`);
      sessionId = undefined;
      setBusy(false);
      return;
  }
}

function connect() {
  disconnect();
  let socket: WebSocket;
  try {
    // The token as a subprotocol, the one way a browser can send it other than in the URL.
    socket = token ? new WebSocket(urlInput.value, [`acp.token.${token}`]) : new WebSocket(urlInput.value);
  } catch (e) {
    // A malformed URL, or a token that is no valid subprotocol name.
    setStatus("error", `cannot connect: ${(e as Error).message}`);
    return;
  }
  ws = socket;
  conn = new AcpConnection("client");
  newThread();
  setStatus("connecting", `connecting to ${urlInput.value}…`);
  socket.onmessage = (e) => {
    if (ws !== socket || typeof e.data !== "string") return;
    conn?.feedString(e.data + "\n", now()); // one message per frame; the engine wants lines
    pump();
  };
  let opened = false;
  socket.onclose = (e) => {
    if (ws !== socket) return;
    conn?.feedEof(now());
    pump();
    // A refused handshake (wrong token: 401, page origin not allowed: 403) looks like any
    // unreachable server to a page: the browser only reports code 1006.
    const hint = opened ? "" : token ? "; is acp serve running there, and is #token= its token?"
      : "; is acp serve running there? Add its token to this page's address: #token=TOKEN";
    setStatus("disconnected", `disconnected (WebSocket code ${e.code}${e.reason ? `: ${e.reason}` : ""})${hint}`);
  };
  socket.onopen = () => { opened = true; void startSession(socket); };
}

async function startSession(socket: WebSocket) {
  try {
    const info = await request("initialize", {
      protocolVersion: 1,
      // The agent may read and write files: this page serves them from its virtual file map.
      clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: false },
      clientInfo: { name: "acp-browser-example", version: "0.1.0" },
    }, 30_000);
    const session = await request("session/new", { cwd: cwdInput.value, mcpServers: [] }, 30_000);
    if (ws !== socket) return;
    sessionId = session.sessionId;
    thread?.setSession(session.sessionId, session.modes ? JSON.stringify(session.modes.availableModes) : null,
      session.modes?.currentModeId ?? null, session.configOptions ? JSON.stringify(session.configOptions) : null);
    scheduleRender();
    const agent = info.agentInfo?.title ?? info.agentInfo?.name ?? "agent";
    setStatus("ready", `connected to ${agent}, session ${sessionId}`);
    setBusy(false);
  } catch (e) {
    setStatus("error", (e as Error).message);
  }
}

function disconnect() {
  ws?.close();
  ws = undefined;
  conn?.close("the page disconnected");
  pump();
}

// ---- prompt turns ---------------------------------------------------------------------------

function setBusy(busy: boolean) {
  const ready = sessionId !== undefined;
  promptInput.disabled = sendButton.disabled = !ready || busy;
  cancelButton.disabled = !ready || !busy;
  if (ready) statusLine.dataset.state = busy ? "busy" : "ready";
}

async function sendPrompt(text: string) {
  const t = thread!;
  const prompt = [{ type: "text", text }];
  t.beginTurn(JSON.stringify(prompt));
  flush(); // the user's line at once
  setBusy(true);
  try {
    const result = await request("session/prompt", { sessionId, prompt });
    if (t === thread) t.endTurn(result.stopReason);
  } catch (e) {
    if (t === thread) t.failTurn((e as Error).message);
  }
  // The turn's last chunks are drawn before its end line, not a frame later.
  flush();
  setBusy(false);
}

function cancelTurn() {
  if (!conn || !sessionId) return;
  // The engine also answers our open permission requests `cancelled` (autoAnswered events).
  conn.notify("session/cancel", { sessionId });
  pump();
}

// ---- what the agent sends: the conversation (acp-client's Thread) ----------------------------

let thread: Thread | undefined;
/** The page's element of each entry of the thread, by entry number. */
const views = new Map<number, HTMLElement>();
/** How many session/update chunks went into each entry (shown as data-chunks). */
const chunks = new Map<number, number>();
/** The .turn box new entries go to (a user entry starts one). */
let turnBox: HTMLElement | undefined;
let frame: number | undefined;

/** A fresh conversation for a new connection; the old one's view is kept, its memory freed. */
function newThread() {
  if (frame !== undefined) cancelAnimationFrame(frame);
  frame = undefined;
  thread?.free();
  thread = new Thread();
  views.clear();
  chunks.clear();
  turnBox = undefined;
}

/** Folds one session/update into the thread; the page is drawn at the next frame. */
function applyUpdate(params: unknown) {
  if (!thread) return;
  let applied: ThreadApplied;
  try {
    applied = JSON.parse(thread.applyUpdate(JSON.stringify(params)));
  } catch (e) {
    console.warn(`${(e as Error).message}`); // "unreadable session/update: ..."; nothing changed
    return;
  }
  if (applied.applied === "chunk") chunks.set(applied.entry, (chunks.get(applied.entry) ?? 0) + 1);
  scheduleRender();
}

function scheduleRender() {
  if (frame === undefined) frame = requestAnimationFrame(render);
}

/** Draws what is pending now (a turn's end, a new prompt) instead of at the next frame. */
function flush() {
  if (frame !== undefined) cancelAnimationFrame(frame);
  render();
}

/** One frame: each entry changed since the last one is drawn once, however many chunks changed it. */
function render() {
  frame = undefined;
  if (!thread?.hasChanges()) return;
  const delta: ThreadDelta = JSON.parse(thread.takeDelta());
  for (const [n, view] of views) {
    if (n < delta.firstEntry) { view.remove(); views.delete(n); } // dropped for the memory limit
  }
  for (const [n, entry] of delta.entries) renderEntry(n, entry);
  // A message that only grew: its new text, at the end of its last block.
  for (const [n, , text] of delta.appended ?? []) {
    const view = views.get(n);
    if (!view) continue;
    view.append(text);
    if (chunks.has(n)) view.dataset.chunks = String(chunks.get(n));
  }
  if (delta.meta) renderMeta(delta.meta);
  transcript.scrollTop = transcript.scrollHeight;
}

/** The text of content blocks (other kinds than text are only named). */
const blocksText = (blocks: ThreadBlock[]) =>
  blocks.map((b) => (b.type === "text" ? b.text ?? "" : `[${b.type}]`)).join("");

function renderEntry(n: number, entry: ThreadEntry) {
  let view = views.get(n);
  if (entry.type === "tool") {
    if (!view) {
      view = el("li");
      view.dataset.id = entry.toolCallId;
      view.append(el("span", "title"), el("span", "status"), el("div", "content"));
      toolList.append(view);
    }
    view.querySelector(".title")!.textContent = entry.title;
    view.dataset.status = entry.status;
    view.querySelector(".status")!.textContent = entry.status.replace("_", " ");
    view.querySelector(".content")!.textContent = entry.content.map((c) =>
      c.type === "diff" ? `diff of ${c.path}` : c.type === "content" ? blocksText([c.content]) : `[${c.type}]`).join("\n");
  } else {
    if (!view) {
      if (entry.type === "user" || !turnBox) {
        turnBox = el("div", "turn");
        transcript.append(turnBox);
      }
      view = el("div", entry.type === "notice" ? "note" : entry.type);
      turnBox.append(view);
    }
    if (entry.type === "notice") {
      view.dataset.level = entry.level;
      view.textContent = entry.text;
    } else {
      view.textContent = blocksText(entry.content); // one text node: the whole message so far
      if (chunks.has(n)) view.dataset.chunks = String(chunks.get(n));
    }
  }
  view.dataset.entry = String(n);
  views.set(n, view);
}

function renderMeta(meta: ThreadMeta) {
  planList.replaceChildren(...meta.plan.map((e) => {
    const li = el("li", "", e.content);
    li.dataset.status = e.status;
    return li;
  }));
  // The turn's end line, once, after its entries.
  if (meta.turn === "idle" && meta.lastStop && turnBox && !turnBox.querySelector(".stop")) {
    const stop = el("div", "stop", `turn ended: ${meta.lastStop}`);
    stop.dataset.stopReason = meta.lastStop;
    turnBox.append(stop);
  }
}

// ---- what the agent asks: files and permission ---------------------------------------------

function answerAgentRequest(token: number, method: string, p: any) {
  const c = conn!;
  switch (method) {
    case "fs/read_text_file": {
      const text = files.get(p.path);
      if (text === undefined) return c.respondError(token, -32002, `not in the page's files: ${p.path}`);
      // Optional 1-based start line and line count.
      const lines = text.split("\n").slice((p.line ?? 1) - 1);
      const content = (p.limit != null ? lines.slice(0, p.limit) : lines).join("\n");
      return c.respond(token, { content });
    }
    case "fs/write_text_file":
      files.set(p.path, p.content);
      renderFiles(p.path);
      return c.respond(token, {});
    case "session/request_permission": return showPermission(token, p);
    default: return c.respondError(token, -32601, `this client does not support ${method}`);
  }
}

/** One box per open permission request, with a button per option the agent offers. */
function showPermission(token: number, p: any) {
  const box = el("div", "permission");
  box.dataset.token = String(token);
  box.append(el("p", "", `The agent asks: ${p.toolCall?.title ?? "permission"}`));
  for (const option of p.options) {
    const b = el("button", "option", option.name) as HTMLButtonElement;
    b.dataset.optionId = option.optionId;
    b.dataset.kind = option.kind; // allow_once, reject_always, ... (colours in style.css)
    b.onclick = () => {
      conn?.respond(token, { outcome: { outcome: "selected", optionId: option.optionId } });
      closePermission(token, `you chose: ${option.name}`);
      pump();
    };
    box.append(b);
  }
  const cancel = el("button", "option cancel", "Cancel turn");
  cancel.onclick = cancelTurn;
  box.append(cancel);
  permissions.append(box);
}

function closePermission(token: number, why: string) {
  const box = permissions.querySelector(`[data-token="${token}"]`);
  if (!box) return;
  box.remove();
  thread?.notice("info", `permission: ${why}`);
  scheduleRender();
}

// ---- wiring ---------------------------------------------------------------------------------

$("connect-form").onsubmit = (e) => { e.preventDefault(); wasmReady.then(connect); };
$("prompt-form").onsubmit = (e) => {
  e.preventDefault();
  const text = promptInput.value.trim();
  if (!text || !sessionId) return;
  promptInput.value = "";
  void sendPrompt(text);
};
promptInput.onkeydown = (e) => {
  if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); sendButton.click(); }
};
cancelButton.onclick = cancelTurn;
wasmReady.then(
  () => { connectButton.disabled = false; setStatus("idle", "not connected"); },
  (e: unknown) => setStatus("error", `could not load acp-wasm: ${e}`),
);
