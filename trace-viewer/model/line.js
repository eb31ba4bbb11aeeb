// One trace line: its lanes, its JSON-RPC message analysed, cut lines (the server's line.rs).

import { elements, members, rawString } from "./scan.js";
import { AGENT, CLIENT, K, has, isObject, opt, str, utf8Length } from "./text.js";

/** A conductor component's lane name. */
export function laneName(c) {
  if (c === "Client" || c === "client") return CLIENT;
  if (c === "Agent" || c === "agent") return AGENT;
  const m = /^Proxy\(([0-9]+)\)$/.exec(c);
  return m ? `proxy:${m[1]}` : c;
}

export function lanes(send) {
  return send ? { from: CLIENT, to: AGENT } : { from: AGENT, to: CLIENT };
}

export const malformed = () => ({ kind: K.malformed, error: true });

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

/** v1's and v2's `session/cancel`, `$/cancel_request`, v2's `tool_call/cancel` and `terminal/cancel`. */
export function isCancelMethod(method) {
  return method === "session/cancel" || method === "$/cancel_request" || method === "tool_call/cancel" || method === "terminal/cancel";
}

/** A `session/update`'s sub-kind; v2's `state_update` with its state and stop reason (line.rs `v2_update`). */
function v2Update(p, kind, update) {
  p.v2Sign = kind === "state_update" || kind === "replay_complete";
  if (kind !== "state_update") {
    p.sub = kind;
    return;
  }
  const state = str(update.state);
  const reason = str(update.stopReason);
  p.idle = state === "idle";
  if (state !== undefined && reason !== undefined && p.idle) p.sub = `state_update: ${state} (${reason})`;
  else if (state !== undefined) p.sub = `state_update: ${state}`;
  else p.sub = kind;
  if (p.idle) {
    p.cancel = reason === "cancelled";
    p.stop = reason;
  }
}

function analyse(method, id, params, result, error, hasError, base) {
  const p = base;
  p.id = id;
  if (method !== undefined) {
    p.kind = id !== undefined ? K.request : K.notification;
    if (params !== undefined && isObject(params)) {
      p.session = str(params.sessionId);
      if (method === "session/update" && isObject(params.update)) {
        const kind = str(params.update.sessionUpdate);
        if (kind !== undefined) v2Update(p, kind, params.update);
      }
    }
    p.cancel = !!p.cancel || isCancelMethod(method);
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
      if (Number.isInteger(result.protocolVersion)) p.version = result.protocolVersion;
      p.stop = stop;
      p.sub = stop ?? outcome;
      p.cancel = p.sub === "cancelled";
    }
  }
  return p;
}

/** A JSON-RPC message (its text); `kind` stays undefined when it is not an object. */
export function message(text, base) {
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
export function rawMember(text, key) {
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
  p.cancel = p.method !== undefined && isCancelMethod(p.method);
  p.cut = true;
  return p;
}
