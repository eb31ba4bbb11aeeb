// StoreFiles: where sessions/store.ts keeps the saved conversations: the index's JSON text and
// one saved thread per session. Node: files in the extension's workspace storage directory
// (nodeStoreFiles.ts, written atomically); the browser: the workspace's Memento
// (browserStoreFiles.ts), since the web worker host has no synchronous file system.

export interface StoreFiles {
  /** For messages: the directory, or "workspace state". */
  readonly where: string;
  /** The index's text, or undefined when none was saved yet. Throws when it cannot be read. */
  readIndex(): string | undefined;
  writeIndex(text: string): void;
  /** A saved thread's text. Throws (with words) when missing or unreadable. */
  readThread(sessionId: string): string;
  writeThread(sessionId: string, text: string): void;
  /** Forgets a saved thread (nothing if there is none). */
  removeThread(sessionId: string): void;
}
