import { test } from "node:test";
import assert from "node:assert/strict";
import { buildChatHtml, makeNonce } from "../../src/webview/html";

test("the chat page has a strict CSP with a fresh nonce and no inline script", () => {
  const nonce = makeNonce();
  assert.match(nonce, /^[A-Za-z0-9]{16,}$/);
  assert.notEqual(makeNonce(), nonce);
  const html = buildChatHtml({
    cspSource: "https://x.vscode-cdn.net",
    scriptUri: "https://x/webview.js",
    styleUri: "https://x/webview.css",
    codiconUri: "https://x/codicon.css",
    nonce,
  });
  const csp = /http-equiv="Content-Security-Policy" content="([^"]*)"/.exec(html)?.[1] ?? "";
  assert.match(csp, /^default-src 'none'; /);
  assert.match(csp, new RegExp(`script-src 'nonce-${nonce}'(;|$)`));
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*/);
  const scripts = [...html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)];
  assert.equal(scripts.length, 1);
  assert.match(scripts[0]![1]!, new RegExp(`nonce="${nonce}"`));
  assert.equal(scripts[0]![2]!.trim(), "", "no inline script body");
  assert.doesNotMatch(html, /\son\w+=/, "no inline event handlers");
});
