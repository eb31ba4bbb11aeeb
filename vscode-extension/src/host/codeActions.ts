// A code block's Copy and Insert buttons in the chat (webview/markdown.ts makes them; the view
// sends the block's text): to the clipboard, or into the active editor at its cursor (each
// selection replaced), as typed text (never as a snippet: `$` stays `$`). The text comes from
// the webview, so it is checked (a string, at most MAX_CODE_CHARS) before use.

import * as vscode from "vscode";
import { badCodeText } from "./codeText";

export async function copyCode(text: unknown): Promise<void> {
  const bad = badCodeText(text);
  if (bad !== undefined) return void vscode.window.showErrorMessage(`ACP: cannot copy: ${bad}`);
  await vscode.env.clipboard.writeText(text as string);
  vscode.window.setStatusBarMessage("ACP: code copied", 2000);
}

export async function insertCode(text: unknown): Promise<void> {
  const bad = badCodeText(text);
  if (bad !== undefined) return void vscode.window.showErrorMessage(`ACP: cannot insert: ${bad}`);
  const editor = vscode.window.activeTextEditor ?? vscode.window.visibleTextEditors[0];
  if (!editor) return void vscode.window.showInformationMessage("ACP: open a file to insert the code into");
  const ok = await editor.edit((b) => {
    for (const s of editor.selections) b.replace(s, text as string);
  });
  if (!ok) return void vscode.window.showErrorMessage(`ACP: could not insert the code into ${editor.document.fileName}`);
  await vscode.window.showTextDocument(editor.document, editor.viewColumn);
}
