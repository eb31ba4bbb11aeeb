// The chat webview view (the side bar): strict CSP (default-src 'none'; scripts only with a
// fresh nonce; styles from the extension and the nonce'd block), local resources only from
// dist/. Its messages go through a ChatChannel (chatChannel.ts); its header says when the
// conversation's turn runs, its icon how many turns run.

import * as vscode from "vscode";
import { buildChatHtml, makeNonce } from "../webview/html";
import type { HostToWebview, WebviewToHost } from "../webview/messages";
import { ChatChannel } from "./chatChannel";

export const CHAT_VIEW_ID = "acp.chat";

export class ChatViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  private view: vscode.WebviewView | undefined;
  private readonly channel: ChatChannel;
  private readonly subs: vscode.Disposable[] = [];
  private running = false;
  private runningAll = 0;

  constructor(
    private readonly extensionUri: vscode.Uri,
    onMessage: (m: WebviewToHost) => void,
  ) {
    this.channel = new ChatChannel(onMessage);
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    const dist = vscode.Uri.joinPath(this.extensionUri, "dist");
    view.webview.options = { enableScripts: true, localResourceRoots: [dist] };
    view.webview.html = chatHtml(view.webview, dist);
    this.channel.attach(view.webview);
    this.showRunning(this.running, this.runningAll);
    this.subs.push(
      view.onDidDispose(() => {
        this.view = undefined;
        this.channel.detach();
      }),
      view.onDidChangeVisibility(() => {
        if (!view.visible) this.channel.blurred();
      }),
    );
  }

  get isVisible(): boolean {
    return !!this.view?.visible;
  }

  /** The chat is shown and has keyboard focus. */
  get focused(): boolean {
    return this.channel.focused && this.isVisible;
  }

  /** The view's header says whether its conversation's turn runs; its icon, how many turns
   *  run in all the conversations (the tabs' too). */
  showRunning(running: boolean, all: number): void {
    this.running = running;
    this.runningAll = all;
    if (!this.view) return;
    this.view.description = running ? "running…" : undefined;
    this.view.badge = all > 0 ? { value: all, tooltip: `${all} ACP turn${all === 1 ? "" : "s"} running` } : undefined;
  }

  /** Posts to the webview; held until it is ready. */
  post(m: HostToWebview): void {
    this.channel.post(m);
  }

  dispose(): void {
    for (const s of this.subs) s.dispose();
    this.channel.dispose();
  }
}

export function chatHtml(webview: vscode.Webview, dist: vscode.Uri): string {
  return buildChatHtml({
    cspSource: webview.cspSource,
    scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(dist, "webview.js")).toString(),
    styleUri: webview.asWebviewUri(vscode.Uri.joinPath(dist, "webview.css")).toString(),
    codiconUri: webview.asWebviewUri(vscode.Uri.joinPath(dist, "codicon.css")).toString(),
    nonce: makeNonce(),
    root: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath,
  });
}
