// Architecture Invariant: the protocol connection and the bridges never import `vscode`
// (UI reaches them through PermissionPrompter, DocumentHost and TerminalDisplayFactory).
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

const root = path.resolve(__dirname, "..", "..");

test("src/protocol, src/bridges, src/webview and src/agents.ts do not import vscode", () => {
  const files = ["src/protocol", "src/bridges", "src/webview"]
    .flatMap((d) => fs.readdirSync(path.join(root, d)).map((f) => path.join(d, f)))
    .concat(["src/agents.ts"])
    .filter((f) => f.endsWith(".ts"));
  assert.ok(files.length >= 12, `found ${files.length} files`);
  const offenders = files.filter((f) =>
    /(from\s+["']vscode["']|require\(\s*["']vscode["']\s*\))/.test(fs.readFileSync(path.join(root, f), "utf8")),
  );
  assert.deepEqual(offenders, []);
});

/** The relative imports (`import`, `import type`, `export … from`) of every .ts file under `dir`. */
function importGraph(dir: string): Map<string, string[]> {
  const files = (fs.readdirSync(dir, { recursive: true }) as string[]).filter((f) => f.endsWith(".ts")).map((f) => path.join(dir, f));
  const graph = new Map<string, string[]>();
  for (const f of files) {
    const deps: string[] = [];
    for (const m of fs.readFileSync(f, "utf8").matchAll(/^\s*(?:import|export)\b[^;]*?\bfrom\s+["'](\.[^"']+)["']/gms)) {
      const base = path.resolve(path.dirname(f), m[1]!);
      // A .js file outside src (the shared trace viewer, ../trace-viewer/) is a leaf.
      const hit = [`${base}.ts`, path.join(base, "index.ts"), base].find((c) => fs.existsSync(c) && fs.statSync(c).isFile());
      assert.ok(hit, `${path.relative(root, f)}: cannot resolve ${m[1]}`);
      deps.push(hit);
    }
    graph.set(f, deps);
  }
  return graph;
}

/** Every import circle of `graph`, each as the files around it. */
function circles(graph: Map<string, string[]>): string[] {
  const state = new Map<string, "open" | "done">();
  const found: string[] = [];
  const visit = (f: string, stack: string[]) => {
    state.set(f, "open");
    stack.push(f);
    for (const d of graph.get(f) ?? []) {
      if (state.get(d) === "open") found.push([...stack.slice(stack.indexOf(d)), d].map((x) => path.relative(root, x)).join(" -> "));
      else if (!state.has(d)) visit(d, stack);
    }
    stack.pop();
    state.set(f, "done");
  };
  for (const f of graph.keys()) if (!state.has(f)) visit(f, []);
  return found;
}

// Architecture Invariant: no import circles in src/ (type-only imports count too: a part that
// needs its caller takes an interface, e.g. host/lifecycle.ts's SessionSide).
test("src has no import circles", () => {
  const graph = importGraph(path.join(root, "src"));
  assert.ok(graph.size >= 45, `found ${graph.size} files`);
  assert.deepEqual(circles(graph), []);
});

test("the import-circle check finds a circle (through a folder, type-only, over several lines)", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "acp-circles-"));
  try {
    fs.mkdirSync(path.join(dir, "x"));
    fs.writeFileSync(path.join(dir, "a.ts"), 'import type { B } from "./x/b";\nexport type A = B;\n');
    fs.writeFileSync(path.join(dir, "x", "b.ts"), 'import type {\n  A,\n} from "../a";\nexport type B = A;\n');
    fs.writeFileSync(path.join(dir, "c.ts"), 'import { a } from "./a";\n');
    assert.equal(circles(importGraph(dir)).length, 1);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
