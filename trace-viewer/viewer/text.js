// The viewer's text rules: what the trace's text may be shown as (hidden characters escaped),
// elements built with textContent only, numbers, sizes and durations in words.

const HIDDEN =
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u061c\u115f\u1160\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\u3164\ufeff\ufff9-\ufffb]/g;
const hex = (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;

/** Text as it may be shown: ESC as ␛, other controls, bidi and invisible characters as \uXXXX
 *  (line breaks and tabs kept). */
export function visibleText(s) {
  return String(s).replace(HIDDEN, (c) => (c === "\u001b" ? "␛" : hex(c)));
}

/** One line of text: visibleText, with line breaks as ⏎ and tabs as spaces. */
export function visibleLine(s) {
  return visibleText(
    String(s)
      .replace(/\r\n|\n|\r/g, "⏎")
      .replace(/\t/g, " "),
  );
}

/** A JSON string literal with every hidden character escaped. */
export function quoted(s) {
  return JSON.stringify(s).replace(HIDDEN, hex);
}

export function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
}

export function formatMs(ms) {
  if (ms === null || ms === undefined) return "";
  if (ms < 1) return `${ms.toFixed(2)} ms`;
  if (ms < 100) return `${ms.toFixed(1)} ms`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(2)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export function formatBytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1 << 20) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1 << 30) return `${(n / (1 << 20)).toFixed(1)} MiB`;
  return `${(n / (1 << 30)).toFixed(2)} GiB`;
}

export const count = (n) => Number(n).toLocaleString("en-US");
