// The review of the agent's edits, as Copilot's and Zed's: every file the agent wrote through
// fs/write_text_file in the session is listed, each with Keep (forget the old text) and Undo
// (put the text back as it was before the agent's first write: a file the agent created is
// deleted), and each of its changes (hunks, acp-client's question::hunks through the wasm
// engine) with Accept (the change moves into the reviewed "before" text) and Reject (the change
// is taken out of the file). Undo and Reject go through the DocumentHost (one WorkspaceEdit,
// itself undoable in the editor). Whether and how a file is put back is acp-client's rule
// (edits::undo_step through the engine, the one `acp chat`'s /undo follows; its case table is
// tests/client/edits.json): refused when the file changed or was deleted since the agent's last
// write (the user's edits are never thrown away silently: the face asks first, and a forced
// undo writes a deleted file back), a created file is deleted, a created file deleted since
// needs nothing. This file keeps the per-session state (accepted changes move into "before").
//
// Checkpoints: each turn's first "before" text of every file it wrote is kept, so the files can
// be put back as they were before any earlier turn of the session (restoreTo). Bounded: the
// texts kept for checkpoints stay under MAX_CHECKPOINT_BYTES; past it the oldest turns are
// forgotten (restoring to before them is then refused, said so).
//
// Architecture Invariant: this file does not import `vscode`.

import type { EditHunk, UndoRefusal, UndoStep } from "../protocol/policy";

export interface EditedFile {
  path: string;
  /** The text before the agent's first write (minus the changes accepted since); null: the
   *  agent created the file (and nothing of it was accepted yet). */
  before: string | null;
  /** The text the agent's last write (or the last rejected change) left. */
  after: string;
  /** Writes to this file. */
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

/** The hunk computation (acp-client's, through the engine: ClientPolicy). */
export interface Hunker {
  editHunks(oldText: string, newText: string): EditHunk[];
  selectHunks(oldText: string, newText: string, take: readonly number[]): string;
}

/** acp-client's undo rule (ClientPolicy.undoStep, through the engine). */
export interface UndoRule {
  undoStep(before: string | null, after: string, now: string | undefined, force: boolean): UndoStep;
}

export type UndoResult = { undone: true; deleted: boolean } | { undone: false; reason: UndoRefusal };
export type HunkResult = { done: true; reviewed: boolean } | { done: false; reason: "unknown" | "stale" | "changed_since" };

/** One turn's checkpoint: the text of each file it wrote before its first write there (null:
 *  the file did not exist), and what its last write left. */
export interface Checkpoint {
  turn: number;
  label: string;
  files: Map<string, { before: string | null; after: string }>;
}

export type RestoreResult =
  | { restored: true; files: string[] }
  | { restored: false; reason: "unknown" | "forgotten" }
  | { restored: false; reason: "changed_since"; files: string[] };

/** The texts checkpoints keep at most (UTF-16 code units, both sides), oldest turns dropped. */
export const MAX_CHECKPOINT_BYTES = 64 * 1024 * 1024;

export class EditReview {
  private readonly files = new Map<string, EditedFile>();
  private checkpoints: Checkpoint[] = [];
  private turn = 0;
  /** The first turn still restorable to (turns before it were forgotten for the budget). */
  private oldestKept = 1;

  constructor(private readonly rule: UndoRule) {}

  /** A turn starts (`label`: what it asks, shown with its checkpoint). */
  beginTurn(label: string): void {
    this.turn++;
    this.checkpoints.push({ turn: this.turn, label, files: new Map() });
  }

  /** A write is about to be applied: `before` is the file's text now (null: no such file). */
  record(path: string, before: string | null, after: string): void {
    const known = this.files.get(path);
    if (known) {
      known.after = after;
      known.writes++;
    } else this.files.set(path, { path, before, after, writes: 1 });
    const cp = this.checkpoints[this.checkpoints.length - 1];
    if (cp) {
      const f = cp.files.get(path);
      if (f) f.after = after;
      else cp.files.set(path, { before, after });
      this.trim();
    }
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

  /** Keeps every file (the review is settled; checkpoints stay). */
  keepAll(): void {
    this.files.clear();
  }

  /** Forgets everything, checkpoints included (another session starts). A turn begun but
   *  not written yet (the first prompt opens the session) stays, as turn 1. */
  reset(): void {
    this.files.clear();
    const last = this.checkpoints[this.checkpoints.length - 1];
    this.checkpoints = last && last.files.size === 0 ? [{ ...last, turn: 1 }] : [];
    this.turn = this.checkpoints.length;
    this.oldestKept = 1;
  }

  /** The changes of a file under review, from its reviewed text to the agent's. */
  hunks(path: string, hunker: Hunker): EditHunk[] {
    const f = this.files.get(path);
    return f ? hunker.editHunks(f.before ?? "", f.after) : [];
  }

  /** Accepts change `index` of `path` (`expect`: the hunk as the face showed it; another one
   *  there now is `stale`). The file leaves the list once nothing is left to review. */
  acceptHunk(path: string, index: number, expect: EditHunk, hunker: Hunker): HunkResult {
    const f = this.files.get(path);
    if (!f) return { done: false, reason: "unknown" };
    const old = f.before ?? "";
    if (!sameHunk(hunker.editHunks(old, f.after)[index], expect)) return { done: false, reason: "stale" };
    f.before = hunker.selectHunks(old, f.after, [index]);
    return { done: true, reviewed: this.settle(f) };
  }

