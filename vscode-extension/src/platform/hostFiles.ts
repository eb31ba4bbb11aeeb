// HostFiles: the few direct file reads outside the fs bridge (the agent settings' `acp`
// binary, the registry cache, a file attached to a prompt) and the file URLs attachments carry.
// Node: nodeFiles.ts; the browser: browserFiles.ts (nothing on disk is reachable there: an
// attached file must be open in an editor).

export interface HostFiles {
  /** Whether `p` is an executable regular file. */
  isExecutable(p: string): boolean;
  /** A small text file's content (at most 4 MiB), or undefined when missing, big or unreadable. */
  readSmallFile(p: string): string | undefined;
  /** The file's size and, when it is text of at most `max` bytes, its text (null otherwise).
   *  Throws when it cannot be read. */
  readForPrompt(file: string, max: number): Promise<{ size?: number; text: string | null }>;
  /** The `file:` URL of an absolute path. */
  fileUrl(p: string): string;
}
