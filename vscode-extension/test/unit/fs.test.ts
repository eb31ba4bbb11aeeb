import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { FsBridge, isInside, sliceLines, type DocumentHost } from "../../src/bridges/fs";
import { RequestError } from "../../src/protocol/types";

class FakeHost implements DocumentHost {
  open = new Map<string, string>();
  writes: Array<[string, string]> = [];
  constructor(public folders: string[]) {}
  openDocumentText(p: string) {
    return this.open.get(p);
  }
  async applyWrite(p: string, content: string) {
    this.writes.push([p, content]);
    fs.writeFileSync(p, content);
  }
  workspaceFolders() {
    return this.folders;
  }
}

const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "acp-fs-")));
const ws = path.join(tmp, "ws");
const outside = path.join(tmp, "outside");
fs.mkdirSync(ws);
fs.mkdirSync(outside);

const isCode = (code: number) => (e: unknown) => e instanceof RequestError && e.code === code;

test("sliceLines: 1-based line and limit, line endings kept", () => {
  const t = "a\nb\r\nc\nd";
  assert.equal(sliceLines(t), t);
  assert.equal(sliceLines(t, 1, 1), "a\n");
  assert.equal(sliceLines(t, 2, 2), "b\r\nc\n");
  assert.equal(sliceLines(t, 3), "c\nd");
  assert.equal(sliceLines(t, undefined, 2), "a\nb\r\n");
  assert.equal(sliceLines(t, 4, 10), "d");
  assert.equal(sliceLines(t, 5, 10), "");
  assert.equal(sliceLines(t, 2, 0), "");
  assert.equal(sliceLines(t, 0, 1), "a\n", "line 0 reads from the start");
  assert.equal(sliceLines("", 1, 1), "");
});

test("isInside", () => {
  assert.equal(isInside("/w", "/w/a/b"), true);
  assert.equal(isInside("/w", "/w"), true);
  assert.equal(isInside("/w", "/wx/a"), false);
  assert.equal(isInside("/w", "/w/../x"), false);
});

test("read prefers the open buffer (unsaved edits) over the disk", async () => {
  const f = path.join(ws, "open.txt");
  fs.writeFileSync(f, "disk 1\ndisk 2\n");
  const host = new FakeHost([ws]);
  const b = new FsBridge(host, () => ({ allowWritesOutsideWorkspace: false }));
  assert.deepEqual(await b.readTextFile({ sessionId: "s", path: f }), { content: "disk 1\ndisk 2\n" });
  host.open.set(f, "buffer 1\nbuffer 2\nbuffer 3");
  assert.deepEqual(await b.readTextFile({ sessionId: "s", path: f, line: 2, limit: 1 }), { content: "buffer 2\n" });
});

test("read errors: missing file is ResourceNotFound, relative path and bad line are InvalidParams", async () => {
  const b = new FsBridge(new FakeHost([ws]), () => ({ allowWritesOutsideWorkspace: false }));
  await assert.rejects(b.readTextFile({ sessionId: "s", path: path.join(ws, "nope.txt") }), isCode(-32002));
  await assert.rejects(b.readTextFile({ sessionId: "s", path: "rel.txt" }), isCode(-32602));
  await assert.rejects(b.readTextFile({ sessionId: "s", path: path.join(ws, "x"), line: -1 }), isCode(-32602));
  await assert.rejects(b.readTextFile({ sessionId: "s", path: path.join(ws, "x"), limit: 1.5 }), isCode(-32602));
});

test("writes inside the workspace go through the host; outside are refused", async () => {
  const host = new FakeHost([ws]);
  const b = new FsBridge(host, () => ({ allowWritesOutsideWorkspace: false }));
  const inside = path.join(ws, "sub", "new.txt");
  fs.mkdirSync(path.dirname(inside));
  assert.deepEqual(await b.writeTextFile({ sessionId: "s", path: inside, content: "hi" }), {});
  assert.deepEqual(host.writes, [[inside, "hi"]]);
  await assert.rejects(b.writeTextFile({ sessionId: "s", path: path.join(outside, "x.txt"), content: "no" }), /outside the workspace/);
  await assert.rejects(b.writeTextFile({ sessionId: "s", path: path.join(ws, "..", "outside", "y.txt"), content: "no" }), /outside/);
  await assert.rejects(b.writeTextFile({ sessionId: "s", path: inside, content: 42 }), isCode(-32602));
  assert.equal(host.writes.length, 1);
  assert.equal(fs.existsSync(path.join(outside, "x.txt")), false);
});

test("a symlink inside the workspace cannot be used to write outside it", async () => {
  const link = path.join(ws, "escape");
  fs.symlinkSync(outside, link);
  const host = new FakeHost([ws]);
  const b = new FsBridge(host, () => ({ allowWritesOutsideWorkspace: false }));
  await assert.rejects(b.writeTextFile({ sessionId: "s", path: path.join(link, "evil.txt"), content: "x" }), /outside/);
  assert.equal(host.writes.length, 0);
});

test("no workspace folder: writes refused unless allowed; the setting allows outside writes", async () => {
  const host = new FakeHost([]);
  let allow = false;
  const b = new FsBridge(host, () => ({ allowWritesOutsideWorkspace: allow }));
  const f = path.join(outside, "allowed.txt");
  await assert.rejects(b.writeTextFile({ sessionId: "s", path: f, content: "x" }), /no workspace folder/);
  allow = true;
  await b.writeTextFile({ sessionId: "s", path: f, content: "x" });
  assert.equal(fs.readFileSync(f, "utf8"), "x");
});

test("a host failure becomes an InternalError answer", async () => {
  const host = new FakeHost([ws]);
  host.applyWrite = async () => {
    throw new Error("editor said no");
  };
  const b = new FsBridge(host, () => ({ allowWritesOutsideWorkspace: false }));
  await assert.rejects(b.writeTextFile({ sessionId: "s", path: path.join(ws, "z.txt"), content: "x" }), (e: unknown) =>
    e instanceof RequestError && e.code === -32603 && /editor said no/.test(e.message),
  );
});
