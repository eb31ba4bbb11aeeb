// JSON shown folded: long strings and large objects and arrays open on demand, every string
// escaped (viewer/text.js), a text block cut at TEXT_SHOWN characters with a button for the rest.

import { count, el, quoted, visibleText } from "./text.js";

const FOLD_CHARS = 400;
const FOLD_CHILDREN = 200;
const TEXT_SHOWN = 64 << 10;

export function textBlock(text) {
  const pre = el("pre", "tv-text");
  if (text.length <= TEXT_SHOWN) {
    pre.textContent = visibleText(text);
    return pre;
  }
  pre.textContent = visibleText(text.slice(0, TEXT_SHOWN));
  const wrap = el("div");
  const more = el("button", "tv-more", `Show the other ${count(text.length - TEXT_SHOWN)} characters`);
  more.type = "button";
  more.addEventListener("click", () => {
    pre.textContent = visibleText(text);
    more.remove();
  });
  wrap.append(pre, more);
  return wrap;
}

function keyEl(key) {
  if (key === undefined) return [];
  return [el("span", "tv-key", typeof key === "number" ? `${key}` : quoted(key)), document.createTextNode(": ")];
}

function leaf(key, v) {
  const d = el("div", "tv-leaf");
  d.append(...keyEl(key));
  if (typeof v === "string") {
    if (v.length <= FOLD_CHARS) d.append(el("span", "tv-str", quoted(v)));
    else {
      const s = el("span", "tv-str", `${quoted(v.slice(0, FOLD_CHARS))}…`);
      const more = el("button", "tv-link tv-more", ` ${count(v.length - FOLD_CHARS)} more characters`);
      more.type = "button";
      more.addEventListener("click", () => {
        s.textContent = quoted(v);
        more.remove();
      });
      d.append(s, more);
    }
  } else d.append(el("span", v === null ? "tv-null" : typeof v === "number" ? "tv-num" : "tv-bool", JSON.stringify(v)));
  return d;
}

/** A folding tree of `value`. Nodes start open while they are small (50 entries at most), not
 *  deeper than 5 levels and within `budget` (entries built open in the whole tree); the others
 *  are built when opened, FOLD_CHILDREN children at a time. */
export function jsonTree(value, key, depth, budget = { left: 1500 }) {
  if (value === null || typeof value !== "object") return leaf(key, value);
  const isArray = Array.isArray(value);
  const keys = isArray ? undefined : Object.keys(value);
  const size = isArray ? value.length : keys.length;
  const node = el("details");
  const summary = el("summary");
  summary.append(...keyEl(key), el("span", "tv-sub", isArray ? `[${count(size)} items]` : `{${count(size)} keys}`));
  node.append(summary);
  let shown = 0;
  const more = el("button", "tv-link tv-more");
  more.type = "button";
  const build = () => {
    const end = Math.min(size, shown + FOLD_CHILDREN);
    const frag = document.createDocumentFragment();
    for (let i = shown; i < end; i++)
      frag.append(isArray ? jsonTree(value[i], i, depth + 1, budget) : jsonTree(value[keys[i]], keys[i], depth + 1, budget));
    shown = end;
    more.remove();
    node.append(frag);
    if (shown < size) {
      more.textContent = `show ${count(Math.min(FOLD_CHILDREN, size - shown))} more of ${count(size - shown)}`;
      node.append(more);
    }
  };
  more.addEventListener("click", build);
  if (depth < 6 && size <= 50 && budget.left >= size) {
    budget.left -= size;
    node.open = true;
    build();
  } else
    node.addEventListener("toggle", () => {
      if (node.open && shown === 0) build();
    });
  return node;
}
