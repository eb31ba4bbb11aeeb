// AgentProcess: one spawned agent. No shell: the command and its arguments go to the OS as they
// are. The agent gets its own process group so stop() can end it and everything it started.
//
// Architecture Invariant: this file does not import `vscode`.

import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { NO_HOST_ENV, explicitEnv, type EnvPolicy } from "./env";
import { TailBuffer, type AgentTransport, type ExitInfo, type TransportEvents } from "./transport";
import { planSpawn, windowsTreeKill, type WindowsRules } from "./windowsSpawn";

export interface AgentSpec {
  name: string;
  /** The program (empty for a remote agent). */
  command: string;
  args: string[];
  /** A remote agent (`ws://` / `wss://`, remote.ts) instead of a process: `command`, `args`,
   *  `env` and `cwd` are unused. */
  url?: string;
  /** A remote agent's extra trusted certificates (PEM file). */
  caFile?: string;
  env?: Record<string, string>;
  cwd?: string;
  /** Which host variables the agent gets. AgentConnection.start defaults it to acp-client's
   *  allowlist; an AgentProcess started without one gets no host variable at all. */
  envPolicy?: EnvPolicy;
  /** acp-client's Windows start rules (the engine); needed on Windows only (windowsSpawn.ts). */
  windowsRules?: WindowsRules;
}

export type AgentProcessEvents = TransportEvents;

export class AgentProcess implements AgentTransport {
  private readonly child: ChildProcessWithoutNullStreams;
  readonly stderrTail = new TailBuffer();
  private exitInfo: ExitInfo | undefined;
  readonly exited: Promise<ExitInfo>;
  /** Resolves once the OS started the process; rejects with the spawn error. */
  readonly started: Promise<void>;

  constructor(
    readonly spec: AgentSpec,
    events: AgentProcessEvents,
  ) {
    let resolveExit!: (i: ExitInfo) => void;
    this.exited = new Promise((r) => (resolveExit = r));
    const finish = (info: ExitInfo) => {
      if (this.exitInfo) return;
      this.exitInfo = info;
      resolveExit(info);
      events.onExit(info);
    };
    const env = explicitEnv(process.env, spec.envPolicy ?? NO_HOST_ENV, spec.env);
    // On Windows: the file acp-client finds and how it runs it (an npm shim through node, a
    // batch file through cmd.exe with its arguments quoted); elsewhere as given. Throws
    // SpawnRefused (the caller's start error) when it cannot be run safely.
    const plan = planSpawn(spec.windowsRules, spec.command, spec.args, env);
    this.child = spawn(plan.command, plan.args, {
      cwd: spec.cwd,
      env,
      shell: false,
      windowsVerbatimArguments: plan.verbatim,
      detached: process.platform !== "win32", // own process group: stop() signals the whole group
      stdio: ["pipe", "pipe", "pipe"],
      windowsHide: true,
    });
    this.started = new Promise((resolve, reject) => {
      this.child.once("spawn", () => resolve());
      this.child.once("error", (err) => reject(err));
    });
    this.started.catch(() => {});
    this.child.on("error", (err) => {
      // Spawn failures never produce "exit".
      if (this.child.pid === undefined) finish({ code: null, signal: null, spawnError: err });
    });
    this.child.stdout.on("data", (b: Buffer) => events.onStdout(b));
    this.child.stdout.on("end", () => events.onStdoutEnd());
    this.child.stderr.setEncoding("utf8");
    this.child.stderr.on("data", (s: string) => {
      this.stderrTail.push(s);
      events.onStderr(s);
    });
    this.child.stdin.on("error", () => {
      /* EPIPE when the agent died: its exit is reported through onExit */
    });
    // "exit" can come before the last stderr chunk is read: the exit is reported once stderr
    // has ended too (bounded, as a grandchild may keep it open), so the stderr tail in a
    // start-failure report is complete.
    let stderrEnded = false;
    let afterStderr: (() => void) | undefined;
    this.child.stderr.on("end", () => {
      stderrEnded = true;
      afterStderr?.();
    });
    this.child.on("exit", (code, signal) => {
      if (stderrEnded) return finish({ code, signal });
      const timer = setTimeout(() => finish({ code, signal }), 2000);
      afterStderr = () => {
        clearTimeout(timer);
        finish({ code, signal });
      };
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get description(): string {
    return `pid ${this.child.pid}`;
  }

  get hasExited(): boolean {
    return this.exitInfo !== undefined;
  }

  write(bytes: Uint8Array): void {
    if (this.exitInfo || this.child.stdin.destroyed) return;
    this.child.stdin.write(bytes);
  }

  /**
   * Closes stdin (the agent's cue to exit), waits `graceMs`, then SIGTERMs the process group,
   * waits again, then SIGKILLs it.
   */
  async stop(graceMs = 2000): Promise<ExitInfo> {
    if (this.exitInfo) return this.exitInfo;
    this.child.stdin.end();
    if (await this.exitsWithin(graceMs)) return this.exitInfo!;
    this.signalGroup("SIGTERM");
    if (await this.exitsWithin(graceMs)) return this.exitInfo!;
    this.signalGroup("SIGKILL");
    return this.exited;
  }

  private signalGroup(signal: NodeJS.Signals): void {
    const pid = this.child.pid;
    if (pid === undefined) return;
    if (process.platform === "win32") {
      // No process groups: taskkill ends the agent and everything it started.
      const kill = windowsTreeKill(pid);
      try {
        spawn(kill.command, kill.args, { shell: false, stdio: "ignore", windowsHide: true }).on("error", () => this.child.kill());
      } catch {
        this.child.kill();
      }
      return;
    }
    try {
      process.kill(-pid, signal);
    } catch {
      try {
        this.child.kill(signal);
      } catch {
        /* already gone */
      }
    }
  }

  private exitsWithin(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const t = setTimeout(() => resolve(false), ms);
      void this.exited.then(() => {
        clearTimeout(t);
        resolve(true);
      });
    });
  }
}
