// One chat webview's message channel, for the side view (chatView.ts) and an editor tab
// (chatPanel.ts) alike: messages to it held until it says it is ready (bounded: only the
// latest state matters then), its messages checked for a `type` and handed on, and whether it
// has keyboard focus (it says when it gets or loses it).

import * as vscode from "vscode";
import type { HostToWebview, WebviewToHost } from "../webview/messages";

/** Messages held for a webview not ready yet, at most. */
const BACKLOG = 2000;

export class ChatChannel implements vscode.Disposable {
  private webview: vscode.Webview | undefined;
  private ready = false;
  private backlog: HostToWebview[] = [];
  private hasFocus = false;
  private sub: vscode.Disposable | undefined;

  constructor(private readonly onMessage: (m: WebviewToHost) => void) {}

  /** `webview` (its html just set) is the one the channel talks to now. */
  attach(webview: vscode.Webview): void {
    this.sub?.dispose();
    this.webview = webview;
    this.ready = false;
    this.hasFocus = false;
    this.sub = webview.onDidReceiveMessage((m: WebviewToHost) => {
      if (!m || typeof m !== "object" || typeof m.type !== "string") return;
      if (m.type === "focus") {
        this.hasFocus = m.focused === true;
        return;
      }
      if (m.type === "ready") {
        this.ready = true;
        const pending = this.backlog;
        this.backlog = [];
        for (const p of pending) void webview.postMessage(p);
      }
      this.onMessage(m);
    });
  }

  /** The webview is gone (or hidden: it cannot have focus). */
  detach(): void {
    this.sub?.dispose();
    this.sub = undefined;
    this.webview = undefined;
    this.ready = false;
    this.hasFocus = false;
  }

  /** It was hidden: it has no focus. */
  blurred(): void {
    this.hasFocus = false;
  }

  /** The webview has keyboard focus. */
  get focused(): boolean {
    return this.hasFocus;
  }

  /** Posts to the webview; held until it is ready. */
  post(m: HostToWebview): void {
    if (this.webview && this.ready) {
      void this.webview.postMessage(m);
      return;
    }
    this.backlog.push(m);
    if (this.backlog.length > BACKLOG) this.backlog.splice(0, this.backlog.length - BACKLOG);
  }

  dispose(): void {
    this.detach();
  }
}
