#!/usr/bin/env node
// Adds to package-lock.json the platform packages that `npm install` left out because the
// registry it used does not serve them (this machine's mirror has no darwin/windows builds of
// opencode-ai or @teddyzhu/clipboard), so that `npm ci` accepts the lock ("Missing: X from lock
// file" otherwise). Each added entry is the optional dependency's name and exact version, with
// the os/cpu/libc its name says, and no integrity (npm fetches it by name@version, only on that
// platform; elsewhere it is skipped). Run after `npm install` here; prints what it added.
//
//   node complete-lock.mjs
import fs from "node:fs";

const file = new URL("./package-lock.json", import.meta.url);
const lock = JSON.parse(fs.readFileSync(file, "utf8"));
const packages = lock.packages;

/** Whether `dep` resolves from the package at `path` (nested first, then up to the root). */
function resolves(path, dep) {
  let base = path;
  for (;;) {
    if (packages[(base ? `${base}/` : "") + `node_modules/${dep}`]) return true;
    if (!base) return false;
    const i = base.lastIndexOf("/node_modules/");
    base = i >= 0 ? base.slice(0, i) : "";
  }
}

const added = [];
for (const [path, meta] of Object.entries(packages)) {
  for (const [dep, version] of Object.entries(meta.optionalDependencies ?? {})) {
    if (resolves(path, dep)) continue;
    const name = dep.split("/").pop();
    const os = /darwin/.test(name) ? "darwin"
      : /win(32|dows)/.test(name) ? "win32"
      : /linux/.test(name) ? "linux" : null;
    const cpu = /arm64/.test(name) ? "arm64" : /x64/.test(name) ? "x64" : null;
    if (!os || !cpu || !/^\d+\.\d+\.\d+$/.test(version)) {
      console.error(`complete-lock: cannot tell the platform or exact version of ${dep}@${version}`);
      process.exit(1);
    }
    const entry = { version, cpu: [cpu], optional: true, os: [os] };
    if (/musl/.test(name)) entry.libc = ["musl"];
    else if (/-gnu$/.test(name)) entry.libc = ["glibc"];
    packages[`node_modules/${dep}`] = entry;
    added.push(`${dep}@${version}`);
  }
}
const sorted = Object.entries(packages).sort(([a], [b]) =>
  a === "" ? -1 : b === "" ? 1 : a.localeCompare(b));
lock.packages = Object.fromEntries(sorted);
fs.writeFileSync(file, JSON.stringify(lock, null, 2) + "\n");
console.log(added.length ? `added: ${added.join(" ")}` : "nothing missing");
