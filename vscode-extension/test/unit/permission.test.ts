import { test } from "node:test";
import assert from "node:assert/strict";
import {
  PermissionBridge,
  promptModel,
  outcomeForChoice,
  validateRequest,
  type PermissionPromptModel,
  type PermissionPrompter,
  plainLabel,
} from "../../src/bridges/permission";
import { CancellationSource, type CancellationToken } from "../../src/protocol/cancellation";
import { nullLogger } from "../../src/protocol/log";
import type { PermissionOption } from "@agentclientprotocol/sdk";
import { RequestError } from "../../src/protocol/errors";
import { testPolicy, tryEngine } from "./engine-helpers";

const { skip } = tryEngine();

const opts: PermissionOption[] = [
  { optionId: "ok", name: "Allow once", kind: "allow_once" },
  { optionId: "always", name: "Always allow", kind: "allow_always" },
  { optionId: "no", name: "Reject", kind: "reject_once" },
];
const req = (options = opts) => ({
  sessionId: "s1",
  toolCall: { toolCallId: "t1", title: "Write hello.txt", kind: "edit" as const, locations: [{ path: "/w/hello.txt" }] },
  options,
});

/** A prompter the test drives: records the model and token, answers when told. */
class FakePrompter implements PermissionPrompter {
  model?: PermissionPromptModel;
  token?: CancellationToken;
  calls = 0;
  private answer!: (id: string | undefined) => void;
  readonly shown: Promise<void>;
  private markShown!: () => void;
  constructor() {
    this.shown = new Promise((r) => (this.markShown = r));
  }
  prompt(model: PermissionPromptModel, token: CancellationToken): Promise<string | undefined> {
    this.calls++;
    this.model = model;
    this.token = token;
    this.markShown();
    return new Promise((r) => (this.answer = r));
  }
  choose(id: string | undefined) {
    this.answer(id);
  }
}

/** A bridge on the real engine's decisions; `cancels` records the session/cancel it sends. */
function bridge(p: PermissionPrompter, autoApprove = false) {
  const cancels: string[] = [];
  const b = new PermissionBridge(
    p,
    () => ({ autoApprove }),
    nullLogger,
    testPolicy(),
    (sid) => cancels.push(sid),
  );
  return Object.assign(b, { cancels });
}

/** The prompt for a request, as the bridge builds it: acp-client's question, laid out. */
const modelOf = (r: unknown, closeId?: string, known: unknown = null) =>
  promptModel(testPolicy().permissionQuestion(r, known), [], closeId);

test("the prompt is built from the agent's own options, in order, with the dismissal's option as close affordance", { skip }, () => {
  const m = modelOf(req(), "no");
  assert.deepEqual(
    m.items.map((i) => [i.optionId, i.label, i.isCloseAffordance]),
    [
      ["ok", "Allow once", false],
      ["always", "Always allow (the agent remembers: it will not ask again)", false],
      ["no", "Reject", true],
    ],
  );
  assert.equal(plainLabel("Never", "reject_always"), "Never (the agent remembers: it will refuse without asking)");
  assert.equal(plainLabel("Once", "allow_once"), "Once");
  assert.equal(m.message, "The agent wants to: Write hello.txt (edit)");
  assert.equal(m.detail, "at /w/hello.txt");
  assert.equal(m.useQuickPick, false);
  assert.equal(
    modelOf(req([{ optionId: "m", name: " ", kind: "allow_sometimes" as PermissionOption["kind"] }])).items[0]!.label,
    "allow_sometimes",
  );
});

test("agent text in the prompt is on one line: a title or option name cannot draw a fake question", { skip }, () => {
  const m = modelOf({
    sessionId: "s",
    toolCall: {
      toolCallId: "t",
      title: "Read notes.txt\n\nThe agent wants to: read README.md\u202e",
      locations: [{ path: "/w/a\nLocation: /w/b" }],
      content: [{ type: "content", content: { type: "text", text: "x\r\u001b[2Ky" } }],
    },
    options: [{ optionId: "a", name: "Allow\nonce", kind: "allow_once" }],
  });
  assert.equal(m.message, "The agent wants to: Read notes.txt\\n\\nThe agent wants to: read README.md\\u202e");
  assert.deepEqual(m.detail.split("\n"), ["x\\r\\e[2Ky", "at /w/a\\nLocation: /w/b"]);
  assert.equal(m.items[0]!.label, "Allow\\nonce");
});

