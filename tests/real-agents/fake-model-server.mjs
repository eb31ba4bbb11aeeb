#!/usr/bin/env node
// A fake model server for the real-agent tests (scripts/test-real-agents.sh): it speaks the
// Anthropic Messages API (claude-agent-acp), the OpenAI Responses API (codex-acp), the OpenAI
// Chat Completions API (codex-acp, Qwen Code, OpenCode) and the Gemini API (gemini-cli) on
// 127.0.0.1, with SSE streaming, and plays a scripted conversation chosen by a marker in the
// user's prompt. Only node's standard library.
//
//   node fake-model-server.mjs [--port N] [--log FILE]
//
// prints `{"port":N}` on stdout once it listens (port 0, the default, picks a free one), then
// appends one JSON line per request to --log (method, path, selected headers, parsed body) and
// one per streamed answer that the client abandoned. It exits on SIGTERM/SIGINT, or when its
// stdin closes (so it never outlives the test that started it).
//
// Scripts, by the last marker `[[fake:NAME ARG]]` in the last message, when it is the user's:
//   text          streams FAKE_TEXT_ANSWER in several chunks, then ends the turn
//   write PATH    a tool call that writes FAKE_FILE_CONTENT to PATH (absolute), then, once the
//                 tool's result comes back, a final text quoting it ("FAKE-DONE: ...")
//   run COMMAND   a tool call that runs COMMAND (a shell command line), then the final text
//   slow          streams "tick N" every 200 ms for at most 120 s (a turn to cancel)
//   stall         accepts the request and answers nothing for at most 120 s (a turn to time out)
// Without a marker, or for a request that offers no tools (titles, summaries, quota checks), the
// answer is a short text (FAKE_SIDE_ANSWER; logged with `answer.side: true`). A request whose
// last message is a tool result gets the final text. Tool call arguments follow the tools the
// request declares (Write/Bash for Claude Code; apply_patch and exec_command/shell_command/shell
// for Codex; write_file and run_shell_command for Gemini CLI and Qwen Code; write and bash for
// OpenCode).

import http from "node:http";
import fs from "node:fs";

export const FAKE_TEXT_ANSWER = "Hello from the fake model: FAKE-TEXT-ANSWER.";
export const FAKE_FILE_CONTENT = "written by the fake model\n";
const FAKE_SIDE_ANSWER = "Fake side answer";
const SLOW_TICK_MS = 200;
const MAX_HOLD_MS = 120_000;

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
const logFile = opt("--log", null);
const port = Number(opt("--port", "0"));

let seq = 0;
function log(entry) {
  if (!logFile) return;
  fs.appendFileSync(logFile, JSON.stringify({ t: Date.now(), ...entry }) + "\n");
}

// ---- reading requests -------------------------------------------------------------------

/** Every piece of text in a message's content (string, blocks, nested tool results). */
function textsOf(content) {
  if (content == null) return [];
  if (typeof content === "string") return [content];
  if (Array.isArray(content)) return content.flatMap(textsOf);
  if (typeof content === "object") {
    const out = [];
    for (const key of ["text", "content", "output", "input_text"]) {
      if (key in content) out.push(...textsOf(content[key]));
    }
    return out;
  }
  return [];
}

const MARKER = /\[\[fake:(\w+)(?:\s+([^\]]*))?\]\]/g;

/** The last marker in the user's texts: {name, arg} or null. */
function findScript(userTexts) {
  let found = null;
  for (const text of userTexts) {
    for (const m of text.matchAll(MARKER)) found = { name: m[1], arg: (m[2] ?? "").trim() };
  }
  return found;
}

/** Normalised view of a request: the texts of its last message when that is the user's, the
 * text of the tool result when the last message is one (else null), the declared tools. */
function anthropicView(body) {
  // The conversation without system entries (Claude Code puts some among the messages).
  const messages = (body.messages ?? []).filter((m) => m.role !== "system");
  const last = messages[messages.length - 1];
  const blocks = !last || last.role !== "user" ? []
    : typeof last.content === "string" ? [{ type: "text", text: last.content }] : (last.content ?? []);
  const results = blocks.filter((b) => b.type === "tool_result");
  return {
    userTexts: blocks.filter((b) => b.type === "text").map((b) => b.text),
    toolResult: results.length ? textsOf(results.map((r) => r.content)).join("\n") : null,
    tools: (body.tools ?? []).map((t) => t.name),
    toolTypes: {},
  };
}

