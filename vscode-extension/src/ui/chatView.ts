// The chat webview view: strict CSP (default-src 'none'; scripts only with a fresh nonce; styles
// from the extension and the nonce'd block), local resources only from dist/.

import * as vscode from "vscode";
import { buildChatHtml, makeNonce } from "../webview/html";
import type { HostToWebview, WebviewToHost } from "../webview/messages";

export const CHAT_VIEW_ID = "acp.chat";

export class ChatViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  private view: vscode.WebviewView | undefined;
  private ready = false;
  private backlog: HostToWebview[] = [];
  private readonly subs: vscode.Disposable[] = [];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly onMessage: (m: WebviewToHost) => void,
  ) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.ready = false;
    const dist = vscode.Uri.joinPath(this.extensionUri, "dist");
    view.webview.options = { enableScripts: true, localResourceRoots: [dist] };
    view.webview.html = chatHtml(view.webview, dist);
    this.subs.push(
      view.webview.onDidReceiveMessage((m: WebviewToHost) => {
        if (!m || typeof m !== "object" || typeof m.type !== "string") return;
        if (m.type === "ready") {
          this.ready = true;
          const pending = this.backlog;
          this.backlog = [];
          for (const p of pending) void view.webview.postMessage(p);
        }
        this.onMessage(m);
      }),
      view.onDidDispose(() => {
        this.view = undefined;
        this.ready = false;
      }),
    );
  }

  get isVisible(): boolean {
    return !!this.view?.visible;
  }

  /** Posts to the webview; held until it is ready (bounded: only the latest state matters then). */
  post(m: HostToWebview): void {
    if (this.view && this.ready) {
      void this.view.webview.postMessage(m);
      return;
    }
    this.backlog.push(m);
    if (this.backlog.length > 2000) this.backlog.splice(0, this.backlog.length - 2000);
  }

  dispose(): void {
    for (const s of this.subs) s.dispose();
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
