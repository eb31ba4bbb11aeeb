// Messages between the extension host and the chat webview (both directions are validated by
// the receiver: the webview trusts nothing but this shape, and renders agent text safely).
// The conversation itself crosses as acp-client's thread model: a `ThreadDelta` (the JSON text
// `Thread.takeDelta()` wrote) per coalesced change, or the whole `SavedThread` when the view
// starts over.

export type HostToWebview =
  | { type: "status"; state: string; text: string }
  /** The conversation shown changed: `reset` starts the view over (from `saved`, the JSON text
   *  of a `SavedThread`, when given); otherwise the same conversation goes on in another session
   *  (the agent was restarted). */
  | { type: "conversation"; sessionId: string | null; agent: string | null; reset: boolean; saved?: string }
  /** `Thread.takeDelta()`'s JSON text. */
  | { type: "delta"; json: string }
  | { type: "busy"; busy: boolean };

export type WebviewToHost =
  | { type: "ready" }
  | { type: "prompt"; text: string }
  | { type: "cancel" }
  | { type: "newSession" }
  | { type: "setMode"; modeId: string }
  | { type: "setConfig"; configId: string; value: string | boolean }
  /** The diff `index` of the tool call in entry `entry`. */
  | { type: "openDiff"; entry: number; index: number };
