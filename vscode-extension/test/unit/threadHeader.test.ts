// The chat view's header line (title beside it): the context usage from the thread's meta and,
// from builds with draft ACP, the last turn's tokens; the saved form carries both back.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { SavedThread, ThreadMeta } from "acp-wasm-client";
import { ThreadModel, headerUsage } from "../../src/webview/threadModel";

const meta = (over: Partial<ThreadMeta>): ThreadMeta => ({
  title: null,
  plan: [],
  planMore: 0,
  currentMode: null,
  modes: [],
  configOptions: null,
  commands: [],
  commandsMore: 0,
  usage: null,
  turn: "idle",
  lastStop: null,
  ...over,
});

test("headerUsage: nothing, context, turn tokens, both", () => {
  assert.equal(headerUsage(meta({})), "");
  assert.equal(headerUsage(meta({ usage: { used: 12000, size: 200000 } })), "12,000 / 200,000 tokens");
  assert.equal(headerUsage(meta({ usage: { used: 1, size: 2, cost: { amount: 0.125, currency: "USD" } } })), "1 / 2 tokens (0.13 USD)");
  assert.equal(headerUsage(meta({ turnUsage: { totalTokens: 1234, inputTokens: 1000, outputTokens: 234 } })), "last turn 1,234 tokens");
  assert.equal(
    headerUsage(meta({ usage: { used: 5, size: 10 }, turnUsage: { totalTokens: 3, inputTokens: 2, outputTokens: 1 } })),
    "5 / 10 tokens · last turn 3 tokens",
  );
});

test("a saved thread's title, usage and turn usage reach the header through reset", () => {
  const saved: SavedThread = {
    format: 1,
    title: "Fix the parser",
    entries: [],
    droppedEntries: 0,
    plan: [],
    modes: [],
    commands: [],
    usage: { used: 7, size: 100 },
    turn: "idle",
    turnUsage: { totalTokens: 42, inputTokens: 40, outputTokens: 2 },
    sessionStatus: "open",
  };
  const ops = new ThreadModel().reset(saved);
  const m = ops.find((o) => o.op === "meta");
  assert.ok(m && m.op === "meta");
  assert.equal(m.meta.title, "Fix the parser");
  assert.equal(m.meta.sessionStatus, "open");
  assert.equal(headerUsage(m.meta), "7 / 100 tokens · last turn 42 tokens");
});
