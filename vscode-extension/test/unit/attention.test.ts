// When a conversation's events are told to a user who is not looking (sessions/attention.ts).
import { test } from "node:test";
import assert from "node:assert/strict";
import { notificationText, shouldNotify, type TurnEvent } from "../../src/sessions/attention";

const ended: TurnEvent = { kind: "ended", words: "done" };
const asks: TurnEvent = { kind: "permission", title: "The agent wants to: edit a.ts" };

test("a turn's end is told unless the window and the conversation are both focused", () => {
  const cases: Array<[boolean, boolean, boolean]> = [
    [true, true, false],
    [true, false, true],
    [false, true, true],
    [false, false, true],
  ];
  for (const [windowFocused, conversationFocused, told] of cases)
    assert.equal(shouldNotify("unfocused", { windowFocused, conversationFocused }, ended), told, `${windowFocused} ${conversationFocused}`);
});

test("a permission question is told only when the window is not focused (its modal is in front otherwise)", () => {
  assert.equal(shouldNotify("unfocused", { windowFocused: true, conversationFocused: false }, asks), false);
  assert.equal(shouldNotify("unfocused", { windowFocused: false, conversationFocused: true }, asks), true);
});

test("never: nothing is told", () => {
  for (const e of [ended, asks]) assert.equal(shouldNotify("never", { windowFocused: false, conversationFocused: false }, e), false);
});

test("the notification names the conversation (shortened) and what happened", () => {
  assert.equal(notificationText("Fix the build", ended), 'ACP: the turn in "Fix the build" ended: done');
  assert.equal(notificationText(undefined, asks), "ACP: the agent asks permission in the conversation: The agent wants to: edit a.ts");
  const long = notificationText("x".repeat(100), ended);
  assert.match(long, /"x{59}…"/);
});
