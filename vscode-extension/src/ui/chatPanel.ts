// A conversation in an editor tab (a WebviewPanel): the same chat page as the side view (its
// html, CSP and messages: chatView.ts's chatHtml, a ChatChannel), its title the conversation's
// with a mark while its turn runs (so a turn running in the background shows on its tab). A
// tab VS Code brings back after a window reload (its WebviewPanelSerializer, in context.ts; the state it is
// given: sessions/tabState.ts)
// is taken over as it is.

import * as vscode from "vscode";
import type { HostToWebview, WebviewToHost } from "../webview/messages";
import { ChatChannel } from "./chatChannel";
import { chatHtml } from "./chatView";

export const CHAT_PANEL_TYPE = "acp.chatPanel";

export class ChatPanel implements vscode.Disposable {
  private readonly panel: vscode.WebviewPanel;
  private readonly channel: ChatChannel;
  private title = "ACP Chat";
  private running = false;
  private disposed = false;

  /** A chat in a new editor tab, or in `restored` (a tab VS Code brought back after a reload). */
  constructor(extensionUri: vscode.Uri, onMessage: (m: WebviewToHost) => void, onClosed: () => void, restored?: vscode.WebviewPanel) {
    const dist = vscode.Uri.joinPath(extensionUri, "dist");
    this.panel =
      restored ??
      vscode.window.createWebviewPanel(
        CHAT_PANEL_TYPE,
        this.title,
        { viewColumn: vscode.ViewColumn.Active, preserveFocus: false },
        { enableScripts: true, localResourceRoots: [dist], retainContextWhenHidden: true },
      );
    if (restored) restored.webview.options = { enableScripts: true, localResourceRoots: [dist] };
    this.channel = new ChatChannel(onMessage);
    this.panel.webview.html = chatHtml(this.panel.webview, dist);
    this.channel.attach(this.panel.webview);
    this.panel.onDidChangeViewState(() => {
      if (!this.panel.visible) this.channel.blurred();
    });
    this.panel.onDidDispose(() => {
      this.disposed = true;
      this.channel.dispose();
      onClosed();
    });
  }

  /** The tab is the active editor and its chat has keyboard focus. */
  get focused(): boolean {
    return !this.disposed && this.panel.active && this.channel.focused;
  }

  /** The tab is the active one (the last conversation the user turned to). */
  get active(): boolean {
    return !this.disposed && this.panel.active;
  }

  /** Subscribes to the tab becoming active. */
  onDidBecomeActive(f: () => void): vscode.Disposable {
    return this.panel.onDidChangeViewState((e) => e.webviewPanel.active && f());
  }

  /** The conversation's title (undefined: none yet). */
  setTitle(title: string | undefined): void {
    this.title = title ? (title.length > 40 ? `${title.slice(0, 39)}…` : title) : "ACP Chat";
    this.render();
  }

  /** Whether its turn runs (a mark in the tab's title). */
  showRunning(running: boolean): void {
    this.running = running;
    this.render();
  }

  reveal(): void {
    if (!this.disposed) this.panel.reveal(undefined, false);
  }

  post(m: HostToWebview): void {
    if (!this.disposed) this.channel.post(m);
  }

  dispose(): void {
    if (!this.disposed) this.panel.dispose();
  }

  private render(): void {
    if (!this.disposed) this.panel.title = `${this.running ? "● " : ""}${this.title}`;
  }
}
