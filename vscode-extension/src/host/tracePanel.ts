// "ACP: Show Protocol Trace": a webview panel with the shared trace viewer (trace-viewer/, as
// `acp trace` shows it in a browser) over the trace this window records (host/trace.ts),
// filtered to the current session at first. The page asks what it shows (a page of rows, a
// message, the summary) and the answers come from the recorder's model; it is told when the
// trace grows (at most every 300 ms).
// One reason to change: how the trace panel is opened or fed.

import * as vscode from "vscode";
import { modelSource } from "../../../trace-viewer/model.js";
import type { TraceRecorder } from "../trace/recorder";
import { makeNonce } from "../webview/html";
import { buildTraceHtml, TRACE_OPS, type HostToTrace, type TraceToHost } from "../webview/traceHtml";

const CHANGED_EVERY_MS = 300;

export class TracePanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private readonly subs: vscode.Disposable[] = [];
  private session: string | undefined;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly recorder: TraceRecorder,
  ) {}

  /** Opens the panel (or brings it forward), showing `session`'s messages first. */
  show(session: string | undefined): void {
    this.session = session;
    if (this.panel) {
      this.panel.reveal();
      void this.post({ type: "trace/changed" });
      return;
    }
    const dist = vscode.Uri.joinPath(this.extensionUri, "dist");
    const panel = (this.panel = vscode.window.createWebviewPanel("acp.trace", "ACP Protocol Trace", vscode.ViewColumn.Active, {
      enableScripts: true,
      localResourceRoots: [dist],
    }));
    const webview = panel.webview;
    webview.html = buildTraceHtml({
      cspSource: webview.cspSource,
      scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(dist, "trace.js")).toString(),
      styleUri: webview.asWebviewUri(vscode.Uri.joinPath(dist, "trace.css")).toString(),
      nonce: makeNonce(),
    });
    const source = modelSource(this.recorder.model);
    let timer: NodeJS.Timeout | undefined;
    const changed = this.recorder.onChange(() => {
      timer ??= setTimeout(() => {
        timer = undefined;
        void this.post({ type: "trace/changed" });
      }, CHANGED_EVERY_MS);
    });
    const messages = webview.onDidReceiveMessage(async (m: TraceToHost) => {
      if (!m || typeof m !== "object") return;
      if (m.type === "trace/ready") {
        void this.post({ type: "trace/init", filter: this.session ? { session: this.session, group: true } : { group: true } });
        return;
      }
      if (m.type !== "trace/req" || typeof m.id !== "number" || !TRACE_OPS.includes(m.op) || !Array.isArray(m.args)) return;
      try {
        const call = source[m.op] as (...a: unknown[]) => Promise<unknown>;
        void this.post({ type: "trace/res", id: m.id, value: await call(...m.args) });
      } catch (e) {
        void this.post({ type: "trace/res", id: m.id, error: (e as Error).message });
      }
    });
    this.subs.push(
      changed,
      messages,
      panel.onDidDispose(() => {
        clearTimeout(timer);
        for (const s of this.subs.splice(0)) s.dispose();
        this.panel = undefined;
      }),
    );
  }

  private post(m: HostToTrace): Thenable<boolean> | undefined {
    return this.panel?.webview.postMessage(m);
  }

  dispose(): void {
    this.panel?.dispose();
  }
}
