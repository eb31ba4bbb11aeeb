import { test } from "node:test";
import assert from "node:assert/strict";
import { MAX_CODE_CHARS, badCodeText } from "../../src/host/codeText";

test("a code block's text from the view: a string up to the cap, else a clear reason", () => {
  assert.equal(badCodeText("fn main() {}"), undefined);
  assert.equal(badCodeText(""), undefined);
  assert.equal(badCodeText("x".repeat(MAX_CODE_CHARS)), undefined);
  assert.equal(badCodeText(undefined), "the code block's text did not arrive");
  assert.equal(badCodeText({ text: "x" }), "the code block's text did not arrive");
  assert.match(badCodeText("x".repeat(MAX_CODE_CHARS + 1))!, /too large \(4000001 characters; at most 4000000\)/);
});
