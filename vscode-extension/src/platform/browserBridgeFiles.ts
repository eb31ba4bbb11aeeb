// BridgeFiles in the browser (VS Code for the Web): the workspace's files through its file
// system provider (`vscode.workspace.fs`, given: this file imports only vscode's types, so the
// unit tests run it on a fake). A path is reached through the workspace folder that holds it (the
// folder's URI with the path put in: `vscode-remote://host/home/u/p/a.txt`); a path outside
// every folder is not reachable here (even with acp.fs.allowWritesOutsideWorkspace). The
// provider cannot say where a symbolic link points, so a path through one (any component below
// its folder) is refused: a link inside the workspace cannot lead the agent out of it. Execute
// bits cannot be seen: the write classification goes by the path only.

import type * as vscode from "vscode";
import { BridgeFileError, type BridgeFiles, type BridgeFileStat } from "../bridges/fsFiles";
import { posixPaths as path } from "./posixPaths";

/** vscode.FileType's values (stable API numbers). */
const FILE = 1;
const DIRECTORY = 2;
const SYMBOLIC_LINK = 64;

/** What is used of `vscode.workspace.fs`. */
export interface WorkspaceFs {
  stat(uri: vscode.Uri): Thenable<{ type: number; size: number }>;
  readFile(uri: vscode.Uri): Thenable<Uint8Array>;
}

/** The browser's BridgeFiles, and how a path maps to its URI (for the open editors and writes). */
export interface BrowserBridgeFiles extends BridgeFiles {
  /** The URI of absolute path `p` in the workspace folder holding it, or undefined (none does). */
  uriOf(p: string): vscode.Uri | undefined;
  /** The workspace folders' paths. */
  folderPaths(): string[];
}

const inside = (folder: string, p: string) => {
  const rel = path.relative(folder, p);
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
};

/** vscode.FileSystemError's code, as Node's (what the fs bridge answers by). */
function nodeCode(e: unknown): "ENOENT" | "EISDIR" | "EIO" {
  const code = (e as { code?: unknown }).code;
  return code === "FileNotFound" || code === "EntryNotFound" ? "ENOENT" : code === "FileIsADirectory" ? "EISDIR" : "EIO";
}

export function browserBridgeFiles(fs: WorkspaceFs, folders: () => readonly vscode.Uri[]): BrowserBridgeFiles {
  const folderOf = (p: string) => folders().find((f) => inside(f.path, p));
  const uriOf = (p: string) => {
    const abs = path.normalize(p);
    return folderOf(abs)?.with({ path: abs });
  };
  const statOf = async (uri: vscode.Uri) => {
    try {
      return await fs.stat(uri);
    } catch (e) {
      if (nodeCode(e) === "ENOENT") return undefined;
      throw new BridgeFileError(nodeCode(e), (e as Error).message);
    }
  };
  return {
    uriOf,
    folderPaths: () => folders().map((f) => f.path),
    async realPath(p) {
      const abs = path.normalize(p);
      const folder = folderOf(abs);
      if (!folder) return abs; // outside every folder: the confinement refuses it
      // Each component below the folder, from the top: a link is refused, a missing one ends
      // the walk (nothing below it exists, so no link either).
      const parts = path.relative(folder.path, abs).split("/").filter(Boolean);
      let at = folder.path;
      for (const part of parts) {
        at = path.join(at, part);
        const st = await statOf(folder.with({ path: at }));
        if (!st) break;
        if (st.type & SYMBOLIC_LINK) throw new Error(`${at} is a symbolic link, which VS Code for the Web cannot follow`);
      }
      return abs;
    },
    async readFile(p) {
      const uri = uriOf(p);
      if (!uri) throw new BridgeFileError("EIO", "outside the workspace folders (all that VS Code for the Web reaches)");
      const st = await statOf(uri);
      if (!st) throw new BridgeFileError("ENOENT", `${p} does not exist`);
      if (st.type & DIRECTORY) throw new BridgeFileError("EISDIR", `${p} is a directory`);
      try {
        return await fs.readFile(uri);
      } catch (e) {
        throw new BridgeFileError(nodeCode(e), (e as Error).message);
      }
    },
    async stat(p): Promise<BridgeFileStat | undefined> {
      const uri = uriOf(p);
      const st = uri ? await statOf(uri) : undefined;
      if (!st) return undefined;
      return { isFile: (st.type & FILE) !== 0, isDirectory: (st.type & DIRECTORY) !== 0, size: st.size, executable: false };
    },
  };
}
