// The bookkeeping of conversations side by side on one connection (sessions/routing.ts): whose
// message it is, when a session may be folded inside wasm, when the edit review starts over.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mayFoldInside, mayResetEdits, ownerOf, type Routable } from "../../src/sessions/routing";

const conv = (name: string, sessionId: string | null, opening = false): Routable & { name: string } => ({
  name,
  session: sessionId === null ? null : { sessionId },
  opening,
});

test("a message goes to the conversation of its session, else to the one opening a session", () => {
  const side = conv("side", "s1");
  const tab = conv("tab", "s2");
  const fresh = conv("fresh", null, true);
  assert.equal(ownerOf([side, tab, fresh], "s2")?.name, "tab");
  assert.equal(ownerOf([side, tab, fresh], "s1")?.name, "side");
  // The new session's id is not known yet: its early updates are the opening one's.
  assert.equal(ownerOf([side, tab, fresh], "s3")?.name, "fresh");
  assert.equal(ownerOf([side, tab], "s3"), undefined);
});

test("a session is folded inside wasm only while no other conversation has or opens one", () => {
  const side = conv("side", "s1");
  const tab = conv("tab", null);
  assert.equal(mayFoldInside([side], side), true);
  assert.equal(mayFoldInside([side, tab], tab), false);
  assert.equal(mayFoldInside([conv("side", null), tab], tab), true);
  assert.equal(mayFoldInside([conv("side", null, true), tab], tab), false);
});

test("a new session starts the edit review over only when it is the only conversation with a session", () => {
  const side = conv("side", "s1");
  const tab = conv("tab", "s2");
  assert.equal(mayResetEdits([side, tab], side), false);
  assert.equal(mayResetEdits([side, conv("tab", null)], side), true);
  assert.equal(mayResetEdits([side], side), true);
});
