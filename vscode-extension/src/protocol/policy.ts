// The client's decisions, from acp-client through the wasm engine (acp-wasm/API.md, "The
// client's decisions"): which permission option an automatic or dismissed answer picks, which
// file writes need the user's question, the terminal/create question, the environment
// allowlist. The extension keeps no copy of these rules; this file only types the exports and
// turns values into the JSON text they take. tests/client/*.json are replayed through it
// (test/unit/cases.test.ts).
//
// Architecture Invariant: this file does not import `vscode`.

import type { PermissionOption } from "./types";

export type PermissionMode = "ask" | "allow_once" | "allow_always" | "deny";
export type PermissionCancelReason = "no_options" | "no_reject_once" | "dismissed" | "unanswerable";

/** What to answer a `session/request_permission`. For `cancelled`, send `session/cancel` for the
 *  session first (once per turn), then answer `cancelled`. */
export type PermissionDecision =
  | { answer: "ask" }
  | { answer: "select"; optionId: string; kind: string }
  | { answer: "cancelled"; reason: PermissionCancelReason };

export interface FileFacts {
  exists: boolean;
  executable: boolean;
}

export type WriteReason = "git" | "editor" | "shell" | "environment" | "tool" | "executable";
export type WriteClass = { class: "ordinary" } | { class: "ask"; reason: WriteReason };

export interface CommandRequest {
  command: string;
  args?: string[];
  cwd?: string | null;
  env?: Array<{ name: string; value: string }>;
}

export interface EnvChange {
  name: string;
  value: string;
  change: "added" | "changed" | "same";
}

export interface CommandQuestion {
  /** One line: ``run `git status` in /dir with PATH=/tmp/x:/usr/bin``. */
  title: string;
  /** Exactly what runs, quoted, on one line. */
  commandLine: string;
  /** The directory the agent named, escaped; null when it named none. */
  cwd: string | null;
  /** The variables the request adds or changes, with their values (raw: show the title). */
  env: EnvChange[];
  /** One line each: things to read twice. */
  warnings: string[];
}

export type TerminalInvalid = { reason: "env_name"; name: string } | { reason: "nul"; field: string } | { reason: "empty_command" };

export type TerminalQuestion = { question: CommandQuestion } | { invalid: TerminalInvalid };

/** The exports of the wasm package this file uses (acp-wasm/src/policy.rs). */
export interface PolicyModule {
  decidePermission(optionsJson: string, mode: PermissionMode): PermissionDecision;
  dismissedPermission(optionsJson: string): PermissionDecision;
  unanswerablePermission(): PermissionDecision;
  chosenPermission(optionsJson: string, typed: string): PermissionDecision | null;
  classifyWrite(path: string, factsJson: string): WriteClass;
  describeWriteReason(reason: WriteReason): string;
  terminalQuestion(requestJson: string, userEnvJson: string): TerminalQuestion;
  terminalInvalidMessage(requestJson: string): string | undefined;
  envAllowlist(): string[];
  validEnvName(name: string): boolean;
  escapeLine(text: string): string;
}

export const POLICY_EXPORTS: ReadonlyArray<keyof PolicyModule> = [
  "decidePermission",
  "dismissedPermission",
  "unanswerablePermission",
  "chosenPermission",
  "classifyWrite",
  "describeWriteReason",
  "terminalQuestion",
  "terminalInvalidMessage",
  "envAllowlist",
  "validEnvName",
  "escapeLine",
];

type Option = Pick<PermissionOption, "optionId" | "kind"> & { name?: string | null };

/** The client's decisions, typed. The module is asked for on each call (it is loaded once, when
 *  the engine is), so a bridge can be built before the engine is loaded. */
export class ClientPolicy {
  constructor(private readonly module: () => PolicyModule) {}

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

  /** Whether a write to `realPath` (symlinks resolved) needs the user's question. */
  classifyWrite(realPath: string, facts: FileFacts): WriteClass {
    return this.module().classifyWrite(realPath, JSON.stringify(facts));
  }

  describeWriteReason(reason: WriteReason): string {
    return this.module().describeWriteReason(reason);
  }

  /** The terminal/create question, or why the request is refused before anyone is asked. */
  terminalQuestion(request: CommandRequest, userEnv: Record<string, string>): TerminalQuestion {
    return this.module().terminalQuestion(JSON.stringify(request), JSON.stringify(userEnv));
  }

  /** The error message for a request `terminalQuestion` refuses (one line). */
  terminalInvalidMessage(request: CommandRequest): string | undefined {
    return this.module().terminalInvalidMessage(JSON.stringify(request));
  }

  /** Host variables passed to agents and commands by default (`LC_*`: a prefix). */
  envAllowlist(): string[] {
    return this.module().envAllowlist();
  }

  validEnvName(name: string): boolean {
    return this.module().validEnvName(name);
  }

  /** Agent-supplied text on one line (controls, bidi overrides, zero-width characters escaped),
   *  as every question shows it. */
  escapeLine(text: string): string {
    return this.module().escapeLine(text);
  }
}

function optionsJson(options: readonly Option[]): string {
  return JSON.stringify(options.map((o) => ({ optionId: o.optionId, name: o.name ?? "", kind: o.kind })));
}
