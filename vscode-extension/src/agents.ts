// Which agents exist: the user's `acp.agents` plus the built-in demo agent (`acp demo-agent`).
// Pure (no `vscode`), so the resolution rules are unit-tested.

import * as fs from "node:fs";
import * as path from "node:path";
import type { AgentSpec } from "./protocol/process";
import { checkRemoteUrl, RemoteError } from "./protocol/remote";

export const DEMO_AGENT_NAME = "ACP demo agent";

export interface AgentSetting {
  name?: unknown;
  command?: unknown;
  args?: unknown;
  env?: unknown;
  cwd?: unknown;
  url?: unknown;
  caFile?: unknown;
}

function isExecutable(p: string): boolean {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

/**
 * The `acp` binary for the demo agent: the `acp.demoAgentPath` setting, else `acp` on PATH,
 * else the repository's target/release/acp relative to the extension (development).
 */
export function resolveDemoAgentBinary(
  setting: string | undefined,
  envPath: string | undefined,
  extensionPath: string,
  exists: (p: string) => boolean = isExecutable,
): { path: string; source: "setting" | "PATH" | "repository" } | undefined {
  if (setting && setting.trim()) return { path: setting.trim(), source: "setting" };
  for (const dir of (envPath ?? "").split(path.delimiter)) {
    if (!dir) continue;
    const p = path.join(dir, "acp");
    if (exists(p)) return { path: p, source: "PATH" };
  }
  const dev = path.resolve(extensionPath, "..", "target", "release", "acp");
  if (exists(dev)) return { path: dev, source: "repository" };
  return undefined;
}

/** Validates `acp.agents` entries; returns the good ones and a message per bad one. */
export function parseAgentSettings(raw: unknown): { agents: AgentSpec[]; errors: string[] } {
  const agents: AgentSpec[] = [];
  const errors: string[] = [];
  if (!Array.isArray(raw)) return { agents, errors: raw === undefined ? [] : ["acp.agents must be an array"] };
  raw.forEach((a: AgentSetting, i) => {
    if (a && typeof a === "object" && a.url !== undefined) {
      // A remote agent (acp serve --http, or the official HTTP transport) reached by URL.
      if (a.command !== undefined) {
        errors.push(`acp.agents[${i}]: give either "command" (a local agent) or "url" (a remote one), not both`);
        return;
      }
      const url = typeof a.url === "string" ? checkRemoteUrl(a.url.trim()) : new RemoteError("url", `"url" must be a string`);
      if (url instanceof RemoteError) {
        errors.push(`acp.agents[${i}]: ${url.message}`);
        return;
      }
      if (a.caFile !== undefined && (typeof a.caFile !== "string" || !a.caFile.trim())) {
        errors.push(`acp.agents[${i}]: "caFile" must be the path of a PEM file`);
        return;
      }
      const href = (a.url as string).trim();
      agents.push({
        name: typeof a.name === "string" && a.name.trim() ? a.name.trim() : href,
        command: "",
        args: [],
        url: href,
        caFile: typeof a.caFile === "string" ? a.caFile.trim() : undefined,
      });
      return;
    }
    if (!a || typeof a !== "object" || typeof a.command !== "string" || !a.command.trim()) {
      errors.push(`acp.agents[${i}]: "command" (or "url", for a remote agent) is required`);
      return;
    }
    const args = a.args === undefined ? [] : a.args;
    if (!Array.isArray(args) || !args.every((x) => typeof x === "string")) {
      errors.push(`acp.agents[${i}]: "args" must be an array of strings`);
      return;
    }
    let env: Record<string, string> | undefined;
    if (a.env !== undefined) {
      if (!a.env || typeof a.env !== "object" || Array.isArray(a.env) || !Object.values(a.env).every((v) => typeof v === "string")) {
        errors.push(`acp.agents[${i}]: "env" must be an object of strings`);
        return;
      }
      env = a.env as Record<string, string>;
    }
    agents.push({
      name: typeof a.name === "string" && a.name.trim() ? a.name.trim() : a.command,
      command: a.command,
      args: args as string[],
      env,
      cwd: typeof a.cwd === "string" && a.cwd ? a.cwd : undefined,
    });
  });
  return { agents, errors };
}

/** The demo agent's spec, or undefined when no `acp` binary can be found. With `stateDir` it
 *  keeps its sessions there (`--state-dir`), so they can be resumed after a restart. */
export function demoAgentSpec(binary: string | undefined, stateDir?: string): AgentSpec | undefined {
  const args = stateDir ? ["demo-agent", "--state-dir", stateDir] : ["demo-agent"];
  return binary ? { name: DEMO_AGENT_NAME, command: binary, args } : undefined;
}
