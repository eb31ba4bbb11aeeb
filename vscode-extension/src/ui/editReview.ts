// The VS Code side of the edit review (bridges/edits.ts): undo through a WorkspaceEdit
// (replace the whole text, or delete a file the agent created), saved like the agent's write.

import * as vscode from "vscode";
import type { EditTarget } from "../bridges/edits";
import type { PendingAnswer, PendingFace } from "../host/pendingReview";

/** Whether a file is there (through VS Code's file system: the same on Node and in the browser). */
export function exists(uri: vscode.Uri): Promise<boolean> {
  return Promise.resolve(vscode.workspace.fs.stat(uri)).then(
    () => true,
    () => false,
  );
}

export class VsCodeEditTarget implements EditTarget {
  async currentText(p: string): Promise<string | undefined> {
    const open = vscode.workspace.textDocuments.find((d) => d.uri.scheme === "file" && d.uri.fsPath === p);
    if (open) return open.getText();
    try {
      return new TextDecoder().decode(await vscode.workspace.fs.readFile(vscode.Uri.file(p)));
    } catch {
      return undefined;
    }
  }

  async replace(p: string, text: string): Promise<void> {
    const uri = vscode.Uri.file(p);
    const edit = new vscode.WorkspaceEdit();
    if (await exists(uri)) {
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

/** The modal that settles a pending review before another conversation is shown. */
export class VsCodePendingFace implements PendingFace {
  async ask(count: number, names: string[]): Promise<PendingAnswer> {
    const more = count > names.length ? ` and ${count - names.length} more` : "";
    const pick = await vscode.window.showWarningMessage(
      `The agent's edits of ${count} file${count === 1 ? "" : "s"} are still under review`,
      { modal: true, detail: `${names.join(", ")}${more}.\nKeep them all, undo them all, or cancel and review them first.` },
      "Keep All",
      "Undo All",
    );
    return pick === "Keep All" ? "keep" : pick === "Undo All" ? "undo" : "cancel";
  }

  async confirmChanged(names: string[]): Promise<boolean> {
    const pick = await vscode.window.showWarningMessage(
      `Changed after the agent's edit: ${names.join(", ")}. Undo those too (your later changes are lost)?`,
      { modal: true, detail: "Otherwise they are kept as they are now." },
      "Undo Anyway",
      "Keep Them",
    );
    return pick === "Undo Anyway";
  }
}
