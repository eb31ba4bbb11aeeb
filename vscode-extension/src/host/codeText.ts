// The check of a code block's text the chat view sends for Copy or Insert (host/codeActions.ts):
// it comes from the webview, so it is checked before use. No `vscode` import (tested under node).

/** The largest code text accepted from the view (agent messages are bounded smaller anyway). */
export const MAX_CODE_CHARS = 4_000_000;

/** Why `text` cannot be copied or inserted, or undefined when it can. */
export function badCodeText(text: unknown): string | undefined {
  if (typeof text !== "string") return "the code block's text did not arrive";
  if (text.length > MAX_CODE_CHARS) return `the code block is too large (${text.length} characters; at most ${MAX_CODE_CHARS})`;
  return undefined;
}