function responsesView(body) {
  const input = (typeof body.input === "string"
    ? [{ type: "message", role: "user", content: body.input }] : (body.input ?? []))
    .filter((i) => !(i.role === "system" || i.role === "developer"));
  const last = input[input.length - 1];
  const isResult = last && /_call_output$/.test(last.type ?? "");
  const isUser = last && (last.type === "message" || last.type === undefined) && last.role === "user";
  return {
    userTexts: isUser ? textsOf(last.content) : [],
    toolResult: isResult ? textsOf(last.output).join("\n") || JSON.stringify(last.output) : null,
    tools: (body.tools ?? []).map((t) => t.name ?? t.function?.name ?? t.type),
    toolTypes: Object.fromEntries((body.tools ?? []).map((t) => [t.name ?? t.type, t.type])),
  };
}

function chatView(body) {
  const messages = (body.messages ?? []).filter((m) => m.role !== "system" && m.role !== "developer");
  const last = messages[messages.length - 1];
  return {
    userTexts: last && last.role === "user" ? textsOf(last.content) : [],
    toolResult: last && last.role === "tool" ? textsOf(last.content).join("\n") : null,
    tools: (body.tools ?? []).map((t) => t.function?.name ?? t.name),
    toolTypes: {},
  };
}

function geminiView(body) {
  const contents = body.contents ?? [];
  const last = contents[contents.length - 1];
  const parts = last && last.role !== "model" ? (last.parts ?? []) : [];
  const results = parts.filter((p) => p.functionResponse);
  return {
    userTexts: parts.filter((p) => typeof p.text === "string").map((p) => p.text),
    toolResult: results.length
      ? results.map((p) => JSON.stringify(p.functionResponse.response ?? {})).join("\n") : null,
    tools: (body.tools ?? []).flatMap((t) => (t.functionDeclarations ?? []).map((f) => f.name)),
    toolTypes: {},
  };
}

// ---- the script ---------------------------------------------------------------------------

/**
 * What to answer, API-neutral: {kind: "text", chunks} | {kind: "tool", name, input}
 * | {kind: "slow"} | {kind: "stall"}.
 */
function plan(view, api) {
  if (view.toolResult !== null) {
    const quoted = view.toolResult.replace(/\s+/g, " ").slice(0, 300);
    return { kind: "text", chunks: ["FAKE-DONE: ", "the tool said: ", quoted] };
  }
  const script = view.tools.length ? findScript(view.userTexts) : null;
  if (!script) return { kind: "text", side: true, chunks: [FAKE_SIDE_ANSWER] };
  switch (script.name) {
    case "text":
      return { kind: "text", chunks: ["Hello from ", "the fake model: ", "FAKE-TEXT-ANSWER."] };
    case "slow":
      return { kind: "slow" };
    case "stall":
      return { kind: "stall" };
    case "write":
      return writeCall(view, api, script.arg);
    case "run":
      return runCall(view, api, script.arg);
    default:
      return { kind: "text", chunks: [`unknown fake script ${script.name}`] };
  }
}

function writeCall(view, api, path) {
  if (api === "gemini") {
    return { kind: "tool", name: "write_file", input: { file_path: path, content: FAKE_FILE_CONTENT } };
  }
  if (api === "anthropic") {
    return { kind: "tool", name: "Write", input: { file_path: path, content: FAKE_FILE_CONTENT } };
  }
  // OpenAI Chat Completions agents: Qwen Code's write_file, OpenCode's write.
  if (view.tools.includes("write_file")) {
    return { kind: "tool", name: "write_file", input: { file_path: path, content: FAKE_FILE_CONTENT } };
  }
  if (view.tools.includes("write")) {
    return { kind: "tool", name: "write", input: { filePath: path, content: FAKE_FILE_CONTENT } };
  }
  if (view.tools.includes("apply_patch")) {
    const patch = [
      "*** Begin Patch",
      `*** Add File: ${path}`,
      ...FAKE_FILE_CONTENT.replace(/\n$/, "").split("\n").map((l) => `+${l}`),
      "*** End Patch",
      "",
    ].join("\n");
    // apply_patch is a freeform ("custom") tool or a function tool taking {input}.
    if (view.toolTypes.apply_patch === "custom") {
      return { kind: "tool", name: "apply_patch", custom: true, input: patch };
    }
    return { kind: "tool", name: "apply_patch", input: { input: patch } };
  }
  // No patch tool: write with a shell command.
  const q = path.replace(/'/g, "'\\''");
  return runCall(view, api, `printf '%s' '${FAKE_FILE_CONTENT.replace(/\n$/, "")}' > '${q}'`);
}

function runCall(view, api, command) {
  if (api === "gemini") {
    return { kind: "tool", name: "run_shell_command", input: { command, description: "Run a command" } };
  }
  if (api === "anthropic") {
    return { kind: "tool", name: "Bash", input: { command, description: "Run a command" } };
  }
  for (const name of ["run_shell_command", "bash", "shell_command", "exec_command", "shell", "local_shell"]) {
    if (!view.tools.includes(name)) continue;
    if (name === "run_shell_command") return { kind: "tool", name, input: { command, description: "Run a command" } };
    if (name === "bash") return { kind: "tool", name, input: { command } };
    if (name === "shell_command") return { kind: "tool", name, input: { command } };
    if (name === "exec_command") return { kind: "tool", name, input: { cmd: command } };
    return { kind: "tool", name, input: { command: ["bash", "-lc", command] } };
  }
  return { kind: "text", chunks: [`no shell tool among ${view.tools.join(",")}`] };
}

// ---- writing answers ----------------------------------------------------------------------

function sseHeaders(res) {
  res.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
  });
}

