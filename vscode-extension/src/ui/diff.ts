// Diffs from tool calls, opened in VS Code's diff editor. Both sides are virtual documents of the
// `acp-diff` scheme, served from memory (the agent's oldText/newText), so nothing is written.

import * as vscode from "vscode";

export const DIFF_SCHEME = "acp-diff";

export class DiffContentProvider implements vscode.TextDocumentContentProvider {
  private readonly docs = new Map<string, string>();
  private next = 1;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.docs.get(uri.query) ?? "";
  }

  async open(filePath: string, oldText: string | null | undefined, newText: string, what = "agent's proposed change"): Promise<void> {
    const id = this.next++;
    const base = vscode.Uri.from({ scheme: DIFF_SCHEME, path: filePath.startsWith("/") ? filePath : `/${filePath}` });
    const left = base.with({ query: `${id}-old` });
    const right = base.with({ query: `${id}-new` });
    this.docs.set(`${id}-old`, oldText ?? "");
    this.docs.set(`${id}-new`, newText);
    const name = filePath.split(/[\\/]/).pop() ?? filePath;
    await vscode.commands.executeCommand("vscode.diff", left, right, `${name} (${what})`, { preview: true });
  }
}
