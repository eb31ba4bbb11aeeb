// The protocol trace panel's HTML (host/tracePanel.ts): the same strict CSP as the chat's
// (nothing by default; scripts only with this load's nonce; styles only from the extension's
// files), the shared viewer (trace-viewer/, bundled as dist/trace.js and dist/trace.css).

export interface TraceHtmlParts {
  cspSource: string;
  scriptUri: string;
  styleUri: string;
  nonce: string;
}

/** Messages between the panel's page and the extension host: the viewer's questions and their
 *  answers (what `acp trace`'s HTTP API answers), the filter to start with, and "the trace
 *  grew". */
export type TraceOp = "status" | "summary" | "rows" | "locate" | "turns" | "message";
export const TRACE_OPS: readonly TraceOp[] = ["status", "summary", "rows", "locate", "turns", "message"];
export type TraceToHost = { type: "trace/ready" } | { type: "trace/req"; id: number; op: TraceOp; args: unknown[] };
export type HostToTrace =
  | { type: "trace/init"; filter: { session?: string; group?: boolean } }
  | { type: "trace/res"; id: number; value?: unknown; error?: string }
  | { type: "trace/changed" };

const attr = (s: string) => s.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");

export function buildTraceHtml(p: TraceHtmlParts): string {
  const csp = ["default-src 'none'", `style-src ${p.cspSource}`, `script-src 'nonce-${p.nonce}'`, `img-src ${p.cspSource} data:`].join(
    "; ",
  );
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${attr(csp)}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${attr(p.styleUri)}">
<title>ACP Protocol Trace</title>
</head>
<body>
<div id="trace" class="tv-vscode"></div>
<script nonce="${attr(p.nonce)}" src="${attr(p.scriptUri)}"></script>
</body>
</html>`;
}
