// fs/read_text_file and fs/write_text_file through the editor.
//
// Reads return the open buffer's text when the file is open in the editor (unsaved edits
// included), else the file (BridgeFiles, fsFiles.ts: the disk on Node, the workspace's file
// system in VS Code for the Web); `line` is 1-based and `limit` counts lines. Writes go through
// the DocumentHost (a WorkspaceEdit in VS Code, so they are undoable).
//
// Both are confined to the workspace folders unless the user set
// `acp.fs.allowWritesOutsideWorkspace` (which lifts the confinement of reads too). Paths are
// compared after resolving symlinks, dangling ones included (a link to a file that does not
// exist yet is followed to where the write would create it), so a link inside the workspace
// cannot be used to read or write outside it.
//
// Writes that change what runs (acp-client's `classify`, through the wasm engine: `.git/**`,
// `.vscode/**`, shell rc files, `.envrc`, executables, other agents' configuration, the client's
// own directories (FsSettings.ownDirs)...; tests/client/writes.json) are asked
// about, whatever the agent was allowed before: the classification is of the *real* path, with
// the file's facts (exists, executable bits). The WriteApprover shows the path and why, can
// show the change (old vs new text) and ask again; only "allow" writes. A refusal, or no one to
// ask, answers `permission denied` and touches nothing. So an executable keeps its mode only if
// the user allowed writing it.
//
// Every failure answers acp-client's code and `data.reason` for it (ClientPolicy.failure;
// tests/client/errors.json): relative_path, invalid_path, outside_roots, not_found,
// is_a_directory, permission_denied, io.
//
// Architecture Invariant: this file imports neither `vscode` nor a Node module (it runs in the
// browser too).

import { CancellationSource, type CancellationToken } from "../protocol/cancellation";
import type { Logger } from "../protocol/log";
import type { EditReview } from "./edits";
import type { ReadTextFileResponse } from "@agentclientprotocol/sdk";
import { JsonRpc, RequestError } from "../protocol/errors";
import type { ClientPolicy, FileFacts, PermissionQuestion, WriteReason } from "../protocol/policy";
import { hostPaths } from "../platform/hostPaths";
import type { BridgeFiles } from "./fsFiles";

export interface DocumentHost {
  /** The text of the editor buffer for this absolute path, if one is open. */
  openDocumentText(fsPath: string): string | undefined;
  /** Replaces (or creates) the file's content as one undoable edit, then saves it. */
  applyWrite(fsPath: string, content: string): Promise<void>;
  /** Absolute paths of the workspace folders. */
  workspaceFolders(): string[];
}

export interface FsSettings {
  /** Reads and writes outside the workspace folders are allowed. */
  allowWritesOutsideWorkspace: boolean;
  /** The client's own directories (the acp registry cache the agent picker reads, the
   *  extension's storage): writes under them are asked about (acp-client's `client_files`). */
  ownDirs?: readonly string[];
}

/** A write that needs the user's question. */
export interface SensitiveWrite {
  /** The path the agent asked for. */
  path: string;
  /** The real path the write reaches (symlinks resolved): what the user is asked about. */
  realPath: string;
  reason: WriteReason;
  /** Why, in words (acp-client's `describeWriteReason`). */
  why: string;
  /** `path` and `realPath` as the question shows them: on one line, escaped (acp-client's
   *  `escapeLine`; a file name may hold a newline). */
  shown: { path: string; realPath: string };
  exists: boolean;
  executable: boolean;
  /** The current text (the open buffer, else the file), null for a new file. */
  oldText: string | null;
  newText: string;
  /** What the modal shows: acp-client's question about this write (the real path, why, the
   *  path the agent asked for, the diff). */
  question: PermissionQuestion;
}

export type WriteDecision = "allow" | "review" | "refuse";

/** The UI side of sensitive writes (a modal and the diff editor in VS Code). */
export interface WriteApprover {
  /** Asks once: "allow" writes, "review" shows the change then asks again, "refuse" (or a
   *  dismissed question) refuses. */
  ask(write: SensitiveWrite, token: CancellationToken): Promise<WriteDecision>;
  /** Shows the change (old vs new text). */
  review(write: SensitiveWrite): Promise<void>;
}

/** Old text shown in a review: larger files are not read into the question. */
const MAX_REVIEW_BYTES = 4 * 1024 * 1024;

/** The largest file fs/read_text_file reads (acp-native's FsConfig default): a read holds at
 *  most this much of a file, whatever the agent asks for (an open buffer is already in memory). */
export const MAX_READ_BYTES = 10 * 1024 * 1024;

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
  const path = hostPaths();
  const rel = path.relative(folder, target);
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

