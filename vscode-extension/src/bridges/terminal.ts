// terminal/* requests: real processes, shown in the editor's terminal panel through a
// TerminalDisplayFactory (one panel per session, each command under a header line:
// bridges/sessionTerminals.ts; a Pseudoterminal in VS Code).
//
// - Checked first: a `cwd` must be absolute and inside the workspace folders (symlinks
//   resolved), like `acp chat`'s terminals; then acp-client's question (through the wasm
//   engine: ClientPolicy.terminalQuestion; tests/client/terminal.json) refuses invalid env
//   names and NUL bytes with its message and gives the text the user is shown: the
//   command line on one line with every agent-supplied field escaped, the variables the request
//   adds or changes with their values, warnings.
// - A permission decision before anything runs (`acp.terminal.approval`: `ask` shows the
//   question; a refusal answers `permission denied`).
// - No shell: `command` and `args` go to the OS as they are, unless the user set
//   `acp.terminal.useShell`, in which case the command line runs under /bin/sh -c (and the
//   question shows exactly that).
// - A command that cannot be started answers the request with an error (like `acp chat`), not a
//   terminal that "exited 127".
// - acp-client's limits (ClientPolicy.terminalLimits, shared with `acp chat`): output is kept as
//   bytes, at most `outputByteLimit` or its cap, whichever is smaller (the oldest bytes are
//   dropped first and the retained output starts at a UTF-8 character boundary; chunks are kept
//   in a list, never copied per chunk); at most its number of unreleased terminals; kill is
//   SIGTERM to the process group, then SIGKILL after its grace.
// - Every failure answers acp-client's code and `data.reason` for it (ClientPolicy.failure;
//   tests/client/errors.json): invalid_command, permission_denied, command_not_found,
//   spawn_failed, too_many_terminals, unknown_terminal (an unknown, released or another
//   session's terminal id).
//
// Architecture Invariant: this file does not import `vscode`.

import * as fsp from "node:fs/promises";
import * as path from "node:path";
import { explicitEnv, type EnvPolicy, NO_HOST_ENV } from "../protocol/env";
import { spawn, type ChildProcess } from "node:child_process";
import { CancellationSource, type CancellationToken } from "../protocol/cancellation";
import type { Logger } from "../protocol/log";
import type { CreateTerminalRequest, TerminalExitStatus, TerminalOutputResponse } from "@agentclientprotocol/sdk";
import { JsonRpc, RequestError } from "../protocol/errors";
import { planSpawn, SpawnRefused, windowsTreeKill, type SpawnPlan } from "../protocol/windowsSpawn";
import type { ClientPolicy, CommandQuestion, TerminalCommandRequest } from "../protocol/policy";
import { nodeBridgeFiles } from "../platform/nodeBridgeFiles";
import { insideSomeFolder } from "./fs";

/** Output bytes with a limit; the oldest are dropped first, at a character boundary. Chunks are
 *  kept as they came (a list), so appending never copies what is already kept. */
export class OutputBuffer {
  private chunks: Buffer[] = [];
  private size = 0;
  truncated = false;
  readonly limit: number;
  /** `limit`: the bytes kept (the smaller of the request's and acp-client's cap). */
  constructor(limit: number) {
    this.limit = Math.max(0, limit);
  }

