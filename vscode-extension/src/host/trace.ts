// The raw protocol trace: every line to and from the agent (and its stderr) appended to the
// "ACP Trace" output channel while acp.trace.raw is on. The channel is made on first use.
// One reason to change: how the raw trace is shown or switched.

import * as vscode from "vscode";
import type { TraceSink } from "../protocol/log";
import { cfg } from "./settings";

export class RawTrace implements vscode.Disposable {
  private channel: vscode.OutputChannel | undefined;
  private readonly listener: vscode.Disposable;

  /** What the agent's connection writes to (`enabled` follows acp.trace.raw). */
  readonly sink: TraceSink = {
    enabled: false, // kept in sync with acp.trace.raw by the configuration listener

    write: (direction, text) => {
      const arrow = direction === "send" ? "→" : direction === "recv" ? "←" : "stderr";
      this.output().append(`${arrow} ${text}${text.endsWith("\n") ? "" : "\n"}`);
    },
  };

  constructor() {
    const sync = () => ((this.sink as { enabled: boolean }).enabled = cfg().get<boolean>("trace.raw", false));
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