/** Whether the real path `real` lies inside one of `folders` (their symlinks resolved too). */
export async function insideSomeFolder(real: string, folders: readonly string[], files: BridgeFiles): Promise<boolean> {
  for (const f of folders) {
    const folder = await files.realPath(f).catch(() => undefined);
    if (folder !== undefined && isInside(folder, real)) return true;
  }
  return false;
}

function optionalCount(method: string, name: string, v: unknown): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0) {
    throw new RequestError(JsonRpc.InvalidParams, `${method}: ${name} must be a non-negative integer`);
  }
  return v;
}

/** Node's code of a failed read (ENOENT, EISDIR...), if it has one. */
const codeOf = (e: unknown): string | undefined => (e as { code?: unknown }).code as string | undefined;

export class FsBridge {
  constructor(
    /** The files besides the open editors (Node's disk, the browser's workspace file system). */
    private readonly files: BridgeFiles,
    private readonly host: DocumentHost,
    private readonly settings: () => FsSettings,
    private readonly policy: ClientPolicy,
    private readonly approver: WriteApprover | undefined,
    private readonly log: Logger,
    /** Every applied write, with the text before it (the turn's Keep/Undo review). */
    private readonly edits?: EditReview,
  ) {}

  async readTextFile(params: unknown): Promise<ReadTextFileResponse> {
    const p = (params ?? {}) as { path?: unknown; line?: unknown; limit?: unknown };
    const file = this.requireAbsolute("fs/read_text_file", p.path);
    const line = optionalCount("fs/read_text_file", "line", p.line);
    const limit = optionalCount("fs/read_text_file", "limit", p.limit);
    await this.confine("fs/read_text_file", "read", file);
    let text = this.host.openDocumentText(file);
    if (text === undefined) {
      const st = await this.files.stat(file).catch(() => undefined);
      if (st && st.size > MAX_READ_BYTES)
        throw this.policy.failure("too_large", `cannot read ${file}: ${st.size} bytes, more than the ${MAX_READ_BYTES} a read takes`, {
          path: file,
          size: st.size,
        });
      try {
        text = new TextDecoder("utf-8", { ignoreBOM: true }).decode(await this.files.readFile(file));
      } catch (e) {
        const code = codeOf(e);
        if (code === "ENOENT") throw this.policy.failure("not_found", `Resource not found: ${file} does not exist`, { path: file });
        if (code === "EISDIR") throw this.policy.failure("is_a_directory", `path is a directory: ${file}`, { path: file });
        throw this.policy.failure("io", `cannot read ${file}: ${(e as Error).message}`, { path: file });
      }
    }
    return { content: sliceLines(text, line, limit) };
  }

  async writeTextFile(params: unknown, token: CancellationToken = new CancellationSource().token): Promise<Record<string, never>> {
    const p = (params ?? {}) as { path?: unknown; content?: unknown };
    const file = this.requireAbsolute("fs/write_text_file", p.path);
    if (typeof p.content !== "string") throw new RequestError(JsonRpc.InvalidParams, "fs/write_text_file: content must be a string");
    const real = await this.confine("fs/write_text_file", "write", file);
    await this.askIfSensitive(file, real, p.content, token);
    const before = this.edits ? await this.textBefore(file, real) : undefined;
    try {
      await this.host.applyWrite(file, p.content);
      if (before !== undefined) this.edits?.record(file, before, p.content);
    } catch (e) {
      throw this.policy.failure("io", `cannot write ${file}: ${(e as Error).message}`, { path: file });
    }
    return {};
  }

  private requireAbsolute(method: string, p: unknown): string {
    if (typeof p !== "string" || p.length === 0) throw new RequestError(JsonRpc.InvalidParams, `${method}: path missing`);
    if (p.includes("\0")) throw this.policy.failure("invalid_path", `${method}: invalid path: it contains a NUL byte`, { path: p });
    if (!hostPaths().isAbsolute(p)) throw this.policy.failure("relative_path", `${method}: path must be absolute: ${p}`, { path: p });
    return hostPaths().normalize(p);
  }

  /** The real path of `file`, refused (-32602) outside the workspace folders unless allowed. */
  async confine(method: string, what: "read" | "write", file: string): Promise<string> {
    let real: string | undefined;
    try {
      real = await this.files.realPath(file);
    } catch (e) {
      throw this.policy.failure("invalid_path", `${method}: invalid path ${file}: ${(e as Error).message}`, { path: file });
    }
    if (real === undefined)
      throw this.policy.failure("invalid_path", `${method}: invalid path ${file}: too many symbolic links`, { path: file });
    if (this.settings().allowWritesOutsideWorkspace) return real;
    const folders = this.host.workspaceFolders();
    if (await insideSomeFolder(real, folders, this.files)) return real;
    throw this.policy.failure(
      "outside_roots",
      folders.length === 0
        ? `${method}: refusing to ${what} ${file}: no workspace folder is open (setting acp.fs.allowWritesOutsideWorkspace)`
        : `${method}: refusing to ${what} ${file}: outside the workspace folders (setting acp.fs.allowWritesOutsideWorkspace)`,
      { path: file, resolved: real },
    );
  }