function sse(res, event, data) {
  res.write((event ? `event: ${event}\n` : "") + `data: ${JSON.stringify(data)}\n\n`);
}

/** Streams `tick N` pieces through `emit` until the client goes away or MAX_HOLD_MS. */
function tick(req, res, emit, done) {
  let n = 0;
  const started = Date.now();
  const timer = setInterval(() => {
    if (res.destroyed || res.writableEnded) return clearInterval(timer);
    if (Date.now() - started > MAX_HOLD_MS) {
      clearInterval(timer);
      return done();
    }
    emit(`tick ${++n} `);
  }, SLOW_TICK_MS);
  res.on("close", () => clearInterval(timer));
}

/** Answers nothing until the client goes away or MAX_HOLD_MS, then ends the response. */
function stall(res) {
  const timer = setTimeout(() => res.end(), MAX_HOLD_MS);
  res.on("close", () => clearTimeout(timer));
}

function anthropicAnswer(req, res, body, p, id) {
  const model = body.model ?? "fake-model";
  const msgId = `msg_fake_${id}`;
  const usage = { input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  if (!body.stream) {
    const content = p.kind === "tool"
      ? [{ type: "tool_use", id: `toolu_fake_${id}`, name: p.name, input: p.input }]
      : [{ type: "text", text: (p.chunks ?? [FAKE_SIDE_ANSWER]).join("") }];
    const json = {
      id: msgId, type: "message", role: "assistant", model, content,
      stop_reason: p.kind === "tool" ? "tool_use" : "end_turn", stop_sequence: null, usage,
    };
    res.writeHead(200, { "content-type": "application/json" });
    return res.end(JSON.stringify(json));
  }
  if (p.kind === "stall") return stall(res);
  sseHeaders(res);
  sse(res, "message_start", {
    type: "message_start",
    message: { id: msgId, type: "message", role: "assistant", model, content: [],
      stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } },
  });
  const finish = (stop) => {
    sse(res, "message_delta", { type: "message_delta", delta: { stop_reason: stop, stop_sequence: null },
      usage: { output_tokens: 5 } });
    sse(res, "message_stop", { type: "message_stop" });
    res.end();
  };
  if (p.kind === "tool") {
    sse(res, "content_block_start", { type: "content_block_start", index: 0,
      content_block: { type: "tool_use", id: `toolu_fake_${id}`, name: p.name, input: {} } });
    const json = JSON.stringify(p.input);
    const mid = Math.floor(json.length / 2);
    for (const part of [json.slice(0, mid), json.slice(mid)]) {
      sse(res, "content_block_delta", { type: "content_block_delta", index: 0,
        delta: { type: "input_json_delta", partial_json: part } });
    }
    sse(res, "content_block_stop", { type: "content_block_stop", index: 0 });
    return finish("tool_use");
  }
  sse(res, "content_block_start", { type: "content_block_start", index: 0,
    content_block: { type: "text", text: "" } });
  const delta = (text) => sse(res, "content_block_delta", { type: "content_block_delta", index: 0,
    delta: { type: "text_delta", text } });
  const end = () => {
    sse(res, "content_block_stop", { type: "content_block_stop", index: 0 });
    finish("end_turn");
  };
  if (p.kind === "slow") return tick(req, res, delta, end);
  for (const c of p.chunks) delta(c);
  end();
}

