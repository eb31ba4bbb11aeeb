// The chat's edits row from the edit review (bridges/edits.ts): each file with its +N −M counts
// and its changes (acp-client's hunks), and the checkpoints the files can be restored to.
//
// Architecture Invariant: this file does not import `vscode`.

import { hostPaths } from "../platform/hostPaths";
import type { EditReview, Hunker } from "../bridges/edits";
import type { HostToWebview } from "../webview/messages";

/** Changes listed per file at most (the rest: Keep / Undo the file, or the diff). */
export const MAX_LISTED_HUNKS = 50;

export function editsMessage(edits: EditReview, hunker: Hunker, root?: string): Extract<HostToWebview, { type: "edits" }> {
  return {
    type: "edits",
    files: edits.list().map((f) => {
      const hunks = edits.hunks(f.path, hunker);
      return {
        path: f.path,
        name: hostPaths().basename(f.path),
        shown: relativeTo(root, f.path),
        created: f.before === null,
        added: hunks.reduce((n, h) => n + h.added, 0),
        removed: hunks.reduce((n, h) => n + h.removed, 0),
        hunks: hunks.slice(0, MAX_LISTED_HUNKS),
      };
    }),
    checkpoints: edits.restorable(),
  };
}

/** `p` relative to `root` when inside it, else `p`. */
export function relativeTo(root: string | undefined, p: string): string {
  if (!root) return p;
  const r = hostPaths().relative(root, p);
  return r && !r.startsWith("..") && !hostPaths().isAbsolute(r) ? r : p;
}
