// Accept / Reject on each change inside the edit review's diff editor (ui/diff.ts's review
// diffs): a CodeLens above each hunk of acp-client's hunks, with its +N −M counts. The commands
// go to the same actions as the chat's edits row (host/webviewRouter.ts's hunkAction).

import * as vscode from "vscode";
import type { EditReview, Hunker } from "../bridges/edits";
import type { DiffContentProvider } from "./diff";

export const ACCEPT_HUNK_COMMAND = "acp.review.acceptHunk";
export const REJECT_HUNK_COMMAND = "acp.review.rejectHunk";

export class HunkLensProvider implements vscode.CodeLensProvider {
  readonly onDidChangeCodeLenses: vscode.Event<void>;

  constructor(
    private readonly diffs: DiffContentProvider,
    private readonly edits: EditReview,
    private readonly hunker: Hunker,
  ) {
    this.onDidChangeCodeLenses = diffs.onDidChangeReview;
  }

  provideCodeLenses(doc: vscode.TextDocument): vscode.CodeLens[] {
    const file = this.diffs.reviewedPath(doc.uri);
    if (!file) return [];
    const last = Math.max(doc.lineCount - 1, 0);
    return this.edits.hunks(file, this.hunker).flatMap((h, i) => {
      // Above the first added line; a pure removal: on the line it follows.
      const line = Math.min(Math.max(h.newStart - (h.added > 0 ? 1 : 0), 0), last);
      const range = new vscode.Range(line, 0, line, 0);
      const args = [file, i, h];
      return [
        new vscode.CodeLens(range, {
          title: `$(check) Accept change (+${h.added} −${h.removed})`,
          command: ACCEPT_HUNK_COMMAND,
          arguments: args,
        }),
        new vscode.CodeLens(range, { title: "$(discard) Reject", command: REJECT_HUNK_COMMAND, arguments: args }),
      ];
    });
  }
}
