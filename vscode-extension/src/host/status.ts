// How the agent's state is shown: the status bar item (an icon, the agent's name when it is
// ready, else what is happening; the error background on failure; a spinner while a turn runs)
// and the chat's status line. It keeps no state: the lifecycle says what to show.
// One reason to change: how the state is presented.

import * as vscode from "vscode";
import type { AgentConnection } from "../protocol/agent";
import type { HostToWebview } from "../webview/messages";

export type AgentState = "stopped" | "starting" | "ready" | "crashed" | "failed";

const ICONS: Record<AgentState, string> = {
  stopped: "$(circle-slash)",
  starting: "$(loading~spin)",
  ready: "$(hubot)",
  crashed: "$(warning)",
  failed: "$(error)",
};

export class AgentStatus implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;

  constructor(private readonly post: (m: HostToWebview) => void) {
    this.item = vscode.window.createStatusBarItem("acp.status", vscode.StatusBarAlignment.Left, 100);
    this.item.name = "ACP agent";
    this.item.command = "acp.openChat";
    this.item.show();
  }

  /** `state` (with `detail`: why, or what is happening) of the agent `conn`, if one runs. */
  show(state: AgentState, detail: string, conn: AgentConnection | undefined): void {
    const name = conn?.spec.name ?? "agent";
    this.item.text = `${ICONS[state]} ACP: ${state === "ready" ? name : detail}`;
    this.item.tooltip = `ACP ${name}: ${state}${detail ? ` (${detail})` : ""}. Click to open the chat.`;
    this.item.backgroundColor = state === "failed" ? new vscode.ThemeColor("statusBarItem.errorBackground") : undefined;
    this.post({ type: "status", state, text: state === "ready" ? `${conn?.agentTitle ?? name}` : `ACP: ${detail}` });
  }

  /** A turn of the ready agent `name` started (`busy`) or ended. */
  busy(busy: boolean, name: string | undefined): void {
    this.item.text = `${busy ? "$(sync~spin)" : "$(hubot)"} ACP: ${name ?? ""}`;
  }

  dispose(): void {
    this.item.dispose();
  }
}
