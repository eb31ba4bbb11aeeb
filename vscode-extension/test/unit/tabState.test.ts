// What a restored editor tab's webview state names (sessions/tabState.ts): the state comes back
// from the webview, so anything but the shape we write is no session.
import { test } from "node:test";
import assert from "node:assert/strict";
import { MAX_SESSION_ID, restoredSessionId } from "../../src/sessions/tabState";

test("a tab's state names the session it showed", () => {
  assert.equal(restoredSessionId({ sessionId: "sess-1" }), "sess-1");
  assert.equal(restoredSessionId({ sessionId: "x".repeat(MAX_SESSION_ID) }), "x".repeat(MAX_SESSION_ID));
});

test("a state we did not write names no session", () => {
  for (const state of [undefined, null, "sess-1", 7, [], {}, { sessionId: "" }, { sessionId: 42 }, { sessionId: null }, { session: "s" }])
    assert.equal(restoredSessionId(state), undefined, JSON.stringify(state));
  // An id longer than any agent's is not taken (the state is bounded by what we keep of it).
  assert.equal(restoredSessionId({ sessionId: "x".repeat(MAX_SESSION_ID + 1) }), undefined);
});
