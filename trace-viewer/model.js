// The trace model in JavaScript: what `acp trace`'s server (acp-cli/src/cli/trace/: line.rs,
// index.rs, query.rs, detail.rs, scan.rs) computes, for traces held in memory (the VS Code
// extension's). Same rules, same answers: test/vectors/ holds both to them. It answers the
// viewer's questions (status, summary, rows, locate, message) with the JSON the server sends,
// so the renderer (viewer.js) cannot tell them apart.
//
// Lines are kept as strings; a row refers to its line by number. Bounded by what it is fed
// (the extension keeps at most a few MiB) and by maxRows.

/** @typedef {{method?: string, session?: string, turn?: number, errors?: boolean, minMs?: number, q?: string, group?: boolean}} Filter */

const NONE = -1;
export const MAX_LINE = 8 << 20;
export const CUT_PREFIX = 64 << 10;
const MAX_NAME = 200;
const MAX_LANES = 32;
const MAX_PENDING = 65536;
const NAMES_LIMIT = 65535;
export const PREVIEW_CHARS = 160;
const PREVIEW_LINE = 64 << 10;
const MAX_DETAIL = 1 << 20;
const MAX_LISTED = 1000;
const MAX_TURNS = 10_000;

export const ERROR = 1;
export const CANCEL = 2;
export const CUT = 4;

const KINDS = ["request", "notification", "response", "error", "invalid", "oversize", "log", "malformed"];
const K = Object.fromEntries(KINDS.map((k, i) => [k, i]));

const CLIENT = "client";
const AGENT = "agent";

// ---- text helpers ---------------------------------------------------------------------------

/** UTF-8 length of a string. */
export function utf8Length(s) {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

/** The longest start of `s` whose UTF-8 form fits in `max` bytes (at a character boundary). */
export function utf8Prefix(s, max) {
  if (s.length <= max / 3) return s;
  let n = 0;
  let i = 0;
  for (; i < s.length; i++) {
    const c = s.charCodeAt(i);
    let w = c < 0x80 ? 1 : c < 0x800 ? 2 : 3;
    let step = 1;
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      w = 4;
      step = 2;
    }
    if (n + w > max) break;
    n += w;
    i += step - 1;
  }
  return s.slice(0, i);
}

const isObject = (v) => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v) => (typeof v === "string" ? v : undefined);
const has = (o, k) => Object.prototype.hasOwnProperty.call(o, k);
/** A member's value, `undefined` when absent or null (serde's Option). */
const opt = (o, k) => (has(o, k) && o[k] !== null ? o[k] : undefined);

// ---- the start of a JSON object (scan.rs) --------------------------------------------------

function skipWs(s, i) {
  while (i < s.length && (s[i] === " " || s[i] === "\t" || s[i] === "\n" || s[i] === "\r")) i++;
  return i;
}

function stringEnd(s, i) {
  let j = i + 1;
  while (j < s.length) {
    if (s[j] === "\\") j += 2;
    else if (s[j] === '"') return j + 1;
    else j++;
  }
  return undefined;
}

function valueEnd(s, i) {
  const c = s[i];
  if (c === undefined) return undefined;
  if (c === '"') return stringEnd(s, i);
  if (c === "{" || c === "[") {
    let depth = 0;
    let j = i;
    while (j < s.length) {
      const d = s[j];
      if (d === '"') {
        const e = stringEnd(s, j);
        if (e === undefined) return undefined;
        j = e;
        continue;
      }
      if (d === "{" || d === "[") depth++;
      else if (d === "}" || d === "]") {
        depth--;
        if (depth === 0) return j + 1;
      }
      j++;
    }
    return undefined;
  }
  let j = i;
  while (j < s.length && !",}] \t\n\r".includes(s[j])) j++;
  return j < s.length && j > i ? j : undefined;
}

/** The complete top-level members of the object `s` starts: [key, raw value] pairs. */
export function members(s) {
  const out = [];
  let i = skipWs(s, 0);
  if (s[i] !== "{") return out;
  i++;
  for (;;) {
    i = skipWs(s, i);
    if (s[i] !== '"') return out;
    const ke = stringEnd(s, i);
    if (ke === undefined) return out;
    let key;
    try {
      key = JSON.parse(s.slice(i, ke));
    } catch {
      return out;
    }
    i = skipWs(s, ke);
    if (s[i] !== ":") return out;
    i = skipWs(s, i + 1);
    const ve = valueEnd(s, i);
    if (ve === undefined) return out;
    out.push([key, s.slice(i, ve)]);
    i = skipWs(s, ve);
    if (s[i] === ",") i++;
    else return out;
  }
}

/** The raw text of each element of the JSON array `s` (which must be valid JSON). */
function elements(s) {
  const out = [];
  let i = skipWs(s, 0);
  if (s[i] !== "[") return out;
  i = skipWs(s, i + 1);
  if (s[i] === "]") return out;
  for (;;) {
    i = skipWs(s, i);
    const e = valueEnd(s, i) ?? s.length;
    out.push(s.slice(i, e));
    i = skipWs(s, e);
    if (s[i] === ",") i++;
    else return out;
  }
}

