// A row's message and its preview (the server's detail.rs).

import { message, rawMember } from "./line.js";
import { elements } from "./scan.js";
import { PREVIEW_CHARS, PREVIEW_LINE, has, isObject, opt, utf8Length } from "./text.js";

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
  ["params", "update", "content", "0", "text"],
  ["params", "update", "title"],
  ["params", "toolCall", "title"],
  ["params", "title"],
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
