// The chat webview view: strict CSP (default-src 'none'; scripts only with a fresh nonce; styles
// from the extension and the nonce'd block), local resources only from dist/.

import * as crypto from "node:crypto";
import * as vscode from "vscode";
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

export function makeNonce(): string {
  return crypto.randomBytes(18).toString("base64").replace(/[^A-Za-z0-9]/g, "");
}

export function chatHtml(webview: vscode.Webview, dist: vscode.Uri): string {
  const nonce = makeNonce();
  const script = webview.asWebviewUri(vscode.Uri.joinPath(dist, "webview.js"));
  const style = webview.asWebviewUri(vscode.Uri.joinPath(dist, "webview.css"));
  const csp = [
    "default-src 'none'",
    `style-src ${webview.cspSource}`,
    `script-src 'nonce-${nonce}'`,
    `img-src ${webview.cspSource}`,
    `font-src ${webview.cspSource}`,
  ].join("; ");
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${style}">
<title>ACP Chat</title>
</head>
<body>
<header>
  <span id="status" data-state="idle">ACP: not started</span>
  <button id="new-session" title="Start a new session">New session</button>
</header>
<div id="session-controls"></div>
<main id="transcript" aria-live="polite"></main>
<footer>
  <textarea id="prompt" rows="3" placeholder="Ask the agent… (Enter to send, Shift+Enter for a new line)" aria-label="Prompt"></textarea>
  <div class="buttons">
    <button id="send">Send</button>
    <button id="cancel" disabled>Cancel</button>
  </div>
</footer>
<script nonce="${nonce}" src="${script}"></script>
</body>
</html>`;
}