function rawString(raw) {
  if (raw === undefined || raw[0] !== '"') return undefined;
  try {
    return JSON.parse(raw);
  } catch {
    return undefined;
  }
}

// ---- one line (line.rs) --------------------------------------------------------------------

/** A conductor component's lane name. */
export function laneName(c) {
  if (c === "Client" || c === "client") return CLIENT;
  if (c === "Agent" || c === "agent") return AGENT;
  const m = /^Proxy\(([0-9]+)\)$/.exec(c);
  return m ? `proxy:${m[1]}` : c;
}

function lanes(send) {
  return send ? { from: CLIENT, to: AGENT } : { from: AGENT, to: CLIENT };
}

const malformed = () => ({ kind: K.malformed, error: true });

function extensionLine(text) {
  let t;
  let rest = text;
  const sp = text.indexOf(" ");
  if (sp > 0) {
    const first = text.slice(0, sp);
    if (/^[0-9][0-9.]*$/.test(first)) {
      const v = Number(first);
      t = Number.isFinite(v) ? v : undefined;
      rest = text.slice(sp + 1);
    }
  }
  for (const [mark, arrow] of [
    ["→ ", "send"],
    ["← ", "recv"],
    ["stderr ", "stderr"],
  ]) {
    if (rest.startsWith(mark)) return { t, arrow, rest: rest.slice(mark.length) };
  }
  if (rest === "stderr") return { t, arrow: "stderr", rest: "" };
  return undefined;
}

function analyse(method, id, params, result, error, hasError, base) {
  const p = base;
  p.id = id;
  if (method !== undefined) {
    p.kind = id !== undefined ? K.request : K.notification;
    if (params !== undefined && isObject(params)) {
      p.session = str(params.sessionId);
      if (method === "session/update" && isObject(params.update)) p.sub = str(params.update.sessionUpdate);
    }
    p.cancel = method === "session/cancel" || method === "$/cancel_request";
    p.method = method;
  } else if (hasError) {
    p.kind = K.error;
    p.error = true;
    if (isObject(error) && Number.isInteger(error.code)) {
      p.cancel = error.code === -32800;
      p.sub = String(error.code);
    }
  } else {
    p.kind = K.response;
    if (isObject(result)) {
      const stop = str(result.stopReason);
      const outcome = isObject(result.outcome) ? str(result.outcome.outcome) : undefined;
      p.session = str(result.sessionId);
      p.sub = stop ?? outcome;
      p.cancel = p.sub === "cancelled";
    }
  }
  return p;
}

/** A JSON-RPC message (its text); `kind` stays undefined when it is not an object. */
function message(text, base) {
  if (!text.trimStart().startsWith("{")) return base;
  let m;
  try {
    m = JSON.parse(text);
  } catch {
    return base;
  }
  if (!isObject(m)) return base;
  const id = has(m, "id") && m.id !== null ? JSON.stringify(m.id) : undefined;
  const p = analyse(str(m.method), id, opt(m, "params"), m.result, m.error, has(m, "error"), base);
  p.bytes = utf8Length(text);
  return p;
}

function wireLine(rest, t, send, out) {
  const base = () => ({ t, ...lanes(send) });
  if (rest.trimStart().startsWith("[")) {
    let arr;
    try {
      arr = JSON.parse(rest);
    } catch {
      arr = undefined;
    }
    if (Array.isArray(arr) && arr.length > 0) {
      elements(rest).forEach((raw, i) => {
        const p = message(raw, base());
        if (p.kind === undefined) {
          p.kind = K.invalid;
          p.error = true;
        }
        p.entry = i + 1;
        out.push(p);
      });
      return;
    }
  }
  const p = message(rest, base());
  if (p.kind === undefined) {
    p.kind = K.invalid;
    p.error = true;
    p.bytes = utf8Length(rest);
  }
  out.push(p);
}

const TYPES = {
  tMs: "number",
  dir: "string",
  kind: "string",
  line: "string",
  type: "string",
  ts: "number",
  from: "string",
  to: "string",
  is_error: "boolean",
  component: "string",
  level: "string",
};

function acpEntry(o, text) {
  const send = o.dir === "send" ? true : o.dir === "recv" ? false : undefined;
  if (send === undefined) return malformed();
  const base = { t: opt(o, "tMs"), ...lanes(send) };
  if (o.kind === "invalid") {
    let bytes = 0;
    if (opt(o, "line") !== undefined) bytes = utf8Length(o.line);
    else if (opt(o, "msg") !== undefined) bytes = utf8Length(rawMember(text, "msg") ?? "");
    return { ...base, kind: K.invalid, error: true, bytes };
  }
  if (o.kind === "oversize") return { ...base, kind: K.oversize, error: true };
  if (opt(o, "msg") === undefined) return malformed();
  const p = message(rawMember(text, "msg") ?? JSON.stringify(o.msg), base);
  if (p.kind === undefined) {
    p.kind = K.invalid;
    p.error = true;
  }
  return p;
}

