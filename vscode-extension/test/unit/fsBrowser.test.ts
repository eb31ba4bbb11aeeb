// The fs bridge in the browser (platform/browserBridgeFiles.ts): the same FsBridge and rules as
// on Node over the workspace's file system provider, here an in-memory fake of
// `vscode.workspace.fs` with `vscode-remote:` folder URIs: reads (open buffer first, the
// provider's errors as the bridge's), confinement to the folders, a path through a symbolic link
// refused (the provider cannot say where it points), the sensitive-write question.
import { test } from "node:test";
import assert from "node:assert/strict";
import type * as vscode from "vscode";
import {
  FsBridge,
  MAX_READ_BYTES,
  type DocumentHost,
  type SensitiveWrite,
  type WriteApprover,
  type WriteDecision,
} from "../../src/bridges/fs";
import { browserBridgeFiles, type WorkspaceFs } from "../../src/platform/browserBridgeFiles";
import { nullLogger } from "../../src/protocol/log";
import { RequestError } from "../../src/protocol/errors";
import { testPolicy, tryEngine } from "./engine-helpers";

const { skip } = tryEngine();

/** A `vscode-remote://box` URI (what code-server's browser host names a workspace file by). */
function uri(path: string): vscode.Uri {
  const u = {
    scheme: "vscode-remote",
    authority: "box",
    path,
    with: (c: { path: string }) => uri(c.path),
    toString: () => `vscode-remote://box${path}`,
  };
  return u as unknown as vscode.Uri;
}

/** vscode.FileSystemError as the provider throws it (its `code`). */
const fsError = (code: string) => Object.assign(new Error(`${code} (fake)`), { code });

/** In-memory files: path → text (a file), "dir", or a link (FileType.File | SymbolicLink). */
class FakeFs implements WorkspaceFs {
  readonly entries = new Map<string, string | { dir: true } | { link: true }>();
  stats = 0;
  async stat(u: vscode.Uri) {
    this.stats++;
    const e = this.entries.get(u.path);
    if (e === undefined) throw fsError("FileNotFound");
    if (typeof e === "string") return { type: 1, size: new TextEncoder().encode(e).length };
    return "dir" in e ? { type: 2, size: 0 } : { type: 1 | 64, size: 0 };
  }
  async readFile(u: vscode.Uri) {
    const e = this.entries.get(u.path);
    if (typeof e !== "string") throw fsError(e === undefined ? "FileNotFound" : "FileIsADirectory");
    return new TextEncoder().encode(e);
  }
}

class FakeHost implements DocumentHost {
  open = new Map<string, string>();
  writes: Array<[string, string]> = [];
  constructor(private readonly fs: FakeFs) {}
  openDocumentText(p: string) {
    return this.open.get(p);
  }
  async applyWrite(p: string, content: string) {
    this.writes.push([p, content]);
    this.fs.entries.set(p, content);
  }
  workspaceFolders() {
    return ["/home/u/ws"];
  }
}

class ScriptedApprover implements WriteApprover {
  asked: SensitiveWrite[] = [];
  constructor(private readonly answers: WriteDecision[]) {}
  async ask(w: SensitiveWrite): Promise<WriteDecision> {
    this.asked.push(w);
    return this.answers.shift() ?? "refuse";
  }
  async review(): Promise<void> {}
}

const reason = (r: string) => (e: unknown) => e instanceof RequestError && (e.data as { reason?: string } | undefined)?.reason === r;

function setup(o: { allowOutside?: boolean; answers?: WriteDecision[] } = {}) {
  const fs = new FakeFs();
  fs.entries.set("/home/u/ws", { dir: true });
  fs.entries.set("/home/u/ws/src", { dir: true });
  fs.entries.set("/home/u/ws/src/a.txt", "line 1\nline 2\n");
  fs.entries.set("/home/u/ws/escape", { link: true });
  fs.entries.set("/home/u/ws/repo", { dir: true });
  fs.entries.set("/home/u/ws/repo/.git", { dir: true });
  fs.entries.set("/home/u/ws/repo/.git/config", "[core]\n");
  fs.entries.set("/home/u/outside.txt", "secret");
  const files = browserBridgeFiles(fs, () => [uri("/home/u/ws")]);
  const host = new FakeHost(fs);
  const approver = new ScriptedApprover(o.answers ?? []);
  const bridge = new FsBridge(files, host, () => ({ allowWritesOutsideWorkspace: !!o.allowOutside }), testPolicy(), approver, nullLogger);
  return { fs, files, host, approver, bridge };
}

test("browser fs: a path maps to the URI of the workspace folder holding it, none outside", () => {
  const { files } = setup();
  assert.equal(files.uriOf("/home/u/ws/src/a.txt")?.toString(), "vscode-remote://box/home/u/ws/src/a.txt");
  assert.equal(files.uriOf("/home/u/ws/src/../src/a.txt")?.toString(), "vscode-remote://box/home/u/ws/src/a.txt");
  assert.equal(files.uriOf("/home/u/ws")?.toString(), "vscode-remote://box/home/u/ws", "the folder itself");
  assert.equal(files.uriOf("/home/u/outside.txt"), undefined);
  assert.equal(files.uriOf("/home/u/ws2/a.txt"), undefined, "a sibling folder's prefix is not inside");
  assert.deepEqual(files.folderPaths(), ["/home/u/ws"]);
});