  append(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    // Only the last `limit` bytes of a chunk larger than the limit can be kept.
    const take = chunk.length > this.limit ? chunk.subarray(chunk.length - this.limit) : chunk;
    if (take.length < chunk.length) this.truncated = true;
    if (take.length > 0) {
      this.chunks.push(Buffer.from(take));
      this.size += take.length;
    }
    if (this.size <= this.limit && take.length === chunk.length) return;
    let drop = this.size - this.limit;
    this.truncated = true;
    // Whole chunks first, then part of the first one.
    while (drop > 0 && this.chunks.length > 0 && this.chunks[0]!.length <= drop) {
      drop -= this.chunks[0]!.length;
      this.size -= this.chunks.shift()!.length;
    }
    if (drop > 0 && this.chunks.length > 0) {
      this.chunks[0] = this.chunks[0]!.subarray(drop);
      this.size -= drop;
    }
    // Skip UTF-8 continuation bytes (10xxxxxx) so the kept bytes start at a character.
    while (this.chunks.length > 0) {
      const first = this.chunks[0]!;
      let i = 0;
      while (i < first.length && (first[i]! & 0xc0) === 0x80) i++;
      if (i === 0) break;
      this.size -= i;
      if (i === first.length) this.chunks.shift();
      else {
        this.chunks[0] = first.subarray(i);
        break;
      }
    }
  }

  get byteLength(): number {
    return this.size;
  }

  /** How many chunks are held (for tests: the list stays bounded by what is kept). */
  get chunkCount(): number {
    return this.chunks.length;
  }

  /** The retained output as text (a character cut at the *end* by a pending write is replaced). */
  text(): string {
    if (this.chunks.length > 1) this.chunks = [Buffer.concat(this.chunks, this.size)];
    return this.chunks.length === 0 ? "" : this.chunks[0]!.toString("utf8");
  }
}

/** How one command is shown (its output as it comes, then how it ended). */
export interface TerminalDisplay {
  write(text: string): void;
  exited(status: TerminalExitStatus): void;
}

/** Where commands are shown: one panel per session (SessionTerminals, bridges/sessionTerminals.ts). */
export interface TerminalDisplayFactory {
  /** A command of `sessionId` started: `commandLine` is acp-client's one-line quoting of it;
   *  `onInput` takes what the user types for it. */
  create(sessionId: string, commandLine: string, onInput: (data: string) => void): TerminalDisplay;
  /** The session is over: what shows its commands goes. */
  endSession(sessionId: string): void;
  disposeAll(): void;
}

/** What the user is asked before an agent's command runs: acp-client's question. */
export interface TerminalApprovalRequest {
  sessionId: string;
  /** Title, command line, directory, env changes and warnings (every field on one line). */
  question: CommandQuestion;
  /** The directory the command runs in (the request's, or the default one). */
  directory: string | undefined;
  /** The command line runs under /bin/sh -c (acp.terminal.useShell). */
  shell: boolean;
}

/** The UI's side of a terminal permission decision (a modal in VS Code). */
export interface TerminalApprover {
  /** Resolves true to run the command; false (or a cancelled token) refuses it. */
  approve(request: TerminalApprovalRequest, token: CancellationToken): Promise<boolean>;
}

export interface TerminalSettings {
  useShell: boolean;
  /** "ask" (default): every terminal/create goes through the approver; "allow": the user
   *  allowed every command in settings. With "ask" and no approver, commands are refused. */
  approval?: "ask" | "allow";
  /** Which host variables commands get (none without a policy). */
  envPolicy?: EnvPolicy;
  /** The host environment the policy filters (default: the extension host's). */
  hostEnv?: NodeJS.ProcessEnv;
  /** Absolute paths of the workspace folders: a `cwd` must lie inside one of them, and the
   *  first is the default directory. None: a request naming a `cwd` is refused. */
  workspaceFolders?: readonly string[];
  /** Overrides acp-client's kill grace (tests). */
  killGraceMs?: number;
}

interface Term {
  id: string;
  sessionId: string;
  child: ChildProcess;
  output: OutputBuffer;
  exit?: TerminalExitStatus;
  exited: Promise<TerminalExitStatus>;
  display?: TerminalDisplay;
}

export class TerminalManager {
  private readonly terms = new Map<string, Term>();
  private next = 1;

  constructor(
    private readonly displays: TerminalDisplayFactory | undefined,
    private readonly settings: () => TerminalSettings,
    private readonly log: Logger,
    private readonly policy: ClientPolicy,
    private readonly approver?: TerminalApprover,
  ) {}

