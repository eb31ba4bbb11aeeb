// Never lose a pending review: before the chat shows another conversation (New Session, a
// history entry), the agent's edits still under review are settled by the user — Keep all, Undo
// all, or Cancel (nothing changes and the conversation stays). The question itself is the face's
// (a modal); this file only decides what each answer does.
//
// Architecture Invariant: this file does not import `vscode`.

import type { EditReview, EditTarget } from "../bridges/edits";

export type PendingAnswer = "keep" | "undo" | "cancel";

export interface PendingFace {
  /** Asks what to do with `count` files under review (`names`: a few of them). */
  ask(count: number, names: string[]): Promise<PendingAnswer>;
  /** Some files changed since the agent's write: undo them anyway (true) or keep them. */
  confirmChanged(names: string[]): Promise<boolean>;
}

/** True when the caller may go on (nothing pending, or the user kept or undid it all). */
export async function settlePendingReview(
  edits: EditReview,
  target: EditTarget,
  face: PendingFace,
  baseName: (p: string) => string,
): Promise<boolean> {
  if (edits.size === 0) return true;
  const names = edits.list().map((f) => baseName(f.path));
  const answer = await face.ask(names.length, names.slice(0, 5));
  if (answer === "cancel") return false;
  if (answer === "keep") {
    edits.keepAll();
    return true;
  }
  const changed: string[] = [];
  for (const f of edits.list()) {
    const r = await edits.undo(f.path, target);
    if (!r.undone && r.reason === "changed_since") changed.push(f.path);
  }
  if (changed.length) {
    const force = await face.confirmChanged(changed.map(baseName));
    for (const p of changed) {
      if (force) await edits.undo(p, target, true);
      else edits.keep(p);
    }
  }
  return true;
}
