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
  /** `Thread.takeDelta()`'s JSON text; with the delta that ends a turn, acp-client's words for
   *  its stop reason (the view has no words of its own). */
  | { type: "delta"; json: string; stopWords?: string }
  | { type: "busy"; busy: boolean }
  /** The prompts waiting for the turn to end (acp-client's queue; `held` after a cancelled or
   *  failed turn: nothing is sent until the user says so). */
  | { type: "queue"; items: QueueItem[]; held: boolean }
  /** What the agent accepts in prompts (its promptCapabilities), for the attach buttons. */
  | { type: "capabilities"; image: boolean; embeddedContext: boolean }
  /** The answer to `complete` number `id`: files and symbols for an `@` mention. */
  | { type: "completions"; id: number; items: CompletionItem[] }
  /** An attachment the host adds (the editor's selection). */
  | { type: "attach"; attachment: ViewAttachment }
  /** A prompt that was not sent: it goes back into the input, with why. */
  | { type: "promptFailed"; text: string; attachments: ViewAttachment[]; message: string }
  /** The agent's edits waiting for Keep or Undo (each change with Accept / Reject), and the
   *  turns whose files can be restored (checkpoints). */
  | { type: "edits"; files: EditsFile[]; checkpoints?: EditsCheckpoint[] }
  /** Move the keyboard focus to the prompt (ACP: Open Chat). */
  | { type: "focusPrompt" }
  /** The lines a tool call's diff adds and removes (acp-client's hunks, as the edits row
   *  counts them), for its card. */
  | { type: "diffCounts"; entry: number; index: number; added: number; removed: number };

/** A queued prompt as the chat shows it. */
export interface QueueItem {
  id: number;
  text: string;
  /** How many attachments go with it. */
  attachments: number;
}

/** What the user does with the queue: edit or remove a prompt, send a held queue's first
 *  prompt now, drop them all. */
export type QueueAction =
  | { action: "edit"; id: number; text: string }
  | { action: "remove"; id: number }
  | { action: "sendHeld" | "clear" };

/** A file under review as the chat shows it (host/editsView.ts). */
export interface EditsFile {
  path: string;
  name: string;
  /** Relative to the workspace folder when inside it. */
  shown?: string;
  created: boolean;
  added?: number;
  removed?: number;
  hunks?: Array<{ oldStart: number; removed: number; newStart: number; added: number }>;
}

/** A turn the files can be restored to the state before. */
export interface EditsCheckpoint {
  turn: number;
  label: string;
  files: number;
}

/** An attachment as the view and host exchange it (see bridges/attachments.ts). */
export type ViewAttachment =
  | { kind: "file"; path: string; name: string }
  | { kind: "symbol"; path: string; name: string; line: number }
  | { kind: "selection"; path: string; name: string; lines: { start: number; end: number }; text: string; language?: string }
  | { kind: "image"; name: string; mimeType: string; data: string };

/** One `@` completion: what it shows and what choosing it attaches. */
export interface CompletionItem {
  label: string;
  detail: string;
  icon: "file" | "symbol";
  attachment: ViewAttachment;
}

export type WebviewToHost =
  | { type: "ready" }
  | { type: "prompt"; text: string; attachments?: ViewAttachment[] }
  /** Files and symbols matching `query` (an `@` mention being typed). */
  | { type: "complete"; id: number; query: string }
  /** Attach the active editor's selection. */
  | { type: "attachSelection" }
  /** Keep, undo or show the agent's edit of `path`; accept or reject its change `hunk` (as
   *  the view showed it: `expect`). */
  | {
      type: "editAction";
      action: "keep" | "undo" | "diff" | "acceptHunk" | "rejectHunk";
      path: string;
      hunk?: number;
      expect?: { oldStart: number; removed: number; newStart: number; added: number };
    }
  /** Restore the files the agent wrote to their state before turn `turn`. */
  | { type: "restoreCheckpoint"; turn: number }
  /** Open a file (a tool card's path) at `line` (1-based). */
  | { type: "openFile"; path: string; line?: number }
  | { type: "cancel" }
  /** The chat got (true) or lost keyboard focus: notifications are for a chat not focused. */
  | { type: "focus"; focused: boolean }
  | ({ type: "queue" } & QueueAction)
  | { type: "newSession" }
  | { type: "setMode"; modeId: string }
  | { type: "setConfig"; configId: string; value: string | boolean }
  /** A code block's text: to the clipboard, or inserted at the active editor's cursor. */
  | { type: "copyCode"; text: string }
  | { type: "insertCode"; text: string }
  /** The diff `index` of the tool call in entry `entry`. */
  | { type: "openDiff"; entry: number; index: number }
  /** The +N −M counts of that diff (answered with `diffCounts`). */
  | { type: "diffCounts"; entry: number; index: number };
