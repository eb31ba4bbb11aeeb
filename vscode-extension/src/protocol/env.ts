// The environment given to agents and terminals: explicit, so the host's secrets (API tokens,
// cloud credentials, ...) do not leak to an agent or a command the user did not hand them to.
// By default only acp-client's allowlist of harmless variables passes (`envAllowlist()` from the
// wasm engine: the same list `acp chat` uses), plus the names the user lists in
// `acp.env.passthrough` and the values set in an agent's own `env`; `acp.env.inheritAll`
// restores inherit-everything. Names are checked with acp-client's `validEnvName`.
//
// Architecture Invariant: this file does not import `vscode`.

import { hostOs } from "../platform/hostOs";
import type { ClientPolicy } from "./policy";

export interface EnvPolicy {
  /** Host variables passed by default (acp-client's allowlist); a trailing `*` matches a prefix. */
  allowlist: readonly string[];
  /** Extra names to pass from the host; a trailing `*` matches a prefix. */
  passthrough: readonly string[];
  /** Pass the whole host environment (the old, leaky behaviour). */
  inheritAll: boolean;
}

/** Nothing from the host (what a process gets when no policy was given). */
export const NO_HOST_ENV: EnvPolicy = { allowlist: [], passthrough: [], inheritAll: false };

/**
 * The policy from the user's settings: acp-client's allowlist, plus the passthrough patterns
 * that are valid names (or name prefixes followed by `*`); the others are returned in `ignored`.
 */
export function envPolicyFrom(
  policy: ClientPolicy,
  passthrough: readonly unknown[],
  inheritAll: boolean,
): EnvPolicy & { ignored: string[] } {
  const valid: string[] = [];
  const ignored: string[] = [];
  for (const p of passthrough) {
    if (typeof p !== "string") continue;
    const stem = p.endsWith("*") ? p.slice(0, -1) : p;
    // "X_*" passes X_ANYTHING; "*" alone would pass everything: that is inheritAll's job.
    if (stem.length > 0 && policy.validEnvName(stem)) valid.push(p);
    else ignored.push(p);
  }
  return { allowlist: policy.envAllowlist(), passthrough: valid, inheritAll, ignored };
}

/** Whether `name` matches `pattern` (a trailing `*`: a prefix); on Windows, whose variable
 *  names ignore case (`Path` is `PATH`), ignoring ASCII case. */
export function matches(name: string, pattern: string, windows = hostOs() === "win32"): boolean {
  if (windows) {
    name = name.toUpperCase();
    pattern = pattern.toUpperCase();
  }
  return pattern.endsWith("*") ? name.startsWith(pattern.slice(0, -1)) : name === pattern;
}

/** The environment for a child: allowed host variables, then `extra` on top. */
export function explicitEnv(
  host: NodeJS.ProcessEnv,
  policy: EnvPolicy,
  extra: Record<string, string> = {},
  windows = hostOs() === "win32",
): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  const allow = [...policy.allowlist, ...policy.passthrough];
  for (const [name, value] of Object.entries(host)) {
    if (value === undefined) continue;
    if (policy.inheritAll || allow.some((p) => matches(name, p, windows))) out[name] = value;
  }
  if (!windows) return { ...out, ...extra };
  // One variable per name whatever its case: `extra`'s `Path` replaces the host's `PATH`.
  for (const name of Object.keys(extra)) {
    for (const k of Object.keys(out)) if (k.toUpperCase() === name.toUpperCase()) delete out[k];
  }
  return { ...out, ...extra };
}

/** The names in `env` that are not valid variable names (acp-client's rule). */
export function invalidEnvNames(policy: ClientPolicy, env: Record<string, string> | undefined): string[] {
  return Object.keys(env ?? {}).filter((n) => !policy.validEnvName(n));
}
