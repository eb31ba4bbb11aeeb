// The client's decisions, from acp-client through the wasm engine (acp-wasm/API.md, "The
// client's decisions"): which permission option an automatic or dismissed answer picks, which
// file writes need the user's question, the terminal/create question, the environment
// allowlist, the error each fs/terminal failure answers, the terminal limits and the
// conversation thread (the session's lifecycle, the crash budget included, is the session
// engine's: host/sessionController.ts). The extension keeps no copy of these rules; this file
// only turns values into the JSON text the exports take and their JSON answers back into values.
// tests/client/*.json are replayed through it (test/unit/cases.test.ts).
//
// Architecture Invariant: this file does not import `vscode`.

import { hostOs } from "../platform/hostOs";
import type {
  EditHunk,
  FailureError,
  FailureName,
  FileFacts,
  PermissionDecision,
  PermissionMode,
  PermissionOptionInput,
  PermissionQuestion,
  PromptAttachDecision,
  PromptAttachment,
  PromptLimits,
  TerminalCommandRequest,
  TerminalLimits,
  TerminalQuestion,
  UndoStep,
  WriteClass,
  WriteReason,
} from "acp-wasm-client";
import type { EngineModule, WasmThread } from "./engine";
import { RequestError } from "./errors";
import type { WindowsRules } from "./windowsSpawn";

export type {
  EditHunk,
  PermissionQuestion,
  QuestionChoice,
  QuestionDiff,
  FailureError,
  FailureName,
  FileFacts,
  PermissionDecision,
  PermissionMode,
  PromptAttachDecision,
  PromptAttachment,
  PromptLimits,
  TerminalCommandRequest,
  TerminalEnvChange,
  TerminalInvalid,
  TerminalLimits,
  TerminalQuestion,
  UndoRefusal,
  UndoStep,
  WriteClass,
  WriteReason,
} from "acp-wasm-client";

/** The question of a `terminal/create` that may be asked. */
export type CommandQuestion = Extract<TerminalQuestion, { question: unknown }>["question"];

type Option = Pick<PermissionOptionInput, "optionId" | "kind"> & { name?: string | null };

/** The client's decisions, typed. The module is asked for on each call (it is loaded once, when
 *  the engine is), so a bridge can be built before the engine is loaded. */
export class ClientPolicy {
  private limits: TerminalLimits | undefined;

  constructor(private readonly module: () => EngineModule) {}

  /** An automatic answer for `mode`, or `ask`. */
  decidePermission(options: readonly Option[], mode: PermissionMode): PermissionDecision {
    return this.module().decidePermission(optionsJson(options), mode);
  }

  /** The answer to a dismissed question (Escape, a closed dialog). */
  dismissedPermission(options: readonly Option[]): PermissionDecision {
    return this.module().dismissedPermission(optionsJson(options));
  }

  /** The answer when no one can answer. */
  unanswerablePermission(): PermissionDecision {
    return this.module().unanswerablePermission();
  }

  /** The option a typed number names, or null (ask again). */
  chosenPermission(options: readonly Option[], typed: string): PermissionDecision | null {
    return this.module().chosenPermission(optionsJson(options), typed);
  }

  /** Whether a write to `realPath` (symlinks resolved) needs the user's question. `ownDirs`: the
   *  client's own directories (the acp registry cache it reads, the extension's storage), real
   *  paths. */
  classifyWrite(realPath: string, facts: FileFacts, ownDirs: readonly string[] = []): WriteClass {
    return this.module().classifyWrite(realPath, JSON.stringify(facts), JSON.stringify(ownDirs));
  }

  describeWriteReason(reason: WriteReason): string {
    return this.module().describeWriteReason(reason);
  }

  /** The question a face shows for the agent's `session/request_permission` (its params as
   *  sent): title, options, the tool call's kind and locations and its diffs. `known`: the tool
   *  call as the conversation knows it (what the request leaves out is taken from it), or null. */
  /** The changed regions from `oldText` to `newText` (acp-client's question::hunks). */
  editHunks(oldText: string, newText: string): EditHunk[] {
    return JSON.parse(this.module().editHunks(oldText, newText)) as EditHunk[];
  }

  /** The text taking the hunks `take` (indexes into editHunks) from `newText`, the rest from
   *  `oldText`. */
  selectHunks(oldText: string, newText: string, take: readonly number[]): string {
    return this.module().selectHunks(oldText, newText, Uint32Array.from(take));
  }

  /** What undoing one file takes (acp-client's edits::undo_step, the rule of `acp chat`'s
   *  /undo): `before` its text before the agent's first write (null: the agent created it),
   *  `after` what the agent left, `now` its text now (undefined: it does not exist). */
  undoStep(before: string | null, after: string, now: string | undefined, force: boolean): UndoStep {
    return this.module().undoStep(before, after, now ?? null, force) as UndoStep;
  }

  permissionQuestion(params: unknown, known: unknown): PermissionQuestion {
    const k = known === null || known === undefined ? null : wellFormedJson(known);
    return JSON.parse(this.module().permissionQuestion(wellFormedJson(params), k)) as PermissionQuestion;
  }

