// What an editor tab's chat keeps across a window reload (the webview's state, which VS Code
// saves and hands to the tab's WebviewPanelSerializer): the session of the conversation it
// shows, by which the host shows that conversation again (host/conversations.ts restoreTab).
// The state comes back from the webview: it is read, never trusted.
//
// Architecture Invariant: this file does not import `vscode`.

/** The longest session id taken from a tab's state (an agent's ids are far shorter). */
export const MAX_SESSION_ID = 1024;

/** The webview state of a tab showing session `sessionId`. */
export interface TabState {
  sessionId: string;
}

/** The session a restored tab's `state` names, or undefined (none, or not one we wrote). */
export function restoredSessionId(state: unknown): string | undefined {
  if (!state || typeof state !== "object") return undefined;
  const id = (state as Record<string, unknown>).sessionId;
  return typeof id === "string" && id.length > 0 && id.length <= MAX_SESSION_ID ? id : undefined;
}