/** The raw text of the top-level member `key` of the JSON object `text`. */
function rawMember(text, key) {
  for (const [k, v] of members(text)) if (k === key) return v;
  return undefined;
}

function conductor(o, ty, text) {
  const base = {
    t: opt(o, "ts") !== undefined ? o.ts * 1000 : undefined,
    from: opt(o, "from") !== undefined ? laneName(o.from) : undefined,
    to: opt(o, "to") !== undefined ? laneName(o.to) : undefined,
    bytes: utf8Length(text),
  };
  const method = str(o.method);
  const id = opt(o, "id") !== undefined ? JSON.stringify(o.id) : undefined;
  let p;
  if (ty === "request" || ty === "notification") {
    p = analyse(method, ty === "request" ? id : undefined, opt(o, "params"), undefined, undefined, false, base);
    if (p.kind === K.notification && ty === "request") p.kind = K.request;
  } else if (ty === "response") {
    const isError = o.is_error === true;
    const payload = opt(o, "payload");
    p = analyse(
      undefined,
      id,
      undefined,
      isError ? undefined : payload,
      isError ? payload : undefined,
      isError && payload !== undefined,
      base,
    );
    if (isError && p.kind !== K.error) {
      p.kind = K.error;
      p.error = true;
    }
  } else if (ty === "trace") {
    p = {
      ...base,
      from: opt(o, "component") !== undefined ? laneName(o.component) : base.from,
      to: undefined,
      kind: K.log,
      error: o.level === "error",
    };
  } else return malformed();
  if (p.session === undefined) p.session = str(o.session);
  if (p.kind === undefined || (p.kind !== K.log && (p.from === undefined || p.to === undefined))) return malformed();
  return p;
}

/** Reads one line into rows pushed on `out`; `state` carries the extension's last arrow. */
export function parseLine(text, cut, state, out) {
  if (text.endsWith("\r")) text = text.slice(0, -1);
  const trimmed = text.trimStart();
  if (trimmed === "") return;
  if (cut) {
    out.push(parseCut(text, state));
    return;
  }
  if (trimmed.startsWith("{")) {
    let o;
    try {
      o = JSON.parse(text);
    } catch {
      out.push(malformed());
      return;
    }
    if (!isObject(o)) {
      out.push(malformed());
      return;
    }
    for (const [k, type] of Object.entries(TYPES)) {
      if (has(o, k) && o[k] !== null && typeof o[k] !== type) {
        out.push(malformed());
        return;
      }
    }
    const ty = opt(o, "type");
    if (ty !== undefined && (opt(o, "ts") !== undefined || opt(o, "from") !== undefined)) {
      out.push(conductor(o, ty, text));
      return;
    }
    if (opt(o, "dir") !== undefined || opt(o, "tMs") !== undefined) {
      out.push(acpEntry(o, text));
      return;
    }
    if (opt(o, "jsonrpc") !== undefined && state.lastArrow !== undefined) {
      wireLine(text, undefined, state.lastArrow, out);
      return;
    }
    out.push(malformed());
    return;
  }
  const ext = extensionLine(text);
  if (ext) {
    if (ext.arrow === "stderr") {
      out.push({ t: ext.t, from: AGENT, kind: K.log, bytes: utf8Length(ext.rest) });
    } else {
      const send = ext.arrow === "send";
      state.lastArrow = send;
      wireLine(ext.rest, ext.t, send, out);
    }
    return;
  }
  out.push(malformed());
}

function cutMessage(text, t, send) {
  const m = members(text);
  const get = (k) => m.find(([key]) => key === k)?.[1];
  const method = rawString(get("method"));
  const idRaw = get("id");
  const id = idRaw !== undefined && idRaw !== "null" ? idRaw : undefined;
  let kind;
  if (method !== undefined) kind = id !== undefined ? K.request : K.notification;
  else kind = m.some(([k]) => k === "error") ? K.error : K.response;
  return { t, ...lanes(send), kind, id, method };
}

