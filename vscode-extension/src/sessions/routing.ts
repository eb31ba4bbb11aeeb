// Which of the conversations open on one agent connection a message of the agent is for, and
// when a conversation's session may be folded into inside wasm (host/conversations.ts keeps
// the conversations; these are its rules, alone for tests).
//
// Architecture Invariant: this file does not import `vscode`.

/** What the rules read of a conversation. */
export interface Routable {
  readonly session: { sessionId: string } | null;
  /** A session is being opened for it (its id not known yet). */
  readonly opening: boolean;
}

/** The conversation of session `sessionId`; else the one opening a session, whose id is not
 *  known yet (updates may come before the answer that names it). At most one opens unfolded
 *  at a time (mayFoldInside), so "the one opening" is never ambiguous for an unknown id. */
export function ownerOf<T extends Routable>(all: readonly T[], sessionId: string): T | undefined {
  return all.find((c) => c.session?.sessionId === sessionId) ?? all.find((c) => c.opening);
}

/** `c`'s new session may be folded into inside wasm (the fast path) only while no other
 *  conversation has a session or opens one: a new session's engine holds every update whose
 *  session is not known yet, the others' too. */
export function mayFoldInside<T extends Routable>(all: readonly T[], c: T): boolean {
  return all.every((o) => o === c || (!o.session && !o.opening));
}

/** A new session of `c` starts the (shared) edit review over only when no other conversation
 *  has a session: their edits stay under review. */
export function mayResetEdits<T extends Routable>(all: readonly T[], c: T): boolean {
  return all.every((o) => o === c || !o.session);
}
