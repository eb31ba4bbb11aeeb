// Restart policy: exponential backoff and a crash budget ("N crashes in M minutes, then stop and
// show why"). Pure: time is passed in.
//
// Architecture Invariant: this file does not import `vscode`.

export interface CrashPolicy {
  maxCrashes: number;
  windowMs: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export const defaultCrashPolicy: CrashPolicy = { maxCrashes: 3, windowMs: 3 * 60_000, baseDelayMs: 1000, maxDelayMs: 30_000 };

export type CrashDecision = { restart: true; delayMs: number; crashesInWindow: number } | { restart: false; crashesInWindow: number };

export class CrashBudget {
  private crashes: number[] = [];
  constructor(private readonly policy: CrashPolicy = defaultCrashPolicy) {}

  /** Records a crash at `nowMs` and says whether to restart, and after how long. */
  recordCrash(nowMs: number): CrashDecision {
    this.crashes = this.crashes.filter((t) => nowMs - t < this.policy.windowMs);
    this.crashes.push(nowMs);
    const n = this.crashes.length;
    if (n > this.policy.maxCrashes) return { restart: false, crashesInWindow: n };
    const delayMs = Math.min(this.policy.maxDelayMs, this.policy.baseDelayMs * 2 ** (n - 1));
    return { restart: true, delayMs, crashesInWindow: n };
  }

  /** A user-initiated (re)start forgets earlier crashes. */
  reset(): void {
    this.crashes = [];
  }
}