function parseCut(text, state) {
  let p = {};
  if (text.trimStart().startsWith("{")) {
    const m = members(text);
    const get = (k) => m.find(([key]) => key === k)?.[1];
    const number = (k) => {
      const v = get(k);
      if (v === undefined || !/^-?[0-9]/.test(v)) return undefined;
      const n = Number(v);
      return Number.isFinite(n) ? n : undefined;
    };
    const textOf = (k) => rawString(get(k));
    const idOf = () => {
      const v = get("id");
      return v !== undefined && v !== "null" ? v : undefined;
    };
    const ty = textOf("type");
    const dir = textOf("dir");
    if (ty !== undefined) {
      const ts = number("ts");
      const from = textOf("from");
      const to = textOf("to");
      p = {
        t: ts !== undefined ? ts * 1000 : undefined,
        from: from !== undefined ? laneName(from) : undefined,
        to: to !== undefined ? laneName(to) : undefined,
        id: idOf(),
        method: textOf("method"),
      };
      p.kind =
        ty === "request"
          ? K.request
          : ty === "notification"
            ? K.notification
            : ty === "response"
              ? get("is_error") === "true"
                ? K.error
                : K.response
              : ty === "trace"
                ? K.log
                : undefined;
    } else if (dir !== undefined) {
      p = {
        t: number("tMs"),
        ...(dir === "send" ? lanes(true) : dir === "recv" ? lanes(false) : {}),
        id: idOf(),
        method: textOf("method"),
      };
      const kinds = ["request", "notification", "response", "error", "invalid", "oversize"];
      const k = textOf("kind");
      p.kind = kinds.includes(k) ? K[k] : undefined;
    } else if (state.lastArrow !== undefined && get("jsonrpc") !== undefined) {
      p = cutMessage(text, undefined, state.lastArrow);
    }
  } else {
    const ext = extensionLine(text);
    if (ext) {
      if (ext.arrow === "stderr") p = { t: ext.t, from: AGENT, kind: K.log };
      else {
        const send = ext.arrow === "send";
        state.lastArrow = send;
        p = cutMessage(ext.rest, ext.t, send);
      }
    }
  }
  if (p.kind === undefined || (p.kind !== K.log && (p.from === undefined || p.to === undefined))) p = malformed();
  if (p.kind === K.error || p.kind === K.invalid || p.kind === K.oversize) p.error = true;
  if (p.kind !== K.request && p.kind !== K.response && p.kind !== K.error) p.id = undefined;
  p.cancel = p.method === "session/cancel" || p.method === "$/cancel_request";
  p.cut = true;
  return p;
}

// ---- a row's message (detail.rs) -----------------------------------------------------------

/** The message of a line: {json, text}. */
export function messageOf(line, entry) {
  if (line.endsWith("\r")) line = line.slice(0, -1);
  if (line.trimStart().startsWith("{")) {
    let o;
    try {
      o = JSON.parse(line);
    } catch {
      return { json: false, text: line };
    }
    if (!isObject(o)) return { json: true, text: line };
    for (const k of ["type", "from", "dir", "kind", "line"]) {
      if (has(o, k) && o[k] !== null && typeof o[k] !== "string") return { json: false, text: line };
    }
    for (const k of ["ts", "tMs"]) {
      if (has(o, k) && o[k] !== null && typeof o[k] !== "number") return { json: false, text: line };
    }
    if (opt(o, "type") !== undefined && (opt(o, "ts") !== undefined || opt(o, "from") !== undefined)) return { json: true, text: line };
    if (opt(o, "dir") !== undefined || opt(o, "tMs") !== undefined) {
      if (o.kind === "invalid" && opt(o, "line") !== undefined) return { json: false, text: o.line };
      if (o.kind === "oversize") return { json: true, text: line };
      if (opt(o, "msg") !== undefined) return { json: true, text: rawMember(line, "msg") ?? JSON.stringify(o.msg) };
      return { json: false, text: line };
    }
    return { json: true, text: line };
  }
  let rest = line;
  const sp = line.indexOf(" ");
  if (sp >= 0 && /^[0-9.]*$/.test(line.slice(0, sp))) rest = line.slice(sp + 1);
  const wire = rest.startsWith("→ ") || rest.startsWith("← ") ? rest.slice(2) : undefined;
  if (wire !== undefined) {
    let parsed;
    let ok = true;
    try {
      parsed = JSON.parse(wire);
    } catch {
      ok = false;
    }
    if (entry > 0 && ok && Array.isArray(parsed)) {
      const el = elements(wire)[entry - 1];
      if (el !== undefined) return { json: true, text: el };
    }
    return ok ? { json: true, text: wire } : { json: false, text: wire };
  }
  if (rest.startsWith("stderr ")) return { json: false, text: rest.slice(7) };
  return { json: false, text: line };
}

const POINTERS = [
  ["params", "update", "content", "text"],
  ["params", "update", "title"],
  ["params", "toolCall", "title"],
  ["params", "prompt", "0", "text"],
  ["params", "path"],
  ["params", "command"],
  ["error", "message"],
  ["result", "stopReason"],
  ["result", "outcome", "outcome"],
  ["result", "sessionId"],
  ["payload", "message"],
  ["payload", "stopReason"],
  ["payload", "outcome", "outcome"],
  ["payload", "sessionId"],
  ["message"],
  ["start"],
  ["why"],
];

