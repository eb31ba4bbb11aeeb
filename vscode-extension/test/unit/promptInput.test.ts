// The prompt input (issue 11, item 2): the completion the caret is in, the agent's commands that
// match, applying a completion, stop reasons and statuses in words; attachments into content
// blocks through acp-client's decision (tests/client/prompt.json through ClientPolicy and
// promptParts on real files); the edit review's Keep/Undo (bridges/edits.ts) and the FsBridge
// recording the text a write replaces.
import { nodeFiles } from "../../src/platform/nodeFiles";
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import { applyCompletion, completionContext, matchCommands, statusWords } from "../../src/webview/promptInput";
import { promptParts, readForPrompt, validAttachment } from "../../src/bridges/attachments";
import { EditReview, type EditTarget } from "../../src/bridges/edits";
import { FsBridge, type DocumentHost } from "../../src/bridges/fs";
import { nodeBridgeFiles } from "../../src/platform/nodeBridgeFiles";
import { requestEdits, PermissionBridge, type PermissionPromptModel } from "../../src/bridges/permission";
import { nullLogger } from "../../src/protocol/log";
import type { PromptAttachment } from "../../src/protocol/policy";
import { extensionRoot, testPolicy, tryEngine } from "./engine-helpers";

const { skip } = tryEngine();

test("completionContext: / at the start, @ after a space or at the start, nothing elsewhere", () => {
  assert.deepEqual(completionContext("/ec", 3), { trigger: "/", query: "ec", start: 0 });
  assert.deepEqual(completionContext("/", 1), { trigger: "/", query: "", start: 0 });
  assert.equal(completionContext("/echo hi", 8), null, "past the command name");
  assert.equal(completionContext("a /echo", 7), null, "a slash command only at the start");
  assert.deepEqual(completionContext("look at @src/ma", 15), { trigger: "@", query: "src/ma", start: 8 });
  assert.deepEqual(completionContext("@", 1), { trigger: "@", query: "", start: 0 });
  assert.equal(completionContext("mail@example", 12), null, "an @ inside a word is not a mention");
  assert.equal(completionContext("see @a.ts now", 13), null, "the caret left the mention");
});

test("matchCommands: prefix matches first, then substring; bounded", () => {
  const cmds = [
    { name: "help", description: "" },
    { name: "echo", description: "" },
    { name: "review", description: "" },
    { name: "rewind", description: "" },
  ];
  assert.deepEqual(
    matchCommands(cmds, "re").map((c) => c.name),
    ["review", "rewind"],
  );
  assert.deepEqual(
    matchCommands(cmds, "e").map((c) => c.name),
    ["echo", "help", "review", "rewind"],
  );
  assert.deepEqual(
    matchCommands(cmds, "", 2).map((c) => c.name),
    ["help", "echo"],
  );
  assert.deepEqual(matchCommands(cmds, "zzz"), []);
});

test("applyCompletion replaces the trigger and query, keeps the rest, puts the caret after", () => {
  const ctx = completionContext("see @ma and more", 7)!;
  assert.deepEqual(applyCompletion("see @ma and more", 7, ctx, "@main.rs "), { text: "see @main.rs  and more", caret: 13 });
  const slash = completionContext("/ec", 3)!;
  assert.deepEqual(applyCompletion("/ec", 3, slash, "/echo "), { text: "/echo ", caret: 6 });
});

test("statuses in plain words; unfinished work after the turn is said so", () => {
  assert.equal(statusWords("in_progress"), "Running");
  assert.equal(statusWords("in_progress", true), "Not finished");
  assert.equal(statusWords("pending", true), "Not finished");
  assert.equal(statusWords("completed", true), "Done");
});

// ---- attachments --------------------------------------------------------------------------------

const tablesDir = path.resolve(extensionRoot, "..", "tests", "client");

test("prompt.json: every row through ClientPolicy.attachToPrompt", { skip }, () => {
  const policy = testPolicy();
  const table = JSON.parse(fs.readFileSync(path.join(tablesDir, "prompt.json"), "utf8")) as {
    cases: Array<{ name: string; caps: unknown; attachment: PromptAttachment; expect: unknown }>;
  };
  assert.ok(table.cases.length > 0);
  for (const c of table.cases) assert.deepEqual(policy.attachToPrompt(c.caps, c.attachment), c.expect, c.name);
});

test("validAttachment refuses what the view should not send", () => {
  assert.deepEqual(validAttachment({ kind: "file", path: "/w/a.ts", name: "a.ts" }), { kind: "file", path: "/w/a.ts", name: "a.ts" });
  assert.throws(() => validAttachment({ kind: "file", path: "a.ts", name: "a.ts" }), /path must be absolute/);
  assert.throws(() => validAttachment({ kind: "symbol", path: "/a", name: "x", line: -1 }), /line must be a line number/);
  assert.throws(() => validAttachment({ kind: "video" }), /unknown kind "video"/);
  assert.throws(() => validAttachment(null), /unknown kind/);
});