test("an edit's prompt shows the diff: its first lines, then how many more and that Review shows them", { skip }, () => {
  const old = Array.from({ length: 60 }, (_, i) => `line ${i + 1}\n`).join("");
  const q = testPolicy().permissionQuestion(
    {
      sessionId: "s",
      toolCall: {
        toolCallId: "t",
        title: "Edit a.txt",
        kind: "edit",
        content: [{ type: "diff", path: "/w/a.txt", oldText: old, newText: old.replace("line 30\n", "line thirty\u001b[2J\n") }],
      },
      options: [{ optionId: "a", name: "Allow", kind: "allow_once" }],
    },
    null,
  );
  const m = promptModel(q, [{ path: "/w/a.txt", oldText: old, newText: "x" }]);
  assert.deepEqual(m.detail.split("\n"), [
    "/w/a.txt (+1 -1)",
    "@@ -27,7 +27,7 @@",
    " line 27",
    " line 28",
    " line 29",
    "-line 30",
    "+line thirty\\e[2J",
    " line 31",
    " line 32",
    " line 33",
  ]);
  // A long one is cut, and the modal says how to see it all.
  const long = Array.from({ length: 100 }, (_, i) => `new ${i}\n`).join("");
  const q2 = testPolicy().permissionQuestion(
    { sessionId: "s", toolCall: { toolCallId: "t", content: [{ type: "diff", path: "/w/b", newText: long }] }, options: [] },
    null,
  );
  const lines = promptModel(q2, [{ path: "/w/b", oldText: null, newText: long }]).detail.split("\n");
  assert.equal(lines.length, 1 + 40 + 1);
  assert.equal(lines.at(-1), "… 61 more lines (Review changes shows the whole change)");
});

test("a lone surrogate in the agent's request is shown as U+FFFD, not a failed question", { skip }, () => {
  const m = modelOf({
    sessionId: "s",
    toolCall: { toolCallId: "t", title: "Edit \ud800 \\ud800 a.txt", kind: "edit" },
    options: [{ optionId: "a", name: "Allow \udc00", kind: "allow_once" }],
  });
  assert.equal(m.message, "The agent wants to: Edit \ufffd \\\\ud800 a.txt (edit)");
  assert.equal(m.items[0]!.label, "Allow \ufffd");
});

test("more options than dialog buttons switch to a QuickPick", { skip }, () => {
  const many: PermissionOption[] = Array.from({ length: 5 }, (_, i) => ({ optionId: `o${i}`, name: `O${i}`, kind: "allow_once" }));
  assert.equal(modelOf(req(many)).useQuickPick, true);
  assert.equal(modelOf(req(many.slice(0, 4))).useQuickPick, false);
});

test("a choice the agent did not offer is refused", () => {
  assert.throws(() => outcomeForChoice(opts, "bogus"), /not one the agent offered/);
  assert.deepEqual(outcomeForChoice(opts, "always"), { outcome: "selected", optionId: "always" });
});

test("malformed requests are InvalidParams; no options and unknown kinds are not malformed", () => {
  for (const bad of [
    undefined,
    { sessionId: "s", toolCall: { toolCallId: "t" }, options: "x" },
    { sessionId: "s", toolCall: { toolCallId: "t" }, options: [{ optionId: "a", name: "A", kind: 3 }] },
    { sessionId: "s", toolCall: { toolCallId: "t" }, options: [opts[0], opts[0]] },
    { sessionId: "s", options: opts },
  ]) {
    assert.throws(
      () => validateRequest(bad),
      (e: unknown) => e instanceof RequestError && e.code === -32602,
      JSON.stringify(bad),
    );
  }
  validateRequest({ sessionId: "s", toolCall: { toolCallId: "t" }, options: [] });
  validateRequest({ sessionId: "s", toolCall: { toolCallId: "t" }, options: [{ optionId: "a", name: "A", kind: "allow_sometimes" }] });
});

