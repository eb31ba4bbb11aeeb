// BridgeFiles: the files the fs bridge (fs.ts) reaches besides the open editors, and how a
// path's real location is found: on Node the disk through `node:fs` (platform/nodeBridgeFiles.ts:
// symlinks resolved, dangling ones too); in VS Code for the Web the workspace's file system
// provider through `vscode.workspace.fs` (platform/browserBridgeFiles.ts: it cannot read a
// link's target, so a path through a symbolic link is refused there). One bridge, its rules
// (confinement, consent, errors) the same on both.
//
// Architecture Invariant: this file imports neither `vscode` nor a Node module.

/** What is known of an existing file. */
export interface BridgeFileStat {
  isFile: boolean;
  isDirectory: boolean;
  size: number;
  /** Any execute bit set (false where the host cannot see them: the browser). */
  executable: boolean;
}

/** A read that failed, with Node's code for why (ENOENT, EISDIR; anything else is an I/O error). */
export class BridgeFileError extends Error {
  override name = "BridgeFileError";
  constructor(
    readonly code: "ENOENT" | "EISDIR" | "EIO",
    message: string,
  ) {
    super(message);
  }
}

export interface BridgeFiles {
  /** The real path `p` (absolute) reaches, or undefined when it cannot be resolved (too many
   *  symbolic links). Throws, with why, where a link cannot be followed at all. */
  realPath(p: string): Promise<string | undefined>;
  /** The file's bytes. Throws a BridgeFileError (or an error with Node's `code`). */
  readFile(p: string): Promise<Uint8Array>;
  /** The file's facts, or undefined when it does not exist. */
  stat(p: string): Promise<BridgeFileStat | undefined>;
}