  get size(): number {
    return this.terms.size;
  }

  /** `terminal/create`: validated, a permission decision, then the process. */
  async create(params: unknown, token?: CancellationToken): Promise<{ terminalId: string }> {
    const req = params as CreateTerminalRequest;
    if (!req || typeof req !== "object" || typeof req.sessionId !== "string") {
      throw new RequestError(JsonRpc.InvalidParams, "terminal/create: sessionId missing");
    }
    if (typeof req.command !== "string") throw new RequestError(JsonRpc.InvalidParams, "terminal/create: command missing");
    const args = req.args ?? [];
    if (!Array.isArray(args) || !args.every((a) => typeof a === "string")) {
      throw new RequestError(JsonRpc.InvalidParams, "terminal/create: args must be an array of strings");
    }
    const env = req.env ?? [];
    if (!Array.isArray(env) || !env.every((v) => v && typeof v.name === "string" && typeof v.value === "string")) {
      throw new RequestError(JsonRpc.InvalidParams, "terminal/create: env must be an array of {name, value} strings");
    }
    if (req.cwd !== undefined && req.cwd !== null && typeof req.cwd !== "string") {
      throw new RequestError(JsonRpc.InvalidParams, "terminal/create: cwd must be a string");
    }
    const { maxOutputBytes } = this.policy.terminalLimits();
    const limit =
      typeof req.outputByteLimit === "number" && req.outputByteLimit >= 0 ? Math.min(req.outputByteLimit, maxOutputBytes) : maxOutputBytes;
    const settings = this.settings();
    // What runs: the command as given, or its command line under sh -c.
    const shown: TerminalCommandRequest = settings.useShell
      ? { command: "/bin/sh", args: ["-c", [req.command, ...args.map(shellQuote)].join(" ")], cwd: req.cwd ?? null, env }
      : { command: req.command, args, cwd: req.cwd ?? null, env };
    const q = this.policy.terminalQuestion(shown, this.userEnv());
    if ("invalid" in q) {
      const message = this.policy.terminalInvalidMessage(shown) ?? `invalid request (${q.invalid.reason})`;
      throw this.policy.failure("invalid_command", `terminal/create: ${message}`, { invalid: q.invalid });
    }
    const question = q.question;
    this.checkCount();
    const directory = await this.directory(req.cwd ?? undefined, settings.workspaceFolders ?? []);
    const ok = await this.decide(req.sessionId, question, directory, settings.useShell, token);
    if (!ok) {
      this.log.info(`terminal/create refused by the user: ${question.commandLine}`);
      throw this.policy.failure("permission_denied", `permission denied: the user did not allow running ${question.commandLine}`, {
        command: req.command,
        args,
        cwd: req.cwd ?? null,
      });
    }
    return this.start(req.sessionId, shown, question.commandLine, directory, limit);
  }

  /** acp-client's limit on unreleased terminals: checked before asking (no question for a command
   *  that could not run) and again before starting (another may have started meanwhile). */
  private checkCount(): void {
    const { maxTerminals } = this.policy.terminalLimits();
    if (this.terms.size >= maxTerminals) {
      throw this.policy.failure(
        "too_many_terminals",
        `too many terminals (limit ${maxTerminals}); release terminals that are no longer needed`,
        { limit: maxTerminals },
      );
    }
  }

  /** The variables a command gets without the request's `env` (what the question compares to). */
  private userEnv(): Record<string, string> {
    const out: Record<string, string> = {};
    const settings = this.settings();
    for (const [k, v] of Object.entries(explicitEnv(settings.hostEnv ?? process.env, settings.envPolicy ?? NO_HOST_ENV))) {
      if (v !== undefined) out[k] = v;
    }
    return out;
  }

