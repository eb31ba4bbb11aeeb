// Coalesced rendering for the chat webview: text blocks that changed are queued and rendered
// once per animation frame, whatever the number of updates in between. A block whose render
// throws falls back (the webview shows its raw text) and never stops the others, and the queue
// is always emptied and re-armed, so one bad message cannot stop agent text from rendering.
//
// Pure (no DOM) so it is tested under node.

export interface Renderable {
  /** Brings the block's DOM up to date. */
  render(): void;
  /** Called when render() threw: show something safe instead (the raw text). */
  fallback(error: unknown): void;
}

/** Runs `flush` later (next animation frame in the webview). */
export type Scheduler = (flush: () => void) => void;

export class RenderQueue {
  private readonly queued = new Set<Renderable>();
  private scheduled = false;

  constructor(
    private readonly schedule: Scheduler,
    /** After each flush (scroll to the end). */
    private readonly afterFlush: () => void = () => {},
  ) {}

  get pending(): number {
    return this.queued.size;
  }

  add(r: Renderable): void {
    this.queued.add(r);
    if (this.scheduled) return;
    this.scheduled = true;
    this.schedule(() => this.flush());
  }

  /** Renders every queued block once. */
  flush(): void {
    const items = [...this.queued];
    this.queued.clear();
    this.scheduled = false;
    try {
      for (const r of items) {
        try {
          r.render();
        } catch (e) {
          try {
            r.fallback(e);
          } catch {
            /* nothing more can be shown for this block; the others still render */
          }
        }
      }
    } finally {
      this.afterFlush();
    }
  }
}

/** The webview's scheduler: the next animation frame, or 100 ms when frames do not come (a
 *  hidden view), whichever is first. */
export const frameScheduler: Scheduler = (flush) => {
  let done = false;
  const run = () => {
    if (done) return;
    done = true;
    flush();
  };
  requestAnimationFrame(run);
  setTimeout(run, 100);
};