function responsesAnswer(req, res, body, p, id) {
  const respId = `resp_fake_${id}`;
  const model = body.model ?? "fake-model";
  const usage = { input_tokens: 10, input_tokens_details: { cached_tokens: 0 }, output_tokens: 5,
    output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 15 };
  const base = { id: respId, object: "response", created_at: Math.floor(Date.now() / 1000), model };
  if (p.kind === "stall") return stall(res);
  sseHeaders(res);
  let n = 0;
  const ev = (type, data) => sse(res, type, { type, sequence_number: n++, ...data });
  ev("response.created", { response: { ...base, status: "in_progress", output: [] } });
  const complete = (output) => {
    ev("response.completed", { response: { ...base, status: "completed", output, usage } });
    res.end();
  };
  if (p.kind === "tool") {
    const item = p.custom
      ? { type: "custom_tool_call", id: `ctc_fake_${id}`, call_id: `call_fake_${id}`, name: p.name,
          input: p.input, status: "completed" }
      : { type: "function_call", id: `fc_fake_${id}`, call_id: `call_fake_${id}`, name: p.name,
          arguments: JSON.stringify(p.input), status: "completed" };
    ev("response.output_item.added", { output_index: 0, item: { ...item, status: "in_progress" } });
    ev("response.output_item.done", { output_index: 0, item });
    return complete([item]);
  }
  const msgId = `msg_fake_${id}`;
  ev("response.output_item.added", { output_index: 0,
    item: { type: "message", id: msgId, role: "assistant", status: "in_progress", content: [] } });
  ev("response.content_part.added", { item_id: msgId, output_index: 0, content_index: 0,
    part: { type: "output_text", text: "", annotations: [] } });
  let text = "";
  const delta = (d) => {
    text += d;
    ev("response.output_text.delta", { item_id: msgId, output_index: 0, content_index: 0, delta: d });
  };
  const end = () => {
    ev("response.output_text.done", { item_id: msgId, output_index: 0, content_index: 0, text });
    const item = { type: "message", id: msgId, role: "assistant", status: "completed",
      content: [{ type: "output_text", text, annotations: [] }] };
    ev("response.output_item.done", { output_index: 0, item });
    complete([item]);
  };
  if (p.kind === "slow") return tick(req, res, delta, end);
  for (const c of p.chunks) delta(c);
  end();
}

function chatAnswer(req, res, body, p, id) {
  const base = { id: `chatcmpl-fake-${id}`, object: "chat.completion.chunk",
    created: Math.floor(Date.now() / 1000), model: body.model ?? "fake-model" };
  if (!body.stream) {
    const message = p.kind === "tool"
      ? { role: "assistant", content: null, tool_calls: [{ id: `call_fake_${id}`, type: "function",
          function: { name: p.name, arguments: JSON.stringify(p.input) } }] }
      : { role: "assistant", content: (p.chunks ?? [FAKE_SIDE_ANSWER]).join("") };
    res.writeHead(200, { "content-type": "application/json" });
    return res.end(JSON.stringify({ ...base, object: "chat.completion",
      choices: [{ index: 0, message, finish_reason: p.kind === "tool" ? "tool_calls" : "stop" }],
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } }));
  }
  if (p.kind === "stall") return stall(res);
  sseHeaders(res);
  const chunk = (delta, finish = null) => sse(res, null, { ...base,
    choices: [{ index: 0, delta, finish_reason: finish }] });
  const done = (finish) => {
    chunk({}, finish);
    res.write("data: [DONE]\n\n");
    res.end();
  };
  chunk({ role: "assistant", content: "" });
  if (p.kind === "tool") {
    chunk({ tool_calls: [{ index: 0, id: `call_fake_${id}`, type: "function",
      function: { name: p.name, arguments: JSON.stringify(p.input) } }] });
    return done("tool_calls");
  }
  const delta = (d) => chunk({ content: d });
  if (p.kind === "slow") return tick(req, res, delta, () => done("stop"));
  for (const c of p.chunks) delta(c);
  done("stop");
}

/** A value that fits a (Gemini/OpenAPI-style) JSON schema: the first enum value, "fake", 1,
 * false, [], objects with every property. */
function fillSchema(schema) {
  if (!schema || typeof schema !== "object") return "fake";
  if (Array.isArray(schema.enum) && schema.enum.length) return schema.enum[0];
  switch (String(schema.type ?? "object").toLowerCase()) {
    case "string": return "fake";
    case "integer": case "number": return 1;
    case "boolean": return false;
    case "array": return [];
    default:
      return Object.fromEntries(Object.entries(schema.properties ?? {}).map(([k, v]) => [k, fillSchema(v)]));
  }
}

