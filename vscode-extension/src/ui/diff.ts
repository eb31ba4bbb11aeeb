// Diffs opened in VS Code's diff editor. Both sides are virtual documents of the `acp-diff`
// scheme, served from memory, so nothing is written: a tool call's oldText/newText, a proposed
// change under a permission question (its tabs close once the question is answered), and the
// edit review's diff of a file (refreshed as its changes are accepted or rejected; the CodeLens
// of ui/hunkLens.ts offers Accept / Reject on each change).

import * as vscode from "vscode";

export const DIFF_SCHEME = "acp-diff";

/** The review's texts of a file under review, or undefined when it left the review. */
export type ReviewSource = (path: string) => { before: string | null; after: string } | undefined;

export class DiffContentProvider implements vscode.TextDocumentContentProvider {
  private readonly docs = new Map<string, string>();
  private next = 1;
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  /** The review diff open for a file: its id. */
  private readonly reviews = new Map<string, number>();
  private readonly reviewPaths = new Map<number, string>();
  private readonly lensesChanged = new vscode.EventEmitter<void>();
  /** A review diff's content changed (its CodeLens are recomputed). */
  readonly onDidChangeReview = this.lensesChanged.event;
  reviewSource: ReviewSource = () => undefined;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.docs.get(uri.query) ?? "";
  }

  /** Opens a diff; the id it returns closes it (closeTabs). */
  async open(filePath: string, oldText: string | null | undefined, newText: string, what = "agent's proposed change"): Promise<number> {
    const id = this.next++;
    await this.show(id, filePath, oldText ?? "", newText, what);
    return id;
  }

  /** The edit review's diff of a file (one per file, refreshed in place). */
  async openReview(filePath: string, before: string | null, after: string): Promise<void> {
    let id = this.reviews.get(filePath);
    if (id === undefined) {
      id = this.next++;
      this.reviews.set(filePath, id);
      this.reviewPaths.set(id, filePath);
    }
    await this.show(id, filePath, before ?? "", after, "agent's edit: Accept or Reject each change");
  }

  /** The file a review diff document shows, if `uri` is one's right side. */
  reviewedPath(uri: vscode.Uri): string | undefined {
    if (uri.scheme !== DIFF_SCHEME) return undefined;
    const m = /^(\d+)-new$/.exec(uri.query);
    return m ? this.reviewPaths.get(Number(m[1])) : undefined;
  }

  /** The review of `filePath` changed: its open diff shows the new texts, or closes when the
   *  file left the review. */
  refreshReview(filePath: string): void {
    const id = this.reviews.get(filePath);
    if (id === undefined) return;
    const src = this.reviewSource(filePath);
    if (!src) {
      this.reviews.delete(filePath);
      this.reviewPaths.delete(id);
      void this.closeTabs([id]);
      return;
    }
    const base = this.base(filePath);
    this.docs.set(`${id}-old`, src.before ?? "");
    this.docs.set(`${id}-new`, src.after);
    this.changed.fire(base.with({ query: `${id}-old` }));
    this.changed.fire(base.with({ query: `${id}-new` }));
    this.lensesChanged.fire();
  }

  /** Closes the diff tabs of these ids (and forgets their texts). */
  async closeTabs(ids: number[]): Promise<void> {
    const queries = new Set(ids.map((id) => `${id}-new`));
    const tabs = vscode.window.tabGroups.all.flatMap((g) =>
      g.tabs.filter(
        (t) => t.input instanceof vscode.TabInputTextDiff && t.input.modified.scheme === DIFF_SCHEME && queries.has(t.input.modified.query),
      ),
    );
    if (tabs.length) await vscode.window.tabGroups.close(tabs);
    for (const id of ids) {
      this.docs.delete(`${id}-old`);
      this.docs.delete(`${id}-new`);
    }
  }

  private base(filePath: string): vscode.Uri {
    return vscode.Uri.from({ scheme: DIFF_SCHEME, path: filePath.startsWith("/") ? filePath : `/${filePath}` });
  }

  private async show(id: number, filePath: string, oldText: string, newText: string, what: string): Promise<void> {
    const base = this.base(filePath);
    const left = base.with({ query: `${id}-old` });
    const right = base.with({ query: `${id}-new` });
    this.docs.set(`${id}-old`, oldText);
    this.docs.set(`${id}-new`, newText);
    const name = filePath.split(/[\\/]/).pop() ?? filePath;
    await vscode.commands.executeCommand("vscode.diff", left, right, `${name} (${what})`, { preview: true });
  }
}