  /** The directory to run in: the request's (absolute, inside a workspace folder once symlinks
   *  are resolved, existing), else the first workspace folder. */
  private async directory(cwd: string | undefined, folders: readonly string[]): Promise<string | undefined> {
    if (cwd === undefined) return folders[0];
    if (!path.isAbsolute(cwd)) throw this.policy.failure("invalid_command", `terminal/create: cwd must be absolute: ${cwd}`, { cwd });
    let real: string;
    try {
      real = await fsp.realpath(cwd);
    } catch (e) {
      throw this.policy.failure("invalid_command", `terminal/create: cwd ${cwd}: ${(e as Error).message}`, { cwd });
    }
    if (await insideSomeFolder(real, folders, nodeBridgeFiles)) return real;
    throw this.policy.failure(
      "invalid_command",
      folders.length === 0
        ? `terminal/create: cwd ${cwd} refused: no workspace folder is open`
        : `terminal/create: cwd ${cwd} is outside the workspace folders`,
      { cwd },
    );
  }

  private decide(
    sessionId: string,
    question: CommandQuestion,
    directory: string | undefined,
    shell: boolean,
    token?: CancellationToken,
  ): Promise<boolean> {
    if (this.settings().approval === "allow") return Promise.resolve(true);
    if (!this.approver) return Promise.resolve(false);
    return this.approver.approve({ sessionId, question, directory, shell }, token ?? new CancellationSource().token);
  }