function geminiAnswer(req, res, body, p, id, stream) {
  // Side queries that want JSON (Gemini CLI's model router, ...) get JSON that fits the schema.
  const cfg = body.generationConfig ?? {};
  if (p.side && cfg.responseMimeType === "application/json") {
    p = { ...p, chunks: [JSON.stringify(fillSchema(cfg.responseJsonSchema ?? cfg.responseSchema))] };
  }
  const usage = { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 };
  const chunk = (parts, finish) => ({
    candidates: [{ content: { role: "model", parts }, index: 0, ...(finish ? { finishReason: finish } : {}) }],
    usageMetadata: usage,
    modelVersion: "fake-model",
    responseId: `fake_${id}`,
  });
  const toolParts = () => [{ functionCall: { id: `call_fake_${id}`, name: p.name, args: p.input } }];
  if (!stream) {
    const parts = p.kind === "tool" ? toolParts() : [{ text: (p.chunks ?? [FAKE_SIDE_ANSWER]).join("") }];
    res.writeHead(200, { "content-type": "application/json" });
    return res.end(JSON.stringify(chunk(parts, "STOP")));
  }
  if (p.kind === "stall") return stall(res);
  sseHeaders(res);
  if (p.kind === "tool") {
    sse(res, null, chunk(toolParts(), "STOP"));
    return res.end();
  }
  const delta = (text) => sse(res, null, chunk([{ text }]));
  const end = () => {
    sse(res, null, chunk([{ text: "" }], "STOP"));
    res.end();
  };
  if (p.kind === "slow") return tick(req, res, delta, end);
  for (const c of p.chunks) delta(c);
  end();
}

// ---- the server ---------------------------------------------------------------------------

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const id = ++seq;
    const raw = Buffer.concat(chunks).toString("utf8");
    let body = null;
    try {
      body = raw ? JSON.parse(raw) : null;
    } catch {
      body = { unparsed: raw.slice(0, 2000) };
    }
    const path = req.url.split("?")[0];
    const headers = {};
    for (const h of ["authorization", "x-api-key", "x-goog-api-key", "content-type", "user-agent", "anthropic-version", "accept"]) {
      if (req.headers[h] !== undefined) headers[h] = req.headers[h];
    }
    let api = null;
    if (req.method === "POST" && /\/messages$/.test(path)) api = "anthropic";
    else if (req.method === "POST" && /\/responses$/.test(path)) api = "responses";
    else if (req.method === "POST" && /\/chat\/completions$/.test(path)) api = "chat";
    else if (req.method === "POST" && /:(stream)?generateContent$/i.test(path)) api = "gemini";
    let p = null;
    if (api) {
      const view = api === "anthropic" ? anthropicView(body ?? {})
        : api === "responses" ? responsesView(body ?? {})
        : api === "gemini" ? geminiView(body ?? {}) : chatView(body ?? {});
      p = plan(view, api);
    }
    log({ event: "request", id, method: req.method, path, headers, body, api, answer: p });
    res.on("close", () => {
      if (!res.writableEnded) log({ event: "abandoned", id, path });
    });
    try {
      if (api === "anthropic") return anthropicAnswer(req, res, body, p, id);
      if (api === "responses") return responsesAnswer(req, res, body, p, id);
      if (api === "chat") return chatAnswer(req, res, body, p, id);
      if (api === "gemini") {
        return geminiAnswer(req, res, body, p, id, /:streamGenerateContent$/i.test(path));
      }
      if (req.method === "POST" && /:countTokens$/.test(path)) {
        res.writeHead(200, { "content-type": "application/json" });
        return res.end(JSON.stringify({ totalTokens: 10 }));
      }
      if (req.headers.upgrade) {
        // No WebSockets here: 426 makes Codex use HTTP streaming at once (a 404 is retried).
        res.writeHead(426, { "content-type": "application/json" });
        return res.end(JSON.stringify({ error: { type: "upgrade_required", message: "fake server: HTTP only" } }));
      }
      if (req.method === "POST" && /\/messages\/count_tokens$/.test(path)) {
        res.writeHead(200, { "content-type": "application/json" });
        return res.end(JSON.stringify({ input_tokens: 10 }));
      }
      if (req.method === "GET" && /\/models$/.test(path)) {
        res.writeHead(200, { "content-type": "application/json" });
        return res.end(JSON.stringify({ object: "list", data: [], models: [] }));
      }
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { type: "not_found", message: `fake server: no ${req.method} ${path}` } }));
    } catch (e) {
      log({ event: "error", id, message: String(e && e.stack || e) });
      if (!res.headersSent) res.writeHead(500);
      res.end();
    }
  });
});

server.listen(port, "127.0.0.1", () => {
  process.stdout.write(JSON.stringify({ port: server.address().port }) + "\n");
});

function stop() {
  server.close();
  server.closeAllConnections?.();
  process.exit(0);
}
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
process.stdin.on("end", stop);
process.stdin.on("error", stop);
process.stdin.resume();
