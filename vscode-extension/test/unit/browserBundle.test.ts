// The browser bundle's checks (scripts/browserBundleChecks.mjs, run by esbuild.mjs): a Node
// import fails the build naming its importer; Node globals are found; the real bundle has none.

import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { pathToFileURL } from "node:url";

const ext = path.resolve(__dirname, "..", "..");
type Checks = {
  noNodeBuiltins(root: string): unknown;
  nodeGlobalsIn(text: string): string[];
};
// Loaded at run time (not bundled): the same module esbuild.mjs uses.
const checksPath = path.join(ext, "scripts", "browserBundleChecks.mjs");
const load = (): Promise<Checks> => import(pathToFileURL(checksPath).href) as Promise<Checks>;

test("browser bundle: an import of a Node module, with or without node:, fails the build naming the importer", async () => {
  const { noNodeBuiltins } = await load();
  const esbuild = (await import(pathToFileURL(require.resolve("esbuild", { paths: [ext] })).href)) as typeof import("esbuild");
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "acp-browser-bundle-"));
  for (const [name, spec] of [
    ["prefixed.ts", "node:fs"],
    ["bare.ts", "child_process"],
    ["sub.ts", "fs/promises"],
  ] as const) {
    fs.writeFileSync(path.join(dir, "helper.ts"), `import * as m from "${spec}";\nexport const x = m;\n`);
    fs.writeFileSync(path.join(dir, name), `import { x } from "./helper";\nconsole.log(x);\n`);
    await assert.rejects(
      esbuild.build({
        entryPoints: [path.join(dir, name)],
        bundle: true,
        write: false,
        platform: "browser",
        logLevel: "silent",
        plugins: [noNodeBuiltins(dir) as import("esbuild").Plugin],
      }),
      (e: Error) => e.message.includes(`must not import the Node module "${spec}" (imported by helper.ts)`),
    );
  }
  // A browser-safe module builds.
  fs.writeFileSync(path.join(dir, "fine.ts"), `export const y = new TextEncoder().encode("x").length;\n`);
  const ok = await esbuild.build({
    entryPoints: [path.join(dir, "fine.ts")],
    bundle: true,
    write: false,
    platform: "browser",
    logLevel: "silent",
    plugins: [noNodeBuiltins(dir) as import("esbuild").Plugin],
  });
  assert.equal(ok.errors.length, 0);
  fs.rmSync(dir, { recursive: true, force: true });
});

test("browser bundle: Node globals are found in code, not in comments; the built bundle has none", async () => {
  const { nodeGlobalsIn } = await load();
  const check = (text: string, expected: number) => assert.equal(nodeGlobalsIn(text).length, expected, text);
  check("const a = Buffer.from(x);", 1);
  check("if (process.platform === 'win32') {}", 1);
  check("const e = process.env;", 1);
  check("const p = require('fs');", 1);
  check("f(__dirname + '/x');", 1);
  check('const v = require("vscode");', 0);
  check("  // process.env is not read here", 0);
  check("   * Buffer.concat in a doc comment", 0);
  check("const s = 'the process exited';", 0);
  check("obj.process.env", 0);
  const bundle = path.join(ext, "dist", "extension.browser.js");
  if (fs.existsSync(bundle)) assert.deepEqual(nodeGlobalsIn(fs.readFileSync(bundle, "utf8")), []);
});
