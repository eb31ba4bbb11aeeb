// The extension's protocol trace: every line to and from the agent (and its stderr), cut into
// whole lines per direction, timed (ms since the recording began) and kept in memory within a
// bound, as the "ACP: Show Protocol Trace" panel shows it (through trace-viewer/model.js, the
// model `acp trace` answers with too) and the "ACP Trace" output channel writes it:
//
//   12.345 → {"jsonrpc":"2.0","id":3,"method":"session/prompt",…}
//   13.001 ← {"jsonrpc":"2.0","method":"session/update",…}
//   13.020 stderr a line the agent wrote on stderr
//
// which `acp trace FILE` reads too. No `vscode` here: host/trace.ts does the VS Code part.
//
// Bounds: lines are kept up to MAX_TRACE_BYTES (16 MiB) and MAX_TRACE_LINES (50,000); past
// either, the oldest quarter is dropped and the model read again from what is left (the
// panel says so). A line is kept up to MAX_LINE_KEPT (1 MiB); a longer one keeps its start
// and its length, and the viewer reads it from its start.

import { TraceModel, utf8Length, utf8Prefix } from "../../../trace-viewer/model.js";

export const MAX_TRACE_BYTES = 16 << 20;
export const MAX_TRACE_LINES = 50_000;
export const MAX_LINE_KEPT = 1 << 20;

export type TraceDirection = "send" | "recv" | "stderr";

const ARROW: Record<TraceDirection, string> = { send: "→", recv: "←", stderr: "stderr" };

/** Milliseconds, from any origin (performance.now by default). */
export interface TraceClock {
  now(): number;
}

interface Kept {
  text: string;
  /** The whole line's length in bytes, when `text` is its start only. */
  cutFrom?: number;
  bytes: number;
}

interface Partial {
  text: string;
  /** Its length in bytes (more than `text` holds once cut). */
  bytes: number;
  cut: boolean;
}

export interface RecorderLimits {
  maxBytes: number;
  maxLines: number;
  maxLine: number;
}

export class TraceRecorder {
  readonly model = new TraceModel({ file: "ACP Trace (this window)" });
  private readonly kept: Kept[] = [];
  private bytes = 0;
  private readonly partial: Record<TraceDirection, Partial> = {
    send: { text: "", bytes: 0, cut: false },
    recv: { text: "", bytes: 0, cut: false },
    stderr: { text: "", bytes: 0, cut: false },
  };
  private readonly start: number;
  private readonly listeners = new Set<() => void>();
  /** Lines dropped to stay within the bounds, so far. */
  dropped = 0;

  constructor(
    private readonly clock: TraceClock = { now: () => performance.now() },
    private readonly limits: RecorderLimits = { maxBytes: MAX_TRACE_BYTES, maxLines: MAX_TRACE_LINES, maxLine: MAX_LINE_KEPT },
  ) {
    this.start = clock.now();
  }

  /** A chunk read from or written to the agent (or its stderr), in any pieces; returns the
   *  lines it completed, as the trace writes them. */
  write(dir: TraceDirection, chunk: string): string[] {
    const out: string[] = [];
    let from = 0;
    for (;;) {
      const nl = chunk.indexOf("\n", from);
      const piece = chunk.slice(from, nl < 0 ? undefined : nl);
      this.append(dir, piece);
      if (nl < 0) break;
      const line = this.finish(dir);
      if (line !== undefined) out.push(line);
      from = nl + 1;
    }
    if (out.length > 0) for (const l of this.listeners) l();
    return out;
  }

  /** Calls `listener` after lines are added; returns what stops it. */
  onChange(listener: () => void): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  /** Lines kept now. */
  get lineCount(): number {
    return this.kept.length;
  }

  private append(dir: TraceDirection, piece: string): void {
    if (piece === "") return;
    const p = this.partial[dir];
    p.bytes += utf8Length(piece);
    if (p.cut) return;
    p.text += piece;
    if (p.bytes > this.limits.maxLine) {
      p.text = utf8Prefix(p.text, this.limits.maxLine);
      p.cut = true;
    }
  }

  /** The line of `dir` is complete: timed, kept, given to the model. */
  private finish(dir: TraceDirection): string | undefined {
    const p = this.partial[dir];
    this.partial[dir] = { text: "", bytes: 0, cut: false };
    const text = p.text.endsWith("\r") ? p.text.slice(0, -1) : p.text;
    if (text.trim() === "" && !p.cut) return undefined;
    const head = `${(this.clock.now() - this.start).toFixed(3)} ${ARROW[dir]} `;
    const line = head + text;
    const kept: Kept = { text: line, bytes: utf8Length(line) };
    if (p.cut) kept.cutFrom = utf8Length(head) + p.bytes;
    this.kept.push(kept);
    this.bytes += kept.bytes;
    this.model.addLine(kept.text, kept.cutFrom);
    if (this.bytes > this.limits.maxBytes || this.kept.length > this.limits.maxLines) this.dropOldest();
    return line;
  }

  /** Drops the oldest quarter of the lines and reads the rest again. */
  private dropOldest(): void {
    const n = Math.max(1, Math.floor(this.kept.length / 4));
    for (const k of this.kept.splice(0, n)) this.bytes -= k.bytes;
    this.dropped += n;
    this.model.reset(
      `the trace keeps the last ${Math.round(this.limits.maxBytes / (1 << 20))} MiB or ${this.limits.maxLines.toLocaleString("en-US")} lines: ${this.dropped.toLocaleString("en-US")} older lines were dropped`,
    );
    for (const k of this.kept) this.model.addLine(k.text, k.cutFrom);
  }
}
