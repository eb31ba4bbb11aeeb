// The start of a JSON object, scanned without parsing it whole (the server's scan.rs).

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
export function elements(s) {
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

export function rawString(raw) {
  if (raw === undefined || raw[0] !== '"') return undefined;
  try {
    return JSON.parse(raw);
  } catch {
    return undefined;
  }
}
