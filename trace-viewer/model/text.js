// The model's limits and row flags, and its text helpers (UTF-8 lengths and prefixes, JSON value tests).

export const NONE = -1;
export const MAX_LINE = 8 << 20;
export const CUT_PREFIX = 64 << 10;
export const MAX_NAME = 200;
export const MAX_LANES = 32;
export const MAX_PENDING = 65536;
export const NAMES_LIMIT = 65535;
export const PREVIEW_CHARS = 160;
export const PREVIEW_LINE = 64 << 10;
export const MAX_DETAIL = 1 << 20;
export const MAX_LISTED = 1000;
export const MAX_TURNS = 10_000;

export const ERROR = 1;
export const CANCEL = 2;
export const CUT = 4;

export const KINDS = ["request", "notification", "response", "error", "invalid", "oversize", "log", "malformed"];
export const K = Object.fromEntries(KINDS.map((k, i) => [k, i]));

export const CLIENT = "client";
export const AGENT = "agent";

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

export const isObject = (v) => typeof v === "object" && v !== null && !Array.isArray(v);
export const str = (v) => (typeof v === "string" ? v : undefined);
export const has = (o, k) => Object.prototype.hasOwnProperty.call(o, k);
/** A member's value, `undefined` when absent or null (serde's Option). */
export const opt = (o, k) => (has(o, k) && o[k] !== null ? o[k] : undefined);
