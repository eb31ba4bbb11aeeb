// The chat webview's HTML. Strict CSP: nothing by default; scripts only with this load's nonce
// (no inline script, no eval); styles and images only from the extension's own files.
import * as crypto from "node:crypto";

export function makeNonce(): string {
  return crypto
    .randomBytes(18)
    .toString("base64")
    .replace(/[^A-Za-z0-9]/g, "");
}

export interface ChatHtmlParts {
  cspSource: string;
  scriptUri: string;
  styleUri: string;
  nonce: string;
}

const attr = (s: string) => s.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");

export function buildChatHtml(p: ChatHtmlParts): string {
  const csp = [
    "default-src 'none'",
    `style-src ${p.cspSource}`,
    `script-src 'nonce-${p.nonce}'`,
    `img-src ${p.cspSource}`,
    `font-src ${p.cspSource}`,
  ].join("; ");
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${attr(csp)}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${attr(p.styleUri)}">
<title>ACP Chat</title>
</head>
<body>
<header>
  <span id="status" data-state="idle">ACP: not started</span>
  <span id="title"></span>
  <button id="new-session" title="Start a new session">New session</button>
</header>
<div id="session-controls"></div>
<main id="transcript" aria-live="polite"></main>
<div id="plan"></div>
<div id="session-info"></div>
<footer>
  <textarea id="prompt" rows="3" placeholder="Ask the agent… (Enter to send, Shift+Enter for a new line)" aria-label="Prompt"></textarea>
  <div class="buttons">
    <button id="send">Send</button>
    <button id="cancel" disabled>Cancel</button>
  </div>
</footer>
<script nonce="${attr(p.nonce)}" src="${attr(p.scriptUri)}"></script>
</body>
</html>`;
}
