import { test } from "node:test";
import assert from "node:assert/strict";
import { RenderQueue, type Renderable } from "../../src/webview/renderQueue";

/** A scheduler the test runs by hand: `frames` holds the flushes waiting for a frame. */
function manualFrames() {
  const frames: Array<() => void> = [];
  return { frames, schedule: (f: () => void) => void frames.push(f), next: () => frames.shift()?.() };
}

class Block implements Renderable {
  renders = 0;
  shown = "";
  failWith: unknown;
  constructor(public text = "") {}
  render() {
    this.renders++;
    if (this.failWith !== undefined) throw this.failWith;
    this.shown = `md:${this.text}`;
  }
  fallback() {
    this.shown = `raw:${this.text}`;
  }
}

test("updates are coalesced: one render per block per frame, whatever the number of updates", () => {
  const f = manualFrames();
  let scrolled = 0;
  const q = new RenderQueue(f.schedule, () => scrolled++);
  const a = new Block();
  const b = new Block();
  for (let i = 0; i < 1000; i++) {
    a.text += "x";
    q.add(a);
    q.add(b);
  }
  assert.equal(f.frames.length, 1, "one frame asked for");
  assert.equal(a.renders, 0, "nothing rendered before the frame");
  f.next();
  assert.equal(a.renders, 1);
  assert.equal(b.renders, 1);
  assert.equal(a.shown, `md:${"x".repeat(1000)}`);
  assert.equal(scrolled, 1);
  assert.equal(q.pending, 0);
});

test("a block whose rendering throws shows its raw text, and rendering goes on for it and the others", () => {
  const f = manualFrames();
  const q = new RenderQueue(f.schedule);
  const bad = new Block(">".repeat(5000));
  bad.failWith = new RangeError("Maximum call stack size exceeded");
  const good = new Block("hello");
  q.add(bad);
  q.add(good);
  f.next();
  assert.equal(bad.shown, `raw:${">".repeat(5000)}`);
  assert.equal(good.shown, "md:hello");
  // The queue was emptied and re-arms: later updates render (the former webview stopped
  // rendering agent text for good after one throw).
  good.text = "hello again";
  q.add(good);
  assert.equal(f.frames.length, 1, "a new frame is asked for");
  f.next();
  assert.equal(good.shown, "md:hello again");
});

test("even a throwing fallback does not stop the queue", () => {
  const f = manualFrames();
  let scrolled = 0;
  const q = new RenderQueue(f.schedule, () => scrolled++);
  const worst: Renderable = {
    render: () => {
      throw new Error("render");
    },
    fallback: () => {
      throw new Error("fallback");
    },
  };
  const after = new Block("after");
  q.add(worst);
  q.add(after);
  f.next();
  assert.equal(after.shown, "md:after");
  assert.equal(scrolled, 1);
  q.add(after);
  assert.equal(f.frames.length, 1);
});
