// Starting an agent or a terminal command on Windows. Node refuses to spawn a `.cmd`/`.bat`
// without a shell since its 2024 security fix, and a shell would read `&`, `|`, `%VAR%` and `^`
// in agent-controlled arguments. What to run is acp-client's decision (acp_client::windows,
// through the wasm build: tests/client/windows.json): a bare name is looked up in PATH with
// PATHEXT, never in the working directory; an npm shim runs as `node SCRIPT ARGS…` with no
// shell; any other batch file through `cmd.exe /d /c` with each argument quoted for it. This
// file only answers the file-system questions (does this file exist, what does the shim say)
// and hands the plan to `spawn`.
//
// Architecture Invariant: this file does not import `vscode`.

import * as fs from "node:fs";
import * as path from "node:path";

/** The acp-wasm exports the Windows rules come from. */
export interface WindowsRules {
  windowsFindProgram(
    command: string,
    path: string,
    pathext: string | undefined,
    isFile: (candidate: string) => boolean,
  ): string | undefined;
  windowsPlanSpawn(factsJson: string, argsJson: string): string;
  windowsShimReadLimit(): number;
}

/** What to hand to `child_process.spawn` (with `windowsVerbatimArguments: verbatim`). */
export interface SpawnPlan {
  command: string;
  args: string[];
  verbatim: boolean;
  /** `direct`, `npm_shim` or `batch` on Windows; `as_given` elsewhere. */
  via: "direct" | "npm_shim" | "batch" | "as_given";
}

/** The file-system questions, answered by node (stubbed in tests). */
export interface FileFacts {
  isFile(p: string): boolean;
  /** The first `limit` bytes of a file as text, or undefined if it cannot be read. */
  readHead(p: string, limit: number): string | undefined;
}

export const nodeFiles: FileFacts = {
  isFile(p) {
    try {
      return fs.statSync(p).isFile();
    } catch {
      return false;
    }
  },
  readHead(p, limit) {
    let fd: number | undefined;
    try {
      fd = fs.openSync(p, "r");
      const buf = Buffer.alloc(limit + 1);
      const n = fs.readSync(fd, buf, 0, buf.length, 0);
      // Longer than the limit: not a shim (acp-client says so too); pass what was read.
      return buf.subarray(0, n).toString("utf8");
    } catch {
      return undefined;
    } finally {
      if (fd !== undefined) fs.closeSync(fd);
    }
  },
};

/** A Windows environment variable, whatever the case of its name (`Path` is `PATH`). */
export function windowsVar(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const upper = name.toUpperCase();
  for (const [k, v] of Object.entries(env)) if (k.toUpperCase() === upper && v !== undefined) return v;
  return undefined;
}

/** Refused: the message says why (for the user, as the start error). */
export class SpawnRefused extends Error {}

/**
 * How to start `command` with `args` on `platform`: elsewhere than Windows, as given (no shell;
 * the OS finds it in PATH). On Windows, acp-client's plan, with `env` the environment the child
 * gets (its PATH, PATHEXT and ComSpec). Throws SpawnRefused when the program is found nowhere or
 * cannot be run safely.
 */
export function planSpawn(
  rules: WindowsRules | undefined,
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  platform: NodeJS.Platform = process.platform,
  files: FileFacts = nodeFiles,
): SpawnPlan {
  if (platform !== "win32") return { command, args, verbatim: false, via: "as_given" };
  if (!rules) throw new SpawnRefused(`cannot start ${JSON.stringify(command)} on Windows: the engine is not loaded`);
  const pathVar = windowsVar(env, "PATH") ?? "";
  const pathext = windowsVar(env, "PATHEXT");
  const file = rules.windowsFindProgram(command, pathVar, pathext, (c) => files.isFile(c));
  if (!file) {
    throw new SpawnRefused(
      `cannot find ${JSON.stringify(command)} in PATH (with PATHEXT ${pathext ?? ".COM;.EXE;.BAT;.CMD"}; the working directory is not searched)`,
    );
  }
  const lower = file.toLowerCase();
  const batch = lower.endsWith(".cmd") || lower.endsWith(".bat");
  const text = batch ? files.readHead(file, rules.windowsShimReadLimit()) : undefined;
  let node: string | undefined;
  if (batch) {
    const beside = path.win32.join(path.win32.dirname(file), "node.exe");
    node = files.isFile(beside) ? beside : rules.windowsFindProgram("node", pathVar, pathext, (c) => files.isFile(c));
  }
  const facts = { file, text, node, comspec: windowsVar(env, "ComSpec") };
  const out = JSON.parse(rules.windowsPlanSpawn(JSON.stringify(facts), JSON.stringify(args))) as
    | { spawn: { program: string; args: string[]; verbatim: boolean; via: "direct" | "npm_shim" | "batch" } }
    | { error: string };
  if ("error" in out) throw new SpawnRefused(out.error);
  return { command: out.spawn.program, args: out.spawn.args, verbatim: out.spawn.verbatim, via: out.spawn.via };
}

/** The command that ends a process and everything it started on Windows (no process groups):
 *  `taskkill /T /F /PID pid`, run without a shell. */
export function windowsTreeKill(pid: number): { command: string; args: string[] } {
  return { command: "taskkill", args: ["/T", "/F", "/PID", String(pid)] };
}