  private async start(
    sessionId: string,
    run: TerminalCommandRequest,
    label: string,
    cwd: string | undefined,
    limit: number,
  ): Promise<{ terminalId: string }> {
    this.checkCount();
    const extra: Record<string, string> = {};
    for (const v of run.env ?? []) extra[v.name] = v.value;
    const settings = this.settings();
    const env = explicitEnv(settings.hostEnv ?? process.env, settings.envPolicy ?? NO_HOST_ENV, extra);
    // On Windows, acp-client's plan (windowsSpawn.ts): the program found in PATH (never the
    // working directory), an npm shim through node, a batch file through cmd.exe with its
    // arguments quoted; elsewhere as given.
    let plan: SpawnPlan;
    try {
      plan = planSpawn(this.policy.windowsRules(), run.command, run.args ?? [], env);
    } catch (e) {
      if (!(e instanceof SpawnRefused)) throw e;
      throw this.policy.failure("command_not_found", `cannot run \`${run.command}\`: ${e.message}`, { command: run.command });
    }
    const child = spawn(plan.command, plan.args, {
      cwd,
      env,
      shell: false,
      windowsVerbatimArguments: plan.verbatim,
      detached: process.platform !== "win32",
      stdio: ["pipe", "pipe", "pipe"],
      windowsHide: true,
    });
    // Started, or the request's error: a command that cannot run is not a terminal.
    await new Promise<void>((resolve, reject) => {
      child.once("spawn", resolve);
      child.once("error", (err: NodeJS.ErrnoException) => reject(this.spawnError(run.command, err)));
    });
    const id = `term-${this.next++}`;
    const output = new OutputBuffer(limit);
    let resolveExit!: (s: TerminalExitStatus) => void;
    const term: Term = { id, sessionId, child, output, exited: new Promise((r) => (resolveExit = r)) };
    const finish = (status: TerminalExitStatus) => {
      if (term.exit) return;
      term.exit = status;
      term.display?.exited(status);
      this.log.info(`terminal ${id} exited: ${JSON.stringify(status)}`);
      resolveExit(status);
    };
    const onData = (chunk: Buffer) => {
      output.append(chunk);
      term.display?.write(chunk.toString("utf8"));
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.stdin!.on("error", () => {});
    child.on("error", (err) => this.log.warn(`terminal ${id}: ${err.message}`));
    // "close" (not "exit"): all output has been read by then.
    child.on("close", (code, signal) => finish({ exitCode: code, signal: signal ?? null }));
    // Shown in the session's panel under the question's command line (agent text escaped, on one line).
    term.display = this.displays?.create(sessionId, label, (data) => {
      if (!term.exit) child.stdin?.write(data);
    });
    this.terms.set(id, term);
    this.log.info(`terminal ${id}: ${JSON.stringify([run.command, ...(run.args ?? [])])} cwd=${cwd ?? "(inherit)"}`);
    return { terminalId: id };
  }

  output(params: unknown): TerminalOutputResponse {
    const t = this.get("terminal/output", params);
    return { output: t.output.text(), truncated: t.output.truncated, exitStatus: t.exit ?? null };
  }

  async waitForExit(params: unknown, token?: CancellationToken): Promise<TerminalExitStatus> {
    const t = this.get("terminal/wait_for_exit", params);
    if (!token) return t.exited;
    return new Promise((resolve, reject) => {
      const d = token.onCancellationRequested(() => reject(new RequestError(JsonRpc.RequestCancelled, "cancelled")));
      void t.exited.then((s) => {
        d.dispose();
        resolve(s);
      });
    });
  }

  kill(params: unknown): Record<string, never> {
    const t = this.get("terminal/kill", params);
    this.killTerm(t);
    return {};
  }

  release(params: unknown): Record<string, never> {
    const t = this.get("terminal/release", params);
    this.killTerm(t);
    this.terms.delete(t.id);
    // The session's panel keeps showing its output.
    return {};
  }

  /** The session is over (another took its place): the panel showing its commands goes. Its
   *  terminals stay as ACP has them (the agent may still read, kill or release them). */
  endSession(sessionId: string): void {
    this.displays?.endSession(sessionId);
  }

  /** Kills and forgets every terminal (agent gone, extension deactivating); the panels go. */
  disposeAll(): void {
    for (const t of this.terms.values()) this.killTerm(t);
    this.terms.clear();
    this.displays?.disposeAll();
  }

  private killTerm(t: Term): void {
    if (t.exit || t.child.pid === undefined) return;
    signalGroup(t.child, "SIGTERM");
    const grace = this.settings().killGraceMs ?? this.policy.terminalLimits().killGraceMs;
    const timer = setTimeout(() => {
      if (!t.exit) signalGroup(t.child, "SIGKILL");
    }, grace);
    timer.unref?.();
    void t.exited.then(() => clearTimeout(timer));
  }

  private get(method: string, params: unknown): Term {
    const p = params as { terminalId?: unknown; sessionId?: unknown } | undefined;
    const t = typeof p?.terminalId === "string" ? this.terms.get(p.terminalId) : undefined;
    if (!t || t.sessionId !== p?.sessionId) {
      throw this.policy.failure("unknown_terminal", `${method}: terminal not found: ${JSON.stringify(p?.terminalId)}`, {
        terminalId: p?.terminalId ?? null,
      });
    }
    return t;
  }

  /** The request's error for a command that could not be started (as `acp chat` answers it). */
  private spawnError(command: string, err: NodeJS.ErrnoException): RequestError {
    if (err.code === "ENOENT") return this.policy.failure("command_not_found", `command not found: \`${command}\``, { command });
    if (err.code === "EACCES" || err.code === "EISDIR" || err.code === "ENOEXEC") {
      return this.policy.failure("command_not_found", `cannot execute \`${command}\`: ${err.message}`, { command });
    }
    return this.policy.failure("spawn_failed", `failed to start \`${command}\`: ${err.message}`, { command });
  }
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (process.platform === "win32" && child.pid !== undefined) {
    // No process groups: taskkill ends the command and everything it started.
    const kill = windowsTreeKill(child.pid);
    try {
      spawn(kill.command, kill.args, { shell: false, stdio: "ignore", windowsHide: true }).on("error", () => child.kill());
    } catch {
      child.kill();
    }
    return;
  }
  try {
    process.kill(-child.pid!, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      /* gone */
    }
  }
}

/** A POSIX sh word for `s` (for the command line acp.terminal.useShell runs under /bin/sh -c). */
export function shellQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}