test(
  "promptParts: real files become embedded resources or links per promptCapabilities; images refused unless advertised",
  { skip },
  async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "acp-prompt-"));
    try {
      const small = path.join(dir, "small.md");
      fs.writeFileSync(small, "# hi\n");
      const bin = path.join(dir, "blob.bin");
      fs.writeFileSync(bin, Buffer.from([1, 0, 2, 3]));
      const policy = testPolicy();
      const atts = [
        { kind: "file" as const, path: small, name: "small.md" },
        { kind: "file" as const, path: bin, name: "blob.bin" },
      ];
      const embedded = await promptParts("look", atts, { embeddedContext: true }, policy, nodeFiles);
      assert.deepEqual(embedded.refused, []);
      assert.deepEqual(embedded.blocks, [
        { type: "text", text: "look" },
        { type: "resource", resource: { uri: pathToFileURL(small).href, text: "# hi\n" } },
        { type: "resource_link", uri: pathToFileURL(bin).href, name: "blob.bin", size: 4 },
      ]);
      // An open buffer's text is what is embedded (unsaved edits included).
      const open = await promptParts("", [atts[0]!], { embeddedContext: true }, policy, nodeFiles, () => "UNSAVED");
      assert.deepEqual(open.blocks, [{ type: "resource", resource: { uri: pathToFileURL(small).href, text: "UNSAVED" } }]);
      const linked = await promptParts("look", atts.slice(0, 1), {}, policy, nodeFiles);
      assert.deepEqual(linked.blocks[1], { type: "resource_link", uri: pathToFileURL(small).href, name: "small.md", size: 5 });
      const image = { kind: "image" as const, name: "p.png", mimeType: "image/png", data: "iVBORw0KGgo=" };
      const refused = await promptParts("see", [image], null, policy, nodeFiles);
      assert.deepEqual(refused.refused, [
        "p.png not sent: this agent does not accept images (it does not advertise promptCapabilities.image)",
      ]);
      const accepted = await promptParts("see", [image], { image: true }, policy, nodeFiles);
      assert.deepEqual(accepted.blocks[1], { type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" });
      const missing = await promptParts("x", [{ kind: "file", path: path.join(dir, "gone.txt"), name: "gone.txt" }], {}, policy, nodeFiles);
      assert.match(missing.refused[0] ?? "", /^gone\.txt not sent: ENOENT/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  },
);

test("readForPrompt reads at most max + 1 bytes and says when the file is not text", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "acp-read-"));
  try {
    const f = path.join(dir, "f.txt");
    fs.writeFileSync(f, "x".repeat(100));
    assert.deepEqual(await readForPrompt(nodeFiles, f, 100), { size: 100, text: "x".repeat(100) });
    assert.deepEqual(await readForPrompt(nodeFiles, f, 99), { size: 100, text: null });
    fs.writeFileSync(f, Buffer.from([0xff, 0xfe, 0x41]));
    assert.deepEqual(await readForPrompt(nodeFiles, f, 100), { size: 3, text: null });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

// ---- edit review ------------------------------------------------------------------------------------

class MemTarget implements EditTarget {
  files = new Map<string, string>();
  async currentText(p: string) {
    return this.files.get(p);
  }
  async replace(p: string, text: string) {
    this.files.set(p, text);
  }
  async remove(p: string) {
    this.files.delete(p);
  }
}

test("EditReview: undo restores the text before the first write, deletes a created file, asks when changed since", { skip }, async () => {
  const r = new EditReview(testPolicy());
  const t = new MemTarget();
  t.files.set("/w/a", "v2");
  r.record("/w/a", "v0", "v1");
  r.record("/w/a", "v1", "v2"); // a second write keeps the first old text
  t.files.set("/w/new", "made");
  r.record("/w/new", null, "made");
  assert.deepEqual(
    r.list().map((f) => [f.path, f.before, f.after, f.writes]),
    [
      ["/w/a", "v0", "v2", 2],
      ["/w/new", null, "made", 1],
    ],
  );
  assert.deepEqual(await r.undo("/w/a", t), { undone: true, deleted: false });
  assert.equal(t.files.get("/w/a"), "v0");
  assert.deepEqual(await r.undo("/w/new", t), { undone: true, deleted: true });
  assert.equal(t.files.has("/w/new"), false);
  assert.equal(r.size, 0);
  // The user edited the file after the agent: not undone without `force`.
  t.files.set("/w/b", "agent's + mine");
  r.record("/w/b", "old", "agent's");
  assert.deepEqual(await r.undo("/w/b", t), { undone: false, reason: "changed_since" });
  assert.equal(t.files.get("/w/b"), "agent's + mine");
  assert.deepEqual(await r.undo("/w/b", t, true), { undone: true, deleted: false });
  assert.equal(t.files.get("/w/b"), "old");
  assert.deepEqual(await r.undo("/w/b", t), { undone: false, reason: "unknown" });
  r.record("/w/c", "x", "y");
  assert.equal(r.keep("/w/c"), true);
  assert.equal(r.size, 0);
  // Deleted since the agent's write (acp-client's rule, tests/client/edits.json): asked like a
  // change; forced, the earlier text is written back. A created file deleted since needs nothing.
  r.record("/w/d", "earlier", "agent's");
  assert.deepEqual(await r.undo("/w/d", t), { undone: false, reason: "changed_since" });
  assert.equal(t.files.has("/w/d"), false);
  assert.deepEqual(await r.undo("/w/d", t, true), { undone: true, deleted: false });
  assert.equal(t.files.get("/w/d"), "earlier");
  r.record("/w/gone", null, "made");
  assert.deepEqual(await r.undo("/w/gone", t), { undone: true, deleted: true });
  assert.equal(t.files.has("/w/gone"), false);
  assert.equal(r.size, 0);
});

test("FsBridge records the text each write replaces (null for a new file) for the review", { skip }, async () => {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "acp-edits-")));
  try {
    const host: DocumentHost = {
      openDocumentText: () => undefined,
      applyWrite: async (p, c) => fs.writeFileSync(p, c),
      workspaceFolders: () => [dir],
    };
    const review = new EditReview(testPolicy());
    const b = new FsBridge(
      nodeBridgeFiles,
      host,
      () => ({ allowWritesOutsideWorkspace: false }),
      testPolicy(),
      undefined,
      nullLogger,
      review,
    );
    const a = path.join(dir, "a.txt");
    fs.writeFileSync(a, "before");
    await b.writeTextFile({ sessionId: "s", path: a, content: "after" });
    await b.writeTextFile({ sessionId: "s", path: path.join(dir, "n.txt"), content: "new" });
    assert.deepEqual(
      review.list().map((f) => [path.basename(f.path), f.before, f.after]),
      [
        ["a.txt", "before", "after"],
        ["n.txt", null, "new"],
      ],
    );
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

// ---- the permission question for an edit ----------------------------------------------------------

test("an edit's permission question carries its diffs: from the request, else the conversation's tool call", { skip }, async () => {
  const req = {
    sessionId: "s",
    toolCall: { toolCallId: "w1", title: "Write a.txt", kind: "edit" as const },
    options: [
      { optionId: "allow", name: "Allow", kind: "allow_once" as const },
      { optionId: "no", name: "No", kind: "reject_once" as const },
    ],
  };
  const withDiff = {
    ...req,
    toolCall: { ...req.toolCall, content: [{ type: "diff" as const, path: "/w/a.txt", oldText: "o", newText: "n" }] },
  };
  assert.deepEqual(requestEdits(withDiff), [{ path: "/w/a.txt", oldText: "o", newText: "n" }]);
  assert.deepEqual(requestEdits(req), []);
  let seen: PermissionPromptModel | undefined;
  const asked: string[] = [];
  // The conversation's tool call, as acp-client's thread keeps it.
  let known = {
    type: "tool",
    toolCallId: "w1",
    title: "Write a.txt",
    kind: "edit",
    status: "pending",
    content: [{ type: "diff", path: "/w/a.txt", oldText: null, newText: "n" }],
    locations: [{ path: "/w/a.txt" }],
  };
  const bridge = new PermissionBridge(
    { prompt: async (m) => ((seen = m), "allow") },
    () => ({ autoApprove: false }),
    nullLogger,
    testPolicy(),
    () => {},
    (sid, id) => (asked.push(`${sid}/${id}`), known),
  );
  assert.deepEqual(await bridge.handle(req, { isCancellationRequested: false, onCancellationRequested: () => ({ dispose() {} }) }), {
    outcome: { outcome: "selected", optionId: "allow" },
  });
  assert.deepEqual(asked, ["s/w1"]);
  assert.deepEqual(seen?.diffs, [{ path: "/w/a.txt", oldText: null, newText: "n" }]);
  // The modal's text is acp-client's question, the diff from the conversation included.
  assert.deepEqual(seen?.detail.split("\n"), ["/w/a.txt (new file, +1 -0)", "@@ -0,0 +1 @@", "+n", "\\ No newline at end of file"]);
  assert.equal(seen?.message, "The agent wants to: Write a.txt (edit)");
  // A request with no title nor kind: the conversation's, as acp chat shows it.
  known = { ...known, title: "Create the file a.txt" };
  await bridge.handle(
    { ...req, toolCall: { toolCallId: "w1" } },
    { isCancellationRequested: false, onCancellationRequested: () => ({ dispose() {} }) },
  );
  assert.equal(seen?.message, "The agent wants to: Create the file a.txt (edit)");
  assert.deepEqual(seen?.diffs, [{ path: "/w/a.txt", oldText: null, newText: "n" }]);
});
