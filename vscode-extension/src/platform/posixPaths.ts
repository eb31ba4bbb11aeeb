// POSIX path arithmetic for the browser host (Paths, as `node:path`'s posix half does it), with
// no Node module: the workspace's paths there are the paths of `vscode-remote:`/`vscode-vfs:`
// URIs, always `/`-separated. There is no working directory: `resolve` starts from `/`.

import type { Paths } from "./paths";

function normalizeParts(parts: string[], absolute: boolean): string[] {
  const out: string[] = [];
  for (const p of parts) {
    if (!p || p === ".") continue;
    if (p === "..") {
      if (out.length > 0 && out[out.length - 1] !== "..") out.pop();
      else if (!absolute) out.push("..");
      continue;
    }
    out.push(p);
  }
  return out;
}

function normalize(p: string): string {
  if (p === "") return ".";
  const absolute = p.startsWith("/");
  const trailing = p.endsWith("/");
  const body = normalizeParts(p.split("/"), absolute).join("/");
  const joined = (absolute ? "/" : "") + body;
  if (!body) return absolute ? "/" : trailing ? "./" : ".";
  return trailing ? `${joined}/` : joined;
}

function resolve(...parts: string[]): string {
  let acc = "";
  for (let i = parts.length - 1; i >= 0 && !acc.startsWith("/"); i--) {
    const p = parts[i];
    if (p) acc = acc ? `${p}/${acc}` : p;
  }
  const n = normalize(`/${acc}`);
  return n.length > 1 && n.endsWith("/") ? n.slice(0, -1) : n;
}

function dirname(p: string): string {
  if (!p) return ".";
  const trimmed = p.length > 1 ? p.replace(/\/+$/, "") : p;
  const i = trimmed.lastIndexOf("/");
  if (i < 0) return ".";
  if (i === 0) return "/";
  return trimmed.slice(0, i);
}

function basename(p: string, ext?: string): string {
  const trimmed = p.length > 1 ? p.replace(/\/+$/, "") : p;
  let b = trimmed.slice(trimmed.lastIndexOf("/") + 1);
  if (ext && b !== ext && b.endsWith(ext)) b = b.slice(0, -ext.length);
  return b;
}

function relative(from: string, to: string): string {
  const f = resolve(from).split("/").filter(Boolean);
  const t = resolve(to).split("/").filter(Boolean);
  let i = 0;
  while (i < f.length && i < t.length && f[i] === t[i]) i++;
  return [...f.slice(i).map(() => ".."), ...t.slice(i)].join("/");
}

export const posixPaths: Paths = {
  sep: "/",
  delimiter: ":",
  join: (...parts) => normalize(parts.filter((p) => p !== "").join("/") || "."),
  resolve,
  relative,
  dirname,
  basename,
  isAbsolute: (p) => p.startsWith("/"),
  normalize,
};
