// Which agents exist: the user's `acp.agents` plus the built-in demo agent (`acp demo-agent`).
// Pure (no `vscode`, no Node: paths are the host's, files are read by the caller's functions),
// so the resolution rules are unit-tested.

import { hostPaths } from "./platform/hostPaths";
import type { AgentSpec } from "./protocol/process";
import { checkRemoteUrl } from "./protocol/remoteUrl";
import { RemoteError } from "./protocol/transport";
import type { AgentPresets } from "acp-wasm-client";

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

/**
 * The `acp` binary for the demo agent: the `acp.demoAgentPath` setting, else `acp` on PATH,
 * else the repository's target/release/acp relative to the extension (development).
 */
export function resolveDemoAgentBinary(
  setting: string | undefined,
  envPath: string | undefined,
  extensionPath: string,
  exists: (p: string) => boolean,
): { path: string; source: "setting" | "PATH" | "repository" } | undefined {
  if (setting && setting.trim()) return { path: setting.trim(), source: "setting" };
  const path = hostPaths();
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

/** A registry platform key (`linux-x86_64`, `darwin-aarch64`...) for Node's platform and arch. */
export function registryPlatform(platform: string, arch: string): string {
  const os = platform === "win32" ? "windows" : platform;
  const cpu = { x64: "x86_64", arm64: "aarch64", ia32: "x86" }[arch] ?? arch;
  return `${os}-${cpu}`;
}

/** The cached copy of the public ACP registry that `acp agents` keeps
 *  (`$XDG_CACHE_HOME/acp/registry.json`, else `~/.cache/acp/registry.json`). */
export function registryCachePath(env: NodeJS.ProcessEnv): string | undefined {
  const path = hostPaths();
  if (env.XDG_CACHE_HOME) return path.join(env.XDG_CACHE_HOME, "acp", "registry.json");
  return env.HOME ? path.join(env.HOME, ".cache", "acp", "registry.json") : undefined;
}

/** One preset offered in the agent picker: the agent it adds to acp.agents, or why it cannot. */
export interface PresetChoice {
  name: string;
  description: string;
  /** What it would run, every variable the entry sets first (`NAME=value`, acp-client's
   *  `shown`), for the picker's detail line and the question before adding it. */
  detail: string;
  /** The acp.agents entry it adds (name, command, args, env). */
  entry?: { name: string; command: string; args: string[]; env?: Record<string, string> };
  problem?: string;
}

/** The registry's agents (acp-client's presets, through the engine's `agentPresets`) that are
 *  not configured yet (by name, or by the same command line). Every variable an entry sets is
 *  shown with its command; an entry acp-client refuses (a variable that changes what code runs,
 *  such as NODE_OPTIONS) is offered with why and is never added as it is. */
export function presetChoices(presets: AgentPresets, configured: AgentSpec[]): PresetChoice[] {
  const lines = new Set(configured.map((a) => JSON.stringify([a.command, ...a.args])));
  const names = new Set(configured.map((a) => a.name));
  const out: PresetChoice[] = [];
  for (const p of presets.agents) {
    if (names.has(p.name)) continue;
    const description = `${p.version ? `${p.version} · ` : ""}${p.description}`;
    const cmd = p.launch?.command;
    if (!cmd?.length) {
      out.push({
        name: p.name,
        description,
        detail: p.problem ?? "cannot be started here",
        problem: p.problem ?? "cannot be started here",
      });
      continue;
    }
    if (lines.has(JSON.stringify(cmd))) continue;
    const detail = [...p.env.map((v) => v.shown), cmd.join(" ")].join(" ");
    if (p.problem) {
      out.push({ name: p.name, description, detail, problem: `${p.problem}: add it to acp.agents yourself if you trust it` });
      continue;
    }
    const env: Record<string, string> = {};
    for (const v of p.env) if (v.status === "passed") env[v.name] = v.value;
    out.push({
      name: p.name,
      description,
      detail,
      entry: { name: p.name, command: cmd[0]!, args: cmd.slice(1), ...(Object.keys(env).length ? { env } : {}) },
    });
  }
  return out;
}

/** The presets: acp-client's snapshot with the cached public registry laid over it. */
export function loadPresets(
  agentPresets: (platform: string, overlayJson: string | null) => string,
  platform: string,
  cachePath: string | undefined,
  read: (p: string) => string | undefined,
): AgentPresets {
  const overlay = cachePath ? read(cachePath) : undefined;
  return JSON.parse(agentPresets(platform, overlay ?? null)) as AgentPresets;
}
