// The protocol trace: every line to and from the agent (and its stderr), recorded in memory
// within a bound (trace/recorder.ts) for "ACP: Show Protocol Trace" (host/tracePanel.ts), and
// appended, timed, to the "ACP Trace" output channel while acp.trace.raw is on (a file
// `acp trace` reads too). The channel is made on first use.
// One reason to change: how the trace is recorded, shown or switched.

import * as vscode from "vscode";
import type { TraceSink } from "../protocol/log";
import { TraceRecorder } from "../trace/recorder";
import { cfg } from "./settings";

export class RawTrace implements vscode.Disposable {
  private channel: vscode.OutputChannel | undefined;
  private readonly listener: vscode.Disposable;
  private raw = false;
  /** What the panel shows. */
  readonly recorder = new TraceRecorder();

  /** What the agent's connection writes to: always on (the recorder is bounded). */
  readonly sink: TraceSink = {
    enabled: true,

    write: (direction, text) => {
      const lines = this.recorder.write(direction, text);
      if (this.raw && lines.length > 0) this.output().append(`${lines.join("\n")}\n`);
    },
  };

  constructor() {
    const sync = () => (this.raw = cfg().get<boolean>("trace.raw", false));
    sync();
    this.listener = vscode.workspace.onDidChangeConfiguration((e) => e.affectsConfiguration("acp.trace.raw") && sync());
  }

  /** The "ACP Trace" channel, made when first asked for. */
  output(): vscode.OutputChannel {
    if (!this.channel) this.channel = vscode.window.createOutputChannel("ACP Trace");
    return this.channel;
  }

  dispose(): void {
    this.listener.dispose();
    this.channel?.dispose();
  }
}
