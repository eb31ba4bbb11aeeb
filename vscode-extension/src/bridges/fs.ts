// fs/read_text_file and fs/write_text_file through the editor.
//
// Reads return the open buffer's text when the file is open in the editor (unsaved edits
// included), else the file on disk; `line` is 1-based and `limit` counts lines. Writes go through
// the DocumentHost (a WorkspaceEdit in VS Code, so they are undoable) and are confined to the
// workspace folders unless the user allowed writes elsewhere. Paths are compared after resolving
// symlinks, so a link inside the workspace cannot be used to write outside it.
//
// Architecture Invariant: this file does not import `vscode`.

import * as fsp from "node:fs/promises";
import * as path from "node:path";
import { ErrorCodes, RequestError, type ReadTextFileResponse } from "../protocol/types";

export interface DocumentHost {
  /** The text of the editor buffer for this absolute path, if one is open. */
  openDocumentText(fsPath: string): string | undefined;
  /** Replaces (or creates) the file's content as one undoable edit, then saves it. */
  applyWrite(fsPath: string, content: string): Promise<void>;
  /** Absolute paths of the workspace folders. */
  workspaceFolders(): string[];
}

export interface FsSettings {
  allowWritesOutsideWorkspace: boolean;
}

/** Lines [line, line+limit) of `text`, 1-based, keeping line endings. */
export function sliceLines(text: string, line?: number | null, limit?: number | null): string {
  if ((line === undefined || line === null) && (limit === undefined || limit === null)) return text;
  const start = Math.max(1, line ?? 1) - 1;
  // Split after each "\n", keeping it (and any "\r" before it) with its line.
  const lines = text.length === 0 ? [] : text.split(/(?<=\n)/);
  const end = limit === undefined || limit === null ? lines.length : start + Math.max(0, limit);
  return lines.slice(start, end).join("");
}

export function isInside(folder: string, target: string): boolean {
  const rel = path.relative(folder, target);
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

/** The real path of `p`, resolving symlinks of its longest existing ancestor. */
export async function realPathOfMaybeMissing(p: string): Promise<string> {
  const rest: string[] = [];
  let cur = path.resolve(p);
  for (;;) {
    try {
      const real = await fsp.realpath(cur);
      return path.join(real, ...rest.reverse());
    } catch {
      const parent = path.dirname(cur);
      if (parent === cur) return path.resolve(p);
      rest.push(path.basename(cur));
      cur = parent;
    }
  }
}

function requireAbsolute(method: string, p: unknown): string {
  if (typeof p !== "string" || p.length === 0) throw new RequestError(ErrorCodes.InvalidParams, `${method}: path missing`);
  if (!path.isAbsolute(p)) throw new RequestError(ErrorCodes.InvalidParams, `${method}: path must be absolute: ${p}`);
  return path.normalize(p);
}

function optionalCount(method: string, name: string, v: unknown): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0) {
    throw new RequestError(ErrorCodes.InvalidParams, `${method}: ${name} must be a non-negative integer`);
  }
  return v;
}

export class FsBridge {
  constructor(
    private readonly host: DocumentHost,
    private readonly settings: () => FsSettings,
  ) {}

  async readTextFile(params: unknown): Promise<ReadTextFileResponse> {
    const p = (params ?? {}) as { path?: unknown; line?: unknown; limit?: unknown };
    const file = requireAbsolute("fs/read_text_file", p.path);
    const line = optionalCount("fs/read_text_file", "line", p.line);
    const limit = optionalCount("fs/read_text_file", "limit", p.limit);
    let text = this.host.openDocumentText(file);
    if (text === undefined) {
      try {
        text = await fsp.readFile(file, "utf8");
      } catch (e) {
        const err = e as NodeJS.ErrnoException;
        if (err.code === "ENOENT") throw new RequestError(ErrorCodes.ResourceNotFound, `file not found: ${file}`, { path: file });
        throw new RequestError(ErrorCodes.InternalError, `cannot read ${file}: ${err.message}`);
      }
    }
    return { content: sliceLines(text, line, limit) };
  }

  async writeTextFile(params: unknown): Promise<Record<string, never>> {
    const p = (params ?? {}) as { path?: unknown; content?: unknown };
    const file = requireAbsolute("fs/write_text_file", p.path);
    if (typeof p.content !== "string") throw new RequestError(ErrorCodes.InvalidParams, "fs/write_text_file: content must be a string");
    await this.checkWritable(file);
    try {
      await this.host.applyWrite(file, p.content);
    } catch (e) {
      throw new RequestError(ErrorCodes.InternalError, `cannot write ${file}: ${(e as Error).message}`);
    }
    return {};
  }

  async checkWritable(file: string): Promise<void> {
    if (this.settings().allowWritesOutsideWorkspace) return;
    const folders = this.host.workspaceFolders();
    const real = await realPathOfMaybeMissing(file);
    for (const f of folders) {
      const realFolder = await realPathOfMaybeMissing(f);
      if (isInside(realFolder, real)) return;
    }
    throw new RequestError(
      ErrorCodes.InvalidParams,
      folders.length === 0
        ? `refusing to write ${file}: no workspace folder is open (setting acp.fs.allowWritesOutsideWorkspace)`
        : `refusing to write ${file}: outside the workspace folders (setting acp.fs.allowWritesOutsideWorkspace)`,
    );
  }
}