function pointer(v, path) {
  for (const k of path) {
    if (Array.isArray(v)) {
      if (!/^(0|[1-9][0-9]*)$/.test(k)) return undefined;
      v = v[Number(k)];
    } else if (isObject(v)) v = has(v, k) ? v[k] : undefined;
    else return undefined;
    if (v === undefined) return undefined;
  }
  return v;
}

/** A short text from a message value (see query.rs `preview`). */
export function preview(v) {
  let s;
  if (typeof v === "string") s = v;
  else {
    for (const p of POINTERS) {
      const x = pointer(v, p);
      if (typeof x === "string") {
        s = x;
        break;
      }
    }
  }
  return s === undefined ? null : Array.from(s).slice(0, PREVIEW_CHARS).join("");
}

/** The preview of a line's message (none for a line over 64 KiB). */
export function linePreview(line, entry) {
  if (utf8Length(line) > PREVIEW_LINE) return null;
  const m = messageOf(line, entry);
  if (!m.json) return preview(m.text);
  try {
    return preview(JSON.parse(m.text));
  } catch {
    return null;
  }
}

// ---- the index (index.rs) ------------------------------------------------------------------

function cutName(s) {
  return utf8Prefix(s, MAX_NAME);
}

class Names {
  constructor() {
    this.names = [""];
    this.ids = new Map();
  }
  intern(name) {
    name = cutName(name);
    const id = this.ids.get(name);
    if (id !== undefined) return id;
    if (this.names.length >= NAMES_LIMIT) return NAMES_LIMIT;
    this.names.push(name);
    this.ids.set(name, this.names.length - 1);
    return this.names.length - 1;
  }
  get(id) {
    if (id === 0) return null;
    if (id === NAMES_LIMIT) return "…";
    return this.names[id] ?? null;
  }
  find(name) {
    return this.ids.get(cutName(name));
  }
  all() {
    return this.names.slice(1);
  }
}

class Pending {
  constructor() {
    this.rows = new Map();
    this.order = [];
    this.next = 0;
  }
  insert(key, row) {
    const seq = this.next++;
    this.rows.set(key, [row, seq]);
    this.order.push([seq, key]);
    while (this.rows.size > MAX_PENDING) {
      const [s, k] = this.order.shift();
      if (this.rows.get(k)?.[1] === s) this.rows.delete(k);
    }
    if (this.order.length > 4 * MAX_PENDING) this.order = this.order.filter(([s, k]) => this.rows.get(k)?.[1] === s);
  }
  remove(key) {
    const e = this.rows.get(key);
    if (e === undefined) return undefined;
    this.rows.delete(key);
    return e[0];
  }
}

const keyOf = (from, to, id) => `${from}\u0000${to}\u0000${id}`;

export class TraceModel {
  /** @param {{maxLine?: number, maxRows?: number, file?: string}} [o] */
  constructor(o = {}) {
    this.maxLine = o.maxLine ?? MAX_LINE;
    this.maxRows = o.maxRows ?? 1 << 20;
    this.file = o.file ?? "";
    this.generation = 0;
    this.restarted = null;
    this.clear();
  }

  clear() {
    this.rows = [];
    this.turns = [];
    this.methods = new Names();
    this.subs = new Names();
    this.sessions = new Names();
    this.lanes = [];
    this.bytes = new Map();
    this.text = [];
    this.readTo = 0;
    this.tail = "";
    this.lines = 0;
    this.malformed = 0;
    this.firstMalformed = null;
    this.capped = null;
    this.open = new Map();
    this.turnCount = new Map();
    this.pending = new Pending();
    this.state = { lastArrow: undefined };
  }

  /** Starts again (what was fed is forgotten); `why` is shown. */
  reset(why) {
    this.clear();
    this.generation++;
    this.restarted = why ?? null;
  }

  /** Bytes taken so far (complete lines and the incomplete one). */
  fed() {
    return this.readTo + utf8Length(this.tail);
  }

  /** Text of the file, in any pieces. */
  addText(chunk) {
    let start = 0;
    for (;;) {
      if (this.capped) return;
      const nl = chunk.indexOf("\n", start);
      if (nl < 0) {
        this.tail += chunk.slice(start);
        return;
      }
      const line = this.tail + chunk.slice(start, nl);
      this.tail = "";
      this.addLine(line);
      start = nl + 1;
    }
  }

  /** One complete line (without its line break). `cutFrom`: the line was this many bytes
   *  long and `line` is its start (the extension keeps at most so much of a line). */
  addLine(line, cutFrom) {
    if (this.capped) return;
    const len = cutFrom ?? utf8Length(line);
    let cut = cutFrom !== undefined;
    let text = line;
    if (len > this.maxLine) {
      cut = true;
      text = utf8Prefix(line, Math.min(CUT_PREFIX, this.maxLine));
    }
    const lineNo = this.lines + 1;
    const offset = this.readTo;
    const parsed = [];
    parseLine(text, cut, this.state, parsed);
    if (this.rows.length + parsed.length > this.maxRows) {
      this.capped = { line: lineNo, offset };
      return;
    }
    this.lines = lineNo;
    this.readTo = offset + len + 1;
    const index = this.text.length;
    this.text.push(text);
    for (const p of parsed) this.add(p, index, len, lineNo, offset);
  }