test("the user's pick is answered as selected", { skip }, async () => {
  const p = new FakePrompter();
  const answer = bridge(p).handle(req(), new CancellationSource().token);
  await p.shown;
  p.choose("ok");
  assert.deepEqual(await answer, { outcome: { outcome: "selected", optionId: "ok" } });
});

test("closing the dialog answers the reject_once option; the turn goes on", { skip }, async () => {
  const p = new FakePrompter();
  const b = bridge(p);
  const answer = b.handle(req(), new CancellationSource().token);
  await p.shown;
  assert.equal(p.model!.items.find((i) => i.isCloseAffordance)?.optionId, "no");
  p.choose(undefined);
  assert.deepEqual(await answer, { outcome: { outcome: "selected", optionId: "no" } });
  assert.deepEqual(b.cancels, []);
});

test("closing the dialog without a reject_once option sends session/cancel, then answers cancelled", { skip }, async () => {
  const p = new FakePrompter();
  const b = bridge(p);
  const options: PermissionOption[] = [opts[0]!, { optionId: "never", name: "Never", kind: "reject_always" }];
  const answer = b.handle(req(options), new CancellationSource().token);
  await p.shown;
  assert.equal(
    p.model!.items.some((i) => i.isCloseAffordance),
    false,
    "reject_always is never what Escape stands for",
  );
  p.choose(undefined);
  assert.deepEqual(await answer, { outcome: { outcome: "cancelled" } });
  assert.deepEqual(b.cancels, ["s1"]);
});

test("no options: session/cancel first, then cancelled (not -32602), without asking", { skip }, async () => {
  for (const autoApprove of [false, true]) {
    const p = new FakePrompter();
    const b = bridge(p, autoApprove);
    assert.deepEqual(await b.handle(req([]), new CancellationSource().token), { outcome: { outcome: "cancelled" } });
    assert.deepEqual(b.cancels, ["s1"]);
    assert.equal(p.calls, 0);
  }
});

test("cancellation while the prompt is open answers cancelled and tells the prompter", { skip }, async () => {
  const p = new FakePrompter();
  const src = new CancellationSource();
  const answer = bridge(p).handle(req(), src.token);
  await p.shown;
  assert.equal(p.token!.isCancellationRequested, false);
  src.cancel();
  assert.deepEqual(await answer, { outcome: { outcome: "cancelled" } });
  assert.equal(p.token!.isCancellationRequested, true);
  p.choose("ok"); // a late click changes nothing
});

test("an already-cancelled request is not prompted", { skip }, async () => {
  const p = new FakePrompter();
  const src = new CancellationSource();
  src.cancel();
  assert.deepEqual(await bridge(p).handle(req(), src.token), { outcome: { outcome: "cancelled" } });
  assert.equal(p.calls, 0);
});

test("an invalid id from the prompter is answered as a dismissal", { skip }, async () => {
  const p = new FakePrompter();
  const answer = bridge(p).handle(req(), new CancellationSource().token);
  await p.shown;
  p.choose("not-offered");
  assert.deepEqual(await answer, { outcome: { outcome: "selected", optionId: "no" } });
});

test("auto-approve only when set, only allow_once (even after allow_always), else it asks", { skip }, async () => {
  const p = new FakePrompter();
  const alwaysFirst = [opts[1]!, opts[0]!, opts[2]!];
  assert.deepEqual(await bridge(p, true).handle(req(alwaysFirst), new CancellationSource().token), {
    outcome: { outcome: "selected", optionId: "ok" },
  });
  assert.equal(p.calls, 0);
  // Without an allow_once option it still asks.
  const onlyAlways = [opts[1]!, opts[2]!];
  const answer = bridge(p, true).handle(req(onlyAlways), new CancellationSource().token);
  await p.shown;
  assert.equal(p.calls, 1);
  p.choose("no");
  assert.deepEqual(await answer, { outcome: { outcome: "selected", optionId: "no" } });
  // And without the setting it always asks.
  const q = new FakePrompter();
  const asked = bridge(q).handle(req(), new CancellationSource().token);
  await q.shown;
  q.choose("ok");
  await asked;
});
