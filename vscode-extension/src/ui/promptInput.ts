// The VS Code side of the prompt input: `@` completions (workspace files through
// findFiles, bounded; symbols through the workspace symbol providers, bounded in count and
// time) and the active editor's selection as an attachment.

import { hostPaths } from "../platform/hostPaths";
import * as vscode from "vscode";
import type { CompletionItem, ViewAttachment } from "../webview/messages";

const MAX_FILES = 20;
const MAX_SYMBOLS = 10;
const SYMBOL_TIMEOUT_MS = 1500;

/** A glob matching paths that contain `query` (glob characters escaped, any case). */
export function mentionGlob(query: string): string {
  const q = query.replace(/[[\]{}*?!\\]/g, "");
  const any = [...q].map((c) => (/[a-z]/i.test(c) ? `[${c.toLowerCase()}${c.toUpperCase()}]` : c)).join("");
  return `**/*${any}*`;
}

export async function mentionCompletions(query: string): Promise<CompletionItem[]> {
  const root = (vscode.workspace.workspaceFolders ?? []).find((f) => f.uri.scheme === "file");
  const rel = (p: string) => (root ? hostPaths().relative(root.uri.fsPath, p) : p);
  const files = vscode.workspace.findFiles(mentionGlob(query), "**/{node_modules,.git,target,dist,out}/**", MAX_FILES).then(
    (uris) =>
      uris
        .filter((u) => u.scheme === "file")
        .map(
          (u): CompletionItem => ({
            label: hostPaths().basename(u.fsPath),
            detail: rel(u.fsPath),
            icon: "file",
            attachment: { kind: "file", path: u.fsPath, name: hostPaths().basename(u.fsPath) },
          }),
        )
        .sort((a, b) => a.detail.length - b.detail.length),
    () => [],
  );
  const symbols: Promise<CompletionItem[]> =
    query.length < 2
      ? Promise.resolve([])
      : Promise.race([
          Promise.resolve(vscode.commands.executeCommand<vscode.SymbolInformation[]>("vscode.executeWorkspaceSymbolProvider", query)).then(
            (found) =>
              (found ?? [])
                .filter((s) => s.location?.uri?.scheme === "file")
                .slice(0, MAX_SYMBOLS)
                .map(
                  (s): CompletionItem => ({
                    label: s.name,
                    detail: `${rel(s.location.uri.fsPath)}:${s.location.range.start.line + 1}`,
                    icon: "symbol",
                    attachment: { kind: "symbol", path: s.location.uri.fsPath, name: s.name, line: s.location.range.start.line + 1 },
                  }),
                ),
            () => [],
          ),
          new Promise<CompletionItem[]>((r) => setTimeout(() => r([]), SYMBOL_TIMEOUT_MS)),
        ]);
  const [f, s] = await Promise.all([files, symbols]);
  return [...f, ...s];
}

/** The active editor's selection, or why there is none. */
export function selectionAttachment(): ViewAttachment | string {
  const ed = vscode.window.activeTextEditor;
  if (!ed) return "No editor is active: open a file and select some text to attach.";
  if (ed.document.uri.scheme !== "file") return "The active editor is not a file on disk.";
  const sel = ed.selection;
  if (sel.isEmpty) return "Nothing is selected in the active editor.";
  const endLine = sel.end.character === 0 && sel.end.line > sel.start.line ? sel.end.line : sel.end.line + 1;
  return {
    kind: "selection",
    path: ed.document.uri.fsPath,
    name: hostPaths().basename(ed.document.uri.fsPath),
    lines: { start: sel.start.line + 1, end: endLine },
    text: ed.document.getText(sel),
    language: ed.document.languageId,
  };
}