  lane(name) {
    if (name === undefined) return NONE;
    let i = this.lanes.indexOf(name);
    if (i >= 0) return i;
    if (this.lanes.length >= MAX_LANES) return NONE;
    this.lanes.push(cutName(name));
    return this.lanes.length - 1;
  }

  add(p, index, len, lineNo, offset) {
    const n = this.rows.length;
    const kind = p.kind ?? K.malformed;
    if (kind === K.malformed) {
      this.malformed++;
      if (this.firstMalformed === null) this.firstMalformed = lineNo;
    }
    const from = this.lane(p.from);
    const to = this.lane(p.to);
    const t = typeof p.t === "number" && Number.isFinite(p.t) ? p.t : NaN;
    const row = {
      text: index,
      offset,
      t,
      len,
      line: lineNo,
      pair: NONE,
      turn: NONE,
      method: p.method !== undefined ? this.methods.intern(p.method) : 0,
      sub: p.sub !== undefined ? this.subs.intern(p.sub) : 0,
      session: p.session !== undefined ? this.sessions.intern(p.session) : 0,
      entry: p.entry ?? 0,
      from,
      to,
      kind,
      flags: (p.error ? ERROR : 0) | (p.cancel ? CANCEL : 0) | (p.cut ? CUT : 0),
    };
    if (from !== NONE && to !== NONE) {
      const bytes = p.cut && !p.bytes ? len : (p.bytes ?? 0);
      const k = `${from},${to}`;
      const e = this.bytes.get(k) ?? [from, to, 0, 0];
      e[2] += bytes;
      e[3] += 1;
      this.bytes.set(k, e);
    }
    const id = p.id !== undefined ? cutName(p.id) : undefined;
    if (kind === K.request || kind === K.notification) {
      if (row.session !== 0) {
        if (kind === K.request && p.method === "session/prompt") {
          const count = (this.turnCount.get(row.session) ?? 0) + 1;
          this.turnCount.set(row.session, count);
          this.turns.push({ session: row.session, n: count, start: n, end: NONE, stop: 0 });
          this.open.set(row.session, this.turns.length - 1);
        }
        const t = this.open.get(row.session);
        if (t !== undefined) row.turn = t;
      }
      if (kind === K.request && id !== undefined && from !== NONE && to !== NONE) this.pending.insert(keyOf(from, to, id), n);
    } else if (kind === K.response || kind === K.error) {
      if (id !== undefined && from !== NONE && to !== NONE) {
        const req = this.pending.remove(keyOf(to, from, id));
        if (req !== undefined) this.answer(row, req, n);
      }
    }
    this.rows.push(row);
  }

  answer(row, req, n) {
    const request = this.rows[req];
    request.pair = n;
    request.flags |= row.flags & (ERROR | CANCEL);
    row.pair = req;
    if (row.method === 0) row.method = request.method;
    if (row.session === 0) row.session = request.session;
    row.turn = request.turn;
    if (request.turn !== NONE) {
      const turn = this.turns[request.turn];
      if (turn.start === req) {
        turn.end = n;
        turn.stop = row.kind === K.error ? this.subs.intern("error") : row.sub;
        if (this.open.get(request.session) === request.turn) this.open.delete(request.session);
      }
    }
  }

  duration(n) {
    const row = this.rows[n];
    if (!row || row.pair === NONE) return undefined;
    const other = this.rows[row.pair];
    const [req, ans] = row.kind === K.request ? [row, other] : [other, row];
    const d = ans.t - req.t;
    return Number.isFinite(d) ? d : undefined;
  }

  laneOrder() {
    const rank = (name) => {
      if (name === CLIENT) return [0, 0];
      if (name === AGENT) return [3, 0];
      const m = /^proxy:([0-9]+)$/.exec(name);
      return m ? [1, Number(m[1])] : [2, 0];
    };
    return this.lanes
      .map((_, i) => i)
      .sort((a, b) => {
        const [x, y] = [rank(this.lanes[a]), rank(this.lanes[b])];
        return x[0] - y[0] || x[1] - y[1] || a - b;
      });
  }

  // ---- what the viewer asks (query.rs, server.rs) ------------------------------------------

  status() {
    return {
      file: this.file,
      size: this.fed(),
      fed: this.fed(),
      readTo: this.readTo,
      lines: this.lines,
      rows: this.rows.length,
      turns: this.turns.length,
      malformed: this.malformed,
      firstMalformed: this.firstMalformed,
      incomplete: this.tail.length > 0 ? { offset: this.readTo, bytes: utf8Length(this.tail) } : null,
      capped: this.capped ? { ...this.capped, maxRows: this.maxRows } : null,
      generation: this.generation,
      restarted: this.restarted,
      problem: null,
      lanes: this.laneOrder().map((l) => this.lanes[l]),
      methods: this.methods.all().slice(0, MAX_LISTED),
      sessions: this.sessions.all().slice(0, MAX_LISTED),
    };
  }

