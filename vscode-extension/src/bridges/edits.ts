// The review of a turn's edits, as Copilot's and Zed's: every file the agent wrote through
// fs/write_text_file during the turn is listed after it, each with Keep (forget the old text)
// and Undo (put the text back as it was before the agent's first write of the turn: a file the
// agent created is deleted). Undo goes through the DocumentHost (one WorkspaceEdit, itself
// undoable in the editor), and refuses when the file changed since the agent's last write
// (the user's edits are never thrown away silently: the face asks first).
//
// Architecture Invariant: this file does not import `vscode`.

export interface EditedFile {
  path: string;
  /** The text before the agent's first write this turn; null: the agent created the file. */
  before: string | null;
  /** The text the agent's last write left. */
  after: string;
  /** Writes to this file this turn. */
  writes: number;
}

/** What undo needs from the editor side. */
export interface EditTarget {
  /** The file's current text (open buffer first), undefined when it does not exist. */
  currentText(path: string): Promise<string | undefined>;
  /** Replaces the file's whole text (one undoable edit, saved). */
  replace(path: string, text: string): Promise<void>;
  /** Deletes a file the agent created. */
  remove(path: string): Promise<void>;
}

export type UndoResult = { undone: true; deleted: boolean } | { undone: false; reason: "unknown" | "changed_since" };

export class EditReview {
  private readonly files = new Map<string, EditedFile>();

  /** A write is about to be applied: `before` is the file's text now (null: no such file). */
  record(path: string, before: string | null, after: string): void {
    const known = this.files.get(path);
    if (known) {
      known.after = after;
      known.writes++;
    } else this.files.set(path, { path, before, after, writes: 1 });
  }

  /** The files to review, in the order first written. */
  list(): EditedFile[] {
    return [...this.files.values()];
  }

  get size(): number {
    return this.files.size;
  }

  /** Keeps the agent's text: the file leaves the list. */
  keep(path: string): boolean {
    return this.files.delete(path);
  }

  /** Keeps every file (a new turn starts: the last turn's edits are accepted). */
  keepAll(): void {
    this.files.clear();
  }

  /** Puts the text back as before the agent's first write. `force`: even if the file changed
   *  since the agent's last write (the user confirmed). */
  async undo(path: string, target: EditTarget, force = false): Promise<UndoResult> {
    const f = this.files.get(path);
    if (!f) return { undone: false, reason: "unknown" };
    const now = await target.currentText(path);
    if (!force && now !== undefined && now !== f.after) return { undone: false, reason: "changed_since" };
    if (f.before === null) {
      if (now !== undefined) await target.remove(path);
    } else await target.replace(path, f.before);
    this.files.delete(path);
    return { undone: true, deleted: f.before === null };
  }
}
