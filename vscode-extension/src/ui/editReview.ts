// The VS Code side of the edit review (bridges/edits.ts): undo through a WorkspaceEdit
// (replace the whole text, or delete a file the agent created), saved like the agent's write.

import * as fs from "node:fs";
import * as vscode from "vscode";
import type { EditTarget } from "../bridges/edits";

export class VsCodeEditTarget implements EditTarget {
  async currentText(p: string): Promise<string | undefined> {
    const open = vscode.workspace.textDocuments.find((d) => d.uri.scheme === "file" && d.uri.fsPath === p);
    if (open) return open.getText();
    try {
      return await fs.promises.readFile(p, "utf8");
    } catch {
      return undefined;
    }
  }

  async replace(p: string, text: string): Promise<void> {
    const uri = vscode.Uri.file(p);
    const edit = new vscode.WorkspaceEdit();
    if (fs.existsSync(p)) {
      const doc = await vscode.workspace.openTextDocument(uri);
      edit.replace(uri, new vscode.Range(doc.positionAt(0), doc.positionAt(doc.getText().length)), text, {
        label: "Undo ACP agent edit",
        needsConfirmation: false,
      });
    } else {
      edit.createFile(uri, { ignoreIfExists: true });
      edit.insert(uri, new vscode.Position(0, 0), text);
    }
    if (!(await vscode.workspace.applyEdit(edit))) throw new Error("the editor refused the edit");
    const doc = await vscode.workspace.openTextDocument(uri);
    if (doc.isDirty) await doc.save();
  }

  async remove(p: string): Promise<void> {
    const edit = new vscode.WorkspaceEdit();
    edit.deleteFile(vscode.Uri.file(p), { ignoreIfNotExists: true });
    if (!(await vscode.workspace.applyEdit(edit))) throw new Error("the editor refused to delete the file");
  }
}