test("browser fs: reads go to the open buffer first, else the provider; its errors are the bridge's", { skip }, async () => {
  const { bridge, host } = setup();
  assert.deepEqual(await bridge.readTextFile({ sessionId: "s", path: "/home/u/ws/src/a.txt", line: 2 }), { content: "line 2\n" });
  host.open.set("/home/u/ws/src/a.txt", "unsaved\n");
  assert.deepEqual(await bridge.readTextFile({ sessionId: "s", path: "/home/u/ws/src/a.txt" }), { content: "unsaved\n" });
  await assert.rejects(bridge.readTextFile({ sessionId: "s", path: "/home/u/ws/src/nope.txt" }), reason("not_found"));
  await assert.rejects(bridge.readTextFile({ sessionId: "s", path: "/home/u/ws/src" }), reason("is_a_directory"));
  await assert.rejects(bridge.readTextFile({ sessionId: "s", path: "src/a.txt" }), reason("relative_path"));
});

test("browser fs: confined to the workspace folders; outside is not reachable even when allowed", { skip }, async () => {
  const { bridge, host } = setup();
  await assert.rejects(bridge.readTextFile({ sessionId: "s", path: "/home/u/outside.txt" }), reason("outside_roots"));
  await assert.rejects(bridge.readTextFile({ sessionId: "s", path: "/home/u/ws/../outside.txt" }), reason("outside_roots"));
  await assert.rejects(bridge.writeTextFile({ sessionId: "s", path: "/home/u/outside.txt", content: "x" }), reason("outside_roots"));
  const allowed = setup({ allowOutside: true });
  await assert.rejects(allowed.bridge.readTextFile({ sessionId: "s", path: "/home/u/outside.txt" }), /outside the workspace folders/);
  assert.equal(host.writes.length + allowed.host.writes.length, 0);
});

test("browser fs: a path through a symbolic link is refused (where it points cannot be known)", { skip }, async () => {
  const { bridge, host } = setup();
  for (const path of ["/home/u/ws/escape", "/home/u/ws/escape/new.txt", "/home/u/ws/escape/deeper/x.txt"]) {
    await assert.rejects(bridge.readTextFile({ sessionId: "s", path }), reason("invalid_path"), path);
    await assert.rejects(
      bridge.writeTextFile({ sessionId: "s", path, content: "x" }),
      /symbolic link, which VS Code for the Web cannot follow/,
    );
  }
  assert.equal(host.writes.length, 0);
});

test("browser fs: ordinary writes go through the editor; a write into .git asks, and a refusal touches nothing", { skip }, async () => {
  const { bridge, host, approver, fs } = setup({ answers: ["refuse", "allow"] });
  assert.deepEqual(await bridge.writeTextFile({ sessionId: "s", path: "/home/u/ws/src/new.txt", content: "new" }), {});
  assert.deepEqual(host.writes, [["/home/u/ws/src/new.txt", "new"]]);
  assert.equal(approver.asked.length, 0, "an ordinary file is not asked about");
  const config = "/home/u/ws/repo/.git/config";
  await assert.rejects(
    bridge.writeTextFile({ sessionId: "s", path: config, content: "[core]\n\tfsmonitor = x\n" }),
    reason("permission_denied"),
  );
  assert.equal(fs.entries.get(config), "[core]\n");
  const w = approver.asked[0]!;
  assert.deepEqual([w.realPath, w.reason, w.exists, w.oldText], [config, "git", true, "[core]\n"]);
  assert.deepEqual(await bridge.writeTextFile({ sessionId: "s", path: config, content: "[core]\n\tbare = false\n" }), {});
  assert.equal(fs.entries.get(config), "[core]\n\tbare = false\n");
});

test("browser fs: a file larger than a read takes is refused before it is read", { skip }, async () => {
  const { bridge, fs } = setup();
  let reads = 0;
  const read = fs.readFile.bind(fs);
  fs.readFile = (u) => (reads++, read(u));
  fs.stat = async () => ({ type: 1, size: MAX_READ_BYTES + 1 });
  await assert.rejects(bridge.readTextFile({ sessionId: "s", path: "/home/u/ws/src/a.txt" }), reason("too_large"));
  assert.equal(reads, 0);
});

test("browser fs: the provider's other errors are I/O errors, not a missing file", { skip }, async () => {
  const { bridge, fs } = setup();
  fs.readFile = () => Promise.reject(fsError("NoPermissions"));
  await assert.rejects(bridge.readTextFile({ sessionId: "s", path: "/home/u/ws/src/a.txt" }), reason("io"));
});
