// terminal/* requests: real processes, shown in the editor's terminal panel through a
// TerminalDisplay (a Pseudoterminal in VS Code).
//
// - No shell: `command` and `args` go to the OS as they are, unless the user set
//   `acp.terminal.useShell`, in which case the command line runs under /bin/sh -c.
// - Output is kept as bytes. With `outputByteLimit`, the oldest bytes are dropped first and the
//   retained output starts at a UTF-8 character boundary (never in the middle of a character).
// - Each terminal runs in its own process group; kill signals the whole group.
//
// Architecture Invariant: this file does not import `vscode`.

import { explicitEnv, type EnvPolicy } from "../protocol/env";
import { spawn, type ChildProcess } from "node:child_process";
import { CancellationSource, type CancellationToken } from "../protocol/cancellation";
import type { Logger } from "../protocol/log";
import {
  type CreateTerminalRequest,
  ErrorCodes,
  RequestError,
  type TerminalExitStatus,
  type TerminalOutputResponse,
} from "../protocol/types";

/** Output bytes with an optional limit; truncation drops from the front at a character boundary. */
export class OutputBuffer {
  private buf: Buffer = Buffer.alloc(0);
  truncated = false;
  constructor(readonly limit?: number) {}

  append(chunk: Uint8Array): void {
    this.buf = this.buf.length === 0 ? Buffer.from(chunk) : Buffer.concat([this.buf, chunk]);
    if (this.limit !== undefined && this.buf.length > this.limit) {
      let start = this.buf.length - this.limit;
      // Skip UTF-8 continuation bytes (10xxxxxx) so the kept bytes start at a character.
      while (start < this.buf.length && (this.buf[start]! & 0xc0) === 0x80) start++;
      this.buf = this.buf.subarray(start);
      this.truncated = true;
    }
  }

  get byteLength(): number {
    return this.buf.length;
  }

  /** The retained output as text (a character cut at the *end* by a pending write is replaced). */
  text(): string {
    return this.buf.toString("utf8");
  }
}

export interface TerminalDisplay {
  write(text: string): void;
  exited(status: TerminalExitStatus): void;
  dispose(): void;
}

export interface TerminalDisplayFactory {
  create(title: string, onInput: (data: string) => void): TerminalDisplay;
}

/** What the user is asked before an agent's command runs. */
export interface TerminalApprovalRequest {
  sessionId: string;
  command: string;
  args: string[];
  cwd?: string;
  /** Names of the extra variables the request sets (values can be long or secret). */
  envNames: string[];
  /** The command line, quoted for reading. */
  commandLine: string;
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
  /** Which host variables commands get (default: the allowlist only). */
  envPolicy?: EnvPolicy;
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
    private readonly approver?: TerminalApprover,
  ) {}

  get size(): number {
    return this.terms.size;
  }

  /** `terminal/create`: validated at once, then a permission decision, then the process. */
  create(params: unknown, token?: CancellationToken): Promise<{ terminalId: string }> {
    const req = params as CreateTerminalRequest;
    if (!req || typeof req.command !== "string" || req.command.length === 0) {
      throw new RequestError(ErrorCodes.InvalidParams, "terminal/create: command missing");
    }
    if (typeof req.sessionId !== "string") throw new RequestError(ErrorCodes.InvalidParams, "terminal/create: sessionId missing");
    const args = Array.isArray(req.args) ? req.args.map(String) : [];
    const limit = typeof req.outputByteLimit === "number" && req.outputByteLimit >= 0 ? req.outputByteLimit : undefined;
    const decision = this.decide(req, args, token);
    return decision.then((ok) => {
      if (!ok) {
        const line = [req.command, ...args].map(shellQuote).join(" ");
        this.log.info(`terminal/create refused by the user: ${line}`);
        throw new RequestError(ErrorCodes.InternalError, `permission denied: the user did not allow running ${line}`, {
          reason: "permission_denied",
        });
      }
      return this.start(req, args, limit);
    });
  }

  private decide(req: CreateTerminalRequest, args: string[], token?: CancellationToken): Promise<boolean> {
    if (this.settings().approval === "allow") return Promise.resolve(true);
    if (!this.approver) return Promise.resolve(false);
    return this.approver.approve(
      {
        sessionId: req.sessionId,
        command: req.command,
        args,
        cwd: req.cwd ?? undefined,
        envNames: (req.env ?? []).map((v) => v.name),
        commandLine: [req.command, ...args].map(shellQuote).join(" "),
      },
      token ?? new CancellationSource().token,
    );
  }

  private start(req: CreateTerminalRequest, args: string[], limit: number | undefined): Promise<{ terminalId: string }> {
    const extra: Record<string, string> = {};
    for (const v of req.env ?? []) extra[v.name] = v.value;
    const env = explicitEnv(process.env, this.settings().envPolicy, extra);
    const useShell = this.settings().useShell;
    const [file, argv] = useShell ? ["/bin/sh", ["-c", [req.command, ...args.map(shellQuote)].join(" ")]] : [req.command, args];
    const id = `term-${this.next++}`;
    const child = spawn(file, argv, {
      cwd: req.cwd ?? undefined,
      env,
      shell: false,
      detached: true,
      stdio: ["pipe", "pipe", "pipe"],
    });
    const output = new OutputBuffer(limit);
    let resolveExit!: (s: TerminalExitStatus) => void;
    const term: Term = { id, sessionId: req.sessionId, child, output, exited: new Promise((r) => (resolveExit = r)) };
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
    child.on("error", (err) => {
      const msg = `failed to start ${req.command}: ${err.message}\n`;
      output.append(Buffer.from(msg));
      term.display?.write(msg);
      finish({ exitCode: 127, signal: null });
    });
    // "close" (not "exit"): all output has been read by then.
    child.on("close", (code, signal) => finish({ exitCode: code, signal: signal ?? null }));
    const title = [req.command, ...args].join(" ");
    term.display = this.displays?.create(`ACP: ${title.length > 40 ? `${title.slice(0, 40)}…` : title}`, (data) => {
      if (!term.exit) child.stdin?.write(data);
    });
    this.terms.set(id, term);
    this.log.info(`terminal ${id}: ${useShell ? "sh -c " : ""}${JSON.stringify([req.command, ...args])} cwd=${req.cwd ?? "(inherit)"}`);
    return Promise.resolve({ terminalId: id });
  }

  output(params: unknown): TerminalOutputResponse {
    const t = this.get("terminal/output", params);
    return { output: t.output.text(), truncated: t.output.truncated, exitStatus: t.exit ?? null };
  }

  async waitForExit(params: unknown, token?: CancellationToken): Promise<TerminalExitStatus> {
    const t = this.get("terminal/wait_for_exit", params);
    if (!token) return t.exited;
    return new Promise((resolve, reject) => {
      const d = token.onCancellationRequested(() => reject(new RequestError(ErrorCodes.RequestCancelled, "cancelled")));
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
    // The panel keeps showing the output; the user closes it.
    return {};
  }

  /** Kills and forgets every terminal (agent gone, extension deactivating). */
  disposeAll(): void {
    for (const t of this.terms.values()) {
      this.killTerm(t);
      t.display?.dispose();
    }
    this.terms.clear();
  }

  private killTerm(t: Term): void {
    if (t.exit || t.child.pid === undefined) return;
    signalGroup(t.child, "SIGTERM");
    const grace = this.settings().killGraceMs ?? 2000;
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
      throw new RequestError(ErrorCodes.InvalidParams, `${method}: unknown terminalId ${JSON.stringify(p?.terminalId)}`);
    }
    return t;
  }
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
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

export function shellQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}