  /** Rejects change `index` of `path`: the file gets the agent's text without that change.
   *  `force`: even if the file changed since the agent's last write (the user confirmed). */
  async rejectHunk(path: string, index: number, expect: EditHunk, hunker: Hunker, target: EditTarget, force = false): Promise<HunkResult> {
    const f = this.files.get(path);
    if (!f) return { done: false, reason: "unknown" };
    const old = f.before ?? "";
    const all = hunker.editHunks(old, f.after);
    if (!sameHunk(all[index], expect)) return { done: false, reason: "stale" };
    const now = await target.currentText(path);
    const step = this.rule.undoStep(f.before, f.after, now, force);
    if (step.undo === "refuse") return { done: false, reason: "changed_since" };
    if (step.undo === "nothing") {
      // A file the agent created, deleted since: nothing of it is left to review.
      this.files.delete(path);
      return { done: true, reviewed: true };
    }
    const text = hunker.selectHunks(
      old,
      f.after,
      all.map((_, i) => i).filter((i) => i !== index),
    );
    if (f.before === null && text === "" && all.length === 1) {
      // The only change of a file the agent created: rejecting it is deleting the file.
      if (now !== undefined) await target.remove(path);
      this.files.delete(path);
      return { done: true, reviewed: true };
    }
    await target.replace(path, text);
    f.after = text;
    return { done: true, reviewed: this.settle(f) };
  }

  /** Puts the text back as before the agent's first write. `force`: even if the file changed
   *  since the agent's last write (the user confirmed). */
  async undo(path: string, target: EditTarget, force = false): Promise<UndoResult> {
    const f = this.files.get(path);
    if (!f) return { undone: false, reason: "unknown" };
    const step = this.rule.undoStep(f.before, f.after, await target.currentText(path), force);
    if (step.undo === "refuse") return { undone: false, reason: step.reason };
    await carryOut(path, step, target);
    this.files.delete(path);
    return { undone: true, deleted: f.before === null };
  }

  /** The turns whose "before" can be restored (those that wrote files), oldest first. */
  restorable(): Array<{ turn: number; label: string; files: number }> {
    return this.checkpoints
      .filter((c) => c.files.size > 0)
      .map((c) => ({ turn: c.turn, label: c.label, files: this.touchedFrom(c.turn).size }));
  }

  /** Puts every file the agent wrote in turn `turn` or later back as it was before that turn
   *  (a file created since is deleted). Refuses, naming them, when files changed since the
   *  agent's last write, unless `force`. The checkpoints from `turn` on and those files'
   *  review are forgotten (they describe edits no longer there). */
  async restoreTo(turn: number, target: EditTarget, force = false): Promise<RestoreResult> {
    if (turn < this.oldestKept) return { restored: false, reason: "forgotten" };
    if (!this.checkpoints.some((c) => c.turn === turn)) return { restored: false, reason: "unknown" };
    const touched = this.touchedFrom(turn);
    const steps: Array<[string, UndoStep]> = [];
    for (const [p, s] of touched) steps.push([p, this.rule.undoStep(s.before, s.after, await target.currentText(p), force)]);
    const changed = steps.filter(([, step]) => step.undo === "refuse").map(([p]) => p);
    if (changed.length) return { restored: false, reason: "changed_since", files: changed };
    for (const [p, step] of steps) {
      await carryOut(p, step, target);
      this.files.delete(p);
    }
    this.checkpoints = this.checkpoints.filter((c) => c.turn < turn);
    return { restored: true, files: [...touched.keys()] };
  }

  /** Each file written in `turn` or later: its text before the first of those turns that wrote
   *  it, and what the last one left. */
  private touchedFrom(turn: number): Map<string, { before: string | null; after: string }> {
    const out = new Map<string, { before: string | null; after: string }>();
    for (const c of this.checkpoints) {
      if (c.turn < turn) continue;
      for (const [p, s] of c.files) {
        const known = out.get(p);
        if (known) known.after = s.after;
        else out.set(p, { ...s });
      }
    }
    return out;
  }

  /** Drops the oldest checkpoints while their texts are over the budget. */
  private trim(): void {
    const size = (c: Checkpoint) => [...c.files.values()].reduce((n, s) => n + (s.before?.length ?? 0) + s.after.length, 0);
    let total = this.checkpoints.reduce((n, c) => n + size(c), 0);
    while (total > MAX_CHECKPOINT_BYTES && this.checkpoints.length > 1) {
      const gone = this.checkpoints.shift()!;
      total -= size(gone);
      this.oldestKept = gone.turn + 1;
    }
  }

  /** The file leaves the review when nothing is left to review. */
  private settle(f: EditedFile): boolean {
    if (f.before !== f.after) return false;
    this.files.delete(f.path);
    return true;
  }
}

/** Does what acp-client's undo step says (a refusal is the caller's to report). */
async function carryOut(path: string, step: UndoStep, target: EditTarget): Promise<void> {
  if (step.undo === "restore") await target.replace(path, step.text);
  else if (step.undo === "remove") await target.remove(path);
}

function sameHunk(a: EditHunk | undefined, b: EditHunk): boolean {
  return !!a && a.oldStart === b.oldStart && a.removed === b.removed && a.newStart === b.newStart && a.added === b.added;
}