  /** The turns of `session` (query.rs `turns`). */
  turnsOf(session, max = MAX_TURNS) {
    const id = this.sessions.find(session);
    if (id === undefined) return { turns: [] };
    const list = [];
    this.turns.forEach((t, k) => {
      if (t.session !== id || list.length >= max) return;
      const d = this.duration(t.start);
      list.push({
        turn: k,
        n: t.n,
        stop: this.subs.get(t.stop),
        line: this.rows[t.start].line,
        endLine: t.end === NONE ? null : this.rows[t.end].line,
        ms: d === undefined ? null : d,
      });
    });
    return { turns: list };
  }

  /** @param {Filter} f */
  select(f) {
    let method;
    if (f.method) {
      method = this.methods.find(f.method);
      if (method === undefined) return [];
    }
    let session;
    if (f.session) {
      session = this.sessions.find(f.session);
      if (session === undefined) return [];
    }
    const q = f.q ? asciiLower(f.q) : undefined;
    const items = [];
    let last;
    const found = new Map();
    for (let n = 0; n < this.rows.length; n++) {
      const row = this.rows[n];
      if (method !== undefined && row.method !== method) continue;
      if (session !== undefined && row.session !== session) continue;
      if (f.turn !== undefined && f.turn !== null && row.turn !== f.turn) continue;
      if (f.errors && !(row.flags & ERROR)) continue;
      if (q !== undefined) {
        let hit = found.get(row.text);
        if (hit === undefined) {
          hit = asciiLower(this.text[row.text]).includes(q);
          found.set(row.text, hit);
        }
        if (!hit) continue;
      }
      if (f.minMs !== undefined && f.minMs !== null) {
        const d = this.duration(n);
        if (!(d !== undefined && d >= f.minMs)) continue;
      }
      if (f.group && row.kind === K.notification && last && items.length > 0) {
        if (
          last.kind === K.notification &&
          last.from === row.from &&
          last.to === row.to &&
          last.method === row.method &&
          last.sub === row.sub &&
          last.session === row.session &&
          last.turn === row.turn
        ) {
          items[items.length - 1][1]++;
          last = row;
          continue;
        }
      }
      items.push([n, 1]);
      last = row;
    }
    return items;
  }

  rowJson(n, count, preview) {
    const row = this.rows[n];
    const turn = row.turn !== NONE ? this.turns[row.turn] : undefined;
    const d = this.duration(n);
    return {
      n,
      line: row.line,
      entry: row.entry === 0 ? null : row.entry,
      t: Number.isFinite(row.t) ? row.t : null,
      from: this.laneName(row.from),
      to: this.laneName(row.to),
      kind: KINDS[row.kind],
      method: this.methods.get(row.method),
      sub: this.subs.get(row.sub),
      session: this.sessions.get(row.session),
      turn: turn ? row.turn : null,
      turnN: turn ? turn.n : null,
      error: (row.flags & ERROR) !== 0,
      cancel: (row.flags & CANCEL) !== 0,
      cut: (row.flags & CUT) !== 0,
      pair: row.pair === NONE ? null : row.pair,
      pairLine: row.pair === NONE ? null : this.rows[row.pair].line,
      ms: d === undefined ? null : d,
      count,
      preview,
    };
  }

  laneName(l) {
    return l === NONE ? null : this.lanes[l];
  }

  /** @param {Filter} f */
  page(f, from, count) {
    const items = this.select(f);
    const page = items.slice(from, from + Math.min(count, 500));
    return {
      total: items.length,
      from,
      items: page.map(([n, c]) => {
        const row = this.rows[n];
        const p = row.flags & CUT ? null : linePreview(this.text[row.text], row.entry);
        return this.rowJson(n, c, p);
      }),
      generation: this.generation,
    };
  }

