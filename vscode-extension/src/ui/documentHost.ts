// DocumentHost for the fs bridge: open buffers first (unsaved edits included), writes as one
// undoable WorkspaceEdit, then saved so the agent and the disk agree. A path is a `file:` URI
// (Node), or in the browser the workspace folder's URI holding it (Platform.workspaceFiles).

import * as vscode from "vscode";
import { exists as fileExists } from "./editReview";
import type { DocumentHost } from "../bridges/fs";
import type { WorkspaceFiles } from "../platform/platform";

export class VsCodeDocumentHost implements DocumentHost {
  constructor(
    private readonly saveAfterWrite: () => boolean,
    /** The browser's path-to-URI mapping (undefined: `file:` URIs). */
    private readonly workspace?: WorkspaceFiles,
  ) {}

  openDocumentText(fsPath: string): string | undefined {
    if (this.workspace) {
      const uri = this.workspace.uriOf(fsPath)?.toString();
      return uri === undefined ? undefined : vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri)?.getText();
    }
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.scheme === "file" && d.uri.fsPath === fsPath);
    return doc?.getText();
  }

  async applyWrite(fsPath: string, content: string): Promise<void> {
    const uri = this.workspace ? this.workspace.uriOf(fsPath) : vscode.Uri.file(fsPath);
    if (!uri) throw new Error("it is outside the workspace folders (all that VS Code for the Web reaches)");
    const edit = new vscode.WorkspaceEdit();
    const exists = await fileExists(uri);
    if (exists) {
      const doc = await vscode.workspace.openTextDocument(uri);
      const all = new vscode.Range(doc.positionAt(0), doc.positionAt(doc.getText().length));
      edit.replace(uri, all, content, { label: "ACP agent edit", needsConfirmation: false });
    } else {
      edit.createFile(uri, { ignoreIfExists: true }, { label: "ACP agent edit", needsConfirmation: false });
      edit.insert(uri, new vscode.Position(0, 0), content, { label: "ACP agent edit", needsConfirmation: false });
    }
    const ok = await vscode.workspace.applyEdit(edit);
    if (!ok) throw new Error("the editor refused the edit");
    if (this.saveAfterWrite()) {
      const doc = await vscode.workspace.openTextDocument(uri);
      if (doc.isDirty && !(await doc.save())) throw new Error("the edit was applied but could not be saved");
    }
  }

  workspaceFolders(): string[] {
    if (this.workspace) return this.workspace.folderPaths();
    return (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === "file").map((f) => f.uri.fsPath);
  }
}