  /** ACP v2's permission question read as v1's (acp-client's `question::v2::as_v1`: a
   *  `toolCall` about its `title`); anything else (a v1 request, no title, not an object) as it
   *  is, for the permission bridge to accept or refuse. */
  permissionAsV1(params: unknown): unknown {
    if (!params || typeof params !== "object" || Array.isArray(params)) return params;
    const v1 = this.module().permissionAsV1(wellFormedJson(params));
    return v1 === undefined ? params : JSON.parse(v1);
  }

  /** The question about a write that changes what runs: the real path, why, the diff.
   *  `oldText`: null when the file does not exist or cannot be read as text. */
  writeQuestion(w: {
    path: string;
    askedPath?: string | null;
    reason: WriteReason;
    exists: boolean;
    executable: boolean;
    oldText: string | null;
    newText: string;
  }): PermissionQuestion {
    const json = this.module().writeQuestion(w.path, w.askedPath ?? null, w.reason, w.exists, w.executable, w.oldText, w.newText);
    return JSON.parse(json) as PermissionQuestion;
  }

  /** The terminal/create question, or why the request is refused before anyone is asked. */
  terminalQuestion(request: TerminalCommandRequest, userEnv: Record<string, string>): TerminalQuestion {
    return this.module().terminalQuestion(JSON.stringify(request), JSON.stringify(userEnv));
  }

  /** The error message for a request `terminalQuestion` refuses (one line). */
  terminalInvalidMessage(request: TerminalCommandRequest): string | undefined {
    return this.module().terminalInvalidMessage(JSON.stringify(request));
  }

  /** Host variables passed to agents and commands by default (`LC_*`: a prefix). */
  /** acp-client's allowlist of host variables; on Windows with what a Windows process needs
   *  (SystemRoot, ComSpec, PATHEXT, USERPROFILE, APPDATA, TEMP…: windowsEnvAllowlist). */
  envAllowlist(platform: string = hostOs()): string[] {
    const m = this.module();
    return platform === "win32" ? [...m.envAllowlist(), ...m.windowsEnvAllowlist()] : m.envAllowlist();
  }

  /** acp-client's Windows start rules (windowsSpawn.ts). */
  windowsRules(): WindowsRules {
    return this.module();
  }

  validEnvName(name: string): boolean {
    return this.module().validEnvName(name);
  }

  /** Agent-supplied text on one line (controls, bidi overrides, zero-width characters escaped),
   *  as every question shows it. */
  escapeLine(text: string): string {
    return this.module().escapeLine(text);
  }

  /** The code and `data.reason` every face answers for this failure. */
  failureError(failure: FailureName): FailureError {
    return JSON.parse(this.module().failureError(failure)) as FailureError;
  }

  /** The request error for `failure`: acp-client's code, `data.reason` first, then `data`. */
  failure(failure: FailureName, message: string, data: Record<string, unknown> = {}): RequestError {
    const { code, reason } = this.failureError(failure);
    return new RequestError(code, message, { reason, ...data });
  }

  /** Output cap, terminal count and kill grace for agent terminals. */
  terminalLimits(): TerminalLimits {
    this.limits ??= JSON.parse(this.module().terminalLimits()) as TerminalLimits;
    return this.limits;
  }

  /** The content block an attachment is sent as, per the agent's `promptCapabilities` (null:
   *  none advertised), or why it is refused (tests/client/prompt.json). */
  attachToPrompt(caps: unknown, attachment: PromptAttachment): PromptAttachDecision {
    return JSON.parse(this.module().attachToPrompt(JSON.stringify(caps ?? null), JSON.stringify(attachment))) as PromptAttachDecision;
  }

  /** Text embedded at most, image bytes at most, image types sent. */
  promptLimits(): PromptLimits {
    return JSON.parse(this.module().promptLimits()) as PromptLimits;
  }

  /** An empty conversation thread (acp-client's default byte limit unless `maxBytes`). */
  newThread(maxBytes?: number): WasmThread {
    const T = this.module().Thread;
    return maxBytes === undefined ? new T() : new T(maxBytes);
  }
}

/** `JSON.stringify(v)` with each lone surrogate written as U+FFFD. A JS string may hold one
 *  (an agent's JSON can send `"\ud800"`); acp-client reads JSON text as UTF-8, which has none,
 *  and would refuse the whole text (wasm-bindgen converts plain string arguments the same way). */
export function wellFormedJson(v: unknown): string {
  // JSON.stringify writes a lone surrogate, and only a lone one, as a `\udXXX` escape.
  return JSON.stringify(v).replace(/(?<!\\)((?:\\\\)*)\\u[dD][89a-fA-F][0-9a-fA-F]{2}/g, "$1\\ufffd");
}

function optionsJson(options: readonly Option[]): string {
  return JSON.stringify(options.map((o) => ({ optionId: o.optionId, name: o.name ?? "", kind: o.kind })));
}