  /** Asks the user about a write acp-client classifies `ask`; throws the refusal. */
  private async askIfSensitive(file: string, real: string, newText: string, token: CancellationToken): Promise<void> {
    const facts = await factsOf(real, this.files);
    const cls = this.policy.classifyWrite(real, facts, await ownDirsAsWritten(this.settings().ownDirs ?? [], this.files));
    if (cls.class === "ordinary") return;
    const why = this.policy.describeWriteReason(cls.reason);
    const refuse = (asked: boolean) =>
      this.policy.failure(
        "permission_denied",
        asked
          ? `permission denied: the user did not allow writing ${real} (${why})`
          : `permission denied: writing ${real} needs the user's permission and no one can be asked (${why})`,
        { path: file, resolved: real, sensitive: cls.reason, why },
      );
    if (!this.approver) {
      this.log.warn(`fs/write_text_file ${real} refused: ${why}; no one to ask`);
      throw refuse(false);
    }
    const current = facts.exists ? await this.currentText(file, real) : null;
    const write: SensitiveWrite = {
      path: file,
      realPath: real,
      reason: cls.reason,
      why,
      shown: { path: this.policy.escapeLine(file), realPath: this.policy.escapeLine(real) },
      ...facts,
      oldText: current?.text ?? null,
      newText,
      question: this.policy.writeQuestion({
        path: real,
        askedPath: file,
        reason: cls.reason,
        exists: facts.exists,
        executable: facts.executable,
        oldText: current?.shown ? current.text : null,
        newText,
      }),
    };
    for (;;) {
      if (token.isCancellationRequested) throw refuse(true);
      const d = await this.approver.ask(write, token);
      if (token.isCancellationRequested) throw refuse(true);
      if (d === "allow") {
        this.log.info(`fs/write_text_file ${real}: allowed by the user (${why})`);
        return;
      }
      if (d !== "review") {
        this.log.info(`fs/write_text_file ${real}: refused by the user (${why})`);
        throw refuse(true);
      }
      await this.approver.review(write);
    }
  }

  /** The text a write replaces, for undo: the open buffer, else the file (null: no file);
   *  undefined when it cannot be kept (larger than the review limit, unreadable). */
  private async textBefore(file: string, real: string): Promise<string | null | undefined> {
    const open = this.host.openDocumentText(file) ?? this.host.openDocumentText(real);
    if (open !== undefined) return open;
    try {
      const st = await this.files.stat(real);
      if (st === undefined) return null;
      if (!st.isFile || st.size > MAX_REVIEW_BYTES) return undefined;
      return new TextDecoder("utf-8", { ignoreBOM: true }).decode(await this.files.readFile(real));
    } catch (e) {
      return codeOf(e) === "ENOENT" ? null : undefined;
    }
  }

  /** The text a sensitive write replaces: the open buffer, else the file; `shown: false`
   *  (and why, as the text) when it cannot be read as text (too large, not UTF-8: the question
   *  then says its content cannot be shown, as acp chat's does). */
  private async currentText(file: string, real: string): Promise<{ text: string; shown: boolean }> {
    const open = this.host.openDocumentText(file) ?? this.host.openDocumentText(real);
    if (open !== undefined) return { text: open, shown: true };
    try {
      const st = await this.files.stat(real);
      if (st && st.size > MAX_REVIEW_BYTES) return { text: `(not shown: the file is ${st.size} bytes)`, shown: false };
      const bytes = await this.files.readFile(real);
      try {
        return { text: new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes), shown: true };
      } catch {
        return { text: `(not shown: the file is not UTF-8 text, ${bytes.length} bytes)`, shown: false };
      }
    } catch (e) {
      return { text: `(not shown: ${(e as Error).message})`, shown: false };
    }
  }
}

/** The client's own directories as given and with their links resolved (those of the longest
 *  existing ancestor too): a write is classified by the real path it reaches. */
export async function ownDirsAsWritten(dirs: readonly string[], files: BridgeFiles): Promise<string[]> {
  const path = hostPaths();
  const out = new Set<string>();
  for (const d of dirs) {
    if (!path.isAbsolute(d)) continue;
    out.add(path.normalize(d));
    const real = await files.realPath(d).catch(() => undefined);
    if (real !== undefined) out.add(real);
  }
  return [...out];
}

/** What acp-client's classification needs to know of the file at `real`. */
export async function factsOf(real: string, files: BridgeFiles): Promise<Required<{ [K in keyof FileFacts]: boolean }>> {
  const st = await files.stat(real);
  return st ? { exists: true, executable: st.isFile && st.executable } : { exists: false, executable: false };
}
