// The protocol trace panel's page: the shared viewer (trace-viewer/viewer.js, the one
// `acp trace` serves) over a source that asks the extension host, which answers from the
// trace it records (trace-viewer/model.js over trace/recorder.ts).

import type { Filter, TraceSource } from "../../../trace-viewer/model.js";
import { startViewer, type Viewer } from "../../../trace-viewer/viewer.js";
import type { HostToTrace, TraceOp, TraceToHost } from "./traceHtml";

declare function acquireVsCodeApi(): { postMessage(m: TraceToHost): void };

const vscode = acquireVsCodeApi();
const waiting = new Map<number, { ok: (v: unknown) => void; no: (e: Error) => void }>();
let next = 0;

function call(op: TraceOp, ...args: unknown[]): Promise<unknown> {
  return new Promise((ok, no) => {
    const id = ++next;
    waiting.set(id, { ok, no });
    vscode.postMessage({ type: "trace/req", id, op, args });
  });
}

const source: TraceSource = {
  status: () => call("status"),
  summary: () => call("summary"),
  rows: (f: Filter, from: number, count: number) => call("rows", f, from, count),
  locate: (f: Filter, n: number) => call("locate", f, n),
  turns: (session: string) => call("turns", session),
  message: (n: number) => call("message", n),
};

let viewer: Viewer | undefined;

window.addEventListener("message", (e: MessageEvent<HostToTrace>) => {
  const m = e.data;
  if (!m || typeof m !== "object") return;
  if (m.type === "trace/res") {
    const w = waiting.get(m.id);
    if (!w) return;
    waiting.delete(m.id);
    if (m.error !== undefined) w.no(new Error(m.error));
    else w.ok(m.value);
  } else if (m.type === "trace/init") {
    const root = document.getElementById("trace");
    if (root && !viewer) viewer = startViewer(root, source, { filter: m.filter, poll: 0 });
  } else if (m.type === "trace/changed") {
    void viewer?.refresh();
  }
});

vscode.postMessage({ type: "trace/ready" });