  /** @param {Filter} f */
  locate(f, n) {
    const items = this.select(f);
    let lo = 0;
    let hi = items.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (items[mid][0] <= n) lo = mid + 1;
      else hi = mid;
    }
    const i = lo - 1;
    if (i < 0) return { index: null };
    const [row, count] = items[i];
    return { index: row === n || count > 1 ? i : null };
  }

  message(n) {
    const row = this.rows[n];
    if (!row) throw new Error(`no row ${n}`);
    const line = this.text[row.text];
    let json = false;
    let text = line;
    let truncated = true;
    if (!(row.flags & CUT)) {
      const m = messageOf(line, row.entry);
      json = m.json;
      text = m.text;
      truncated = false;
    }
    if (utf8Length(text) > MAX_DETAIL) {
      text = utf8Prefix(text, MAX_DETAIL);
      json = false;
      truncated = true;
    }
    return {
      row: this.rowJson(n, 1, null),
      pair: row.pair === NONE ? null : this.rowJson(row.pair, 1, null),
      json,
      text,
      truncated,
      lineBytes: row.len,
    };
  }

  summary() {
    const kinds = {};
    let first = NaN;
    let last = NaN;
    const requests = new Map();
    const notifications = new Map();
    const perSession = new Map();
    const slowest = [];
    let unanswered = 0;
    let errors = 0;
    this.rows.forEach((row, n) => {
      const kn = KINDS[row.kind];
      kinds[kn] = (kinds[kn] ?? 0) + 1;
      if (Number.isFinite(row.t)) {
        if (Number.isNaN(first)) first = row.t;
        last = row.t;
      }
      if (row.session !== 0) perSession.set(row.session, (perSession.get(row.session) ?? 0) + 1);
      if (row.flags & ERROR && row.kind !== K.request) errors++;
      if (row.kind === K.request) {
        let m = requests.get(row.method);
        if (!m) requests.set(row.method, (m = { count: 0, answered: 0, errors: 0, cancelled: 0, ms: [] }));
        m.count++;
        if (row.pair === NONE) unanswered++;
        else {
          m.answered++;
          if (row.flags & ERROR) m.errors++;
          if (row.flags & CANCEL) m.cancelled++;
          const d = this.duration(n);
          if (d !== undefined) {
            m.ms.push(d);
            slowest.push([d, n]);
          }
        }
      } else if (row.kind === K.notification) notifications.set(row.method, (notifications.get(row.method) ?? 0) + 1);
    });
    const name = (id) => this.methods.get(id) ?? "";
    const cmp = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
    const reqs = [...requests.entries()];
    for (const [, m] of reqs) m.ms.sort((a, b) => a - b);
    reqs.sort((a, b) => b[1].count - a[1].count || cmp(name(a[0]), name(b[0])));
    const notes = [...notifications.entries()].sort((a, b) => b[1] - a[1] || cmp(name(a[0]), name(b[0])));
    slowest.sort((a, b) => b[0] - a[0] || a[1] - b[1]);
    const stops = {};
    let open = 0;
    const turnsPer = new Map();
    for (const t of this.turns) {
      turnsPer.set(t.session, (turnsPer.get(t.session) ?? 0) + 1);
      if (t.end === NONE) open++;
      else {
        const s = this.subs.get(t.stop) ?? "(none)";
        stops[s] = (stops[s] ?? 0) + 1;
      }
    }
    const order = this.laneOrder();
    const pos = (l) => order.indexOf(l);
    const bytes = [...this.bytes.values()].sort((a, b) => pos(a[0]) - pos(b[0]) || pos(a[1]) - pos(b[1]));
    const quantile = (s, q) => s[Math.min(Math.max(Math.ceil(q * s.length), 1), s.length) - 1];
    return {
      messages: this.rows.length,
      kinds,
      span: Number.isFinite(first) ? { first, last } : null,
      turns: { count: this.turns.length, open, stops },
      sessions: this.sessions.all().map((s, i) => ({ id: s, turns: turnsPer.get(i + 1) ?? 0, messages: perSession.get(i + 1) ?? 0 })),
      requests: reqs.map(([id, m]) => ({
        method: this.methods.get(id),
        count: m.count,
        answered: m.answered,
        errors: m.errors,
        cancelled: m.cancelled,
        p50: m.ms.length ? quantile(m.ms, 0.5) : null,
        p99: m.ms.length ? quantile(m.ms, 0.99) : null,
        max: m.ms.length ? m.ms[m.ms.length - 1] : null,
      })),
      notifications: notes.map(([id, c]) => ({ method: this.methods.get(id), count: c })),
      bytes: bytes.map(([f, t, b, c]) => ({ from: this.laneName(f), to: this.laneName(t), bytes: b, messages: c })),
      slowest: slowest.slice(0, 10).map(([ms, n]) => {
        const row = this.rows[n];
        return { n, line: row.line, method: this.methods.get(row.method), ms, from: this.laneName(row.from), to: this.laneName(row.to) };
      }),
      problems: {
        errors,
        invalid: kinds.invalid ?? 0,
        oversize: kinds.oversize ?? 0,
        malformed: this.malformed,
        unanswered,
      },
    };
  }
}

/** `s` with A–Z lowered (the search ignores ASCII case only, as the server's). */
export function asciiLower(s) {
  return s.replace(/[A-Z]+/g, (m) => m.toLowerCase());
}

/** The viewer's source over a model: the same answers as the server's API, as promises. */
export function modelSource(model) {
  return {
    status: async () => model.status(),
    summary: async () => model.summary(),
    rows: async (f, from, count) => model.page(f, from, count),
    locate: async (f, n) => model.locate(f, n),
    turns: async (session) => model.turnsOf(session),
    message: async (n) => model.message(n),
  };
}
