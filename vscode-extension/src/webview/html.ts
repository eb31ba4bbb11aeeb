// The chat webview's HTML. Strict CSP: nothing by default; scripts only with this load's nonce
// (no inline script, no eval); styles and images only from the extension's own files.

/** 24 random characters from [A-Za-z0-9] (Web Crypto: Node and the browser alike). */
export function makeNonce(): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  // 248 = 4 * 62: taking bytes below it keeps every character equally likely.
  let out = "";
  while (out.length < 24) {
    for (const b of globalThis.crypto.getRandomValues(new Uint8Array(32))) {
      if (b < 248 && out.length < 24) out += alphabet[b % 62];
    }
  }
  return out;
}

export interface ChatHtmlParts {
  cspSource: string;
  scriptUri: string;
  styleUri: string;
  /** VS Code's icon font's stylesheet (@vscode/codicons). */
  codiconUri: string;
  nonce: string;
  /** The workspace folder (tool cards show paths relative to it). */
  root?: string;
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
<link rel="stylesheet" href="${attr(p.codiconUri)}">
<link rel="stylesheet" href="${attr(p.styleUri)}">
<title>ACP Chat</title>
</head>
<body data-root="${attr(p.root ?? "")}">
<header>
  <span id="status" data-state="idle">ACP: not started</span>
  <span id="title"></span>
  <span id="header-usage"></span>
  <button id="new-session" class="icon" title="New session" aria-label="New session"><i class="codicon codicon-add"></i></button>
</header>
<div id="session-controls"></div>
<main id="transcript" aria-live="polite"></main>
<div id="plan"></div>
<div id="session-info"></div>
<div id="edits" aria-label="Edits to review"></div>
<footer>
  <div id="completions" role="listbox" hidden></div>
  <div id="input-error" role="alert" hidden></div>
  <div id="attachments"></div>
  <textarea id="prompt" rows="3" placeholder="Ask the agent… (/ for commands, @ to mention files; Enter to send, Shift+Enter for a new line)" aria-label="Prompt"></textarea>
  <div class="buttons">
    <button id="attach-selection" class="icon secondary" title="Attach the editor's selection" aria-label="Attach the editor's selection"><i class="codicon codicon-selection"></i></button>
    <button id="attach-image" class="icon secondary" title="Attach an image" aria-label="Attach an image"><i class="codicon codicon-file-media"></i></button>
    <input id="image-file" type="file" accept="image/*" hidden>
    <span class="spacer"></span>
    <button id="cancel" class="secondary" disabled title="Stop the turn (Escape)"><i class="codicon codicon-debug-stop"></i> Stop</button>
    <button id="send" title="Send (Enter)"><i class="codicon codicon-send"></i> Send</button>
  </div>
</footer>
<script nonce="${attr(p.nonce)}" src="${attr(p.scriptUri)}"></script>
</body>
</html>`;
}
