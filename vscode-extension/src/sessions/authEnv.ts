// What sign-in keeps (src/auth.ts): the variables an `env_var` auth method needs, and the
// values the user entered, kept per agent in VS Code's SecretStorage as JSON text and passed
// only to that agent's environment.
//
// Architecture Invariant: this file does not import `vscode`.

/** An `authMethods` entry as far as sign-in needs it. */
export interface AuthMethodInfo {
  id: string;
  name?: string;
  description?: string | null;
  type?: string;
  varName?: string;
  vars?: Array<{ name: string; optional?: boolean }>;
  args?: string[];
  env?: Record<string, string>;
}

/** The variables an `env_var` method needs (its `varName`, its non-optional `vars`). */
export function requiredVars(m: AuthMethodInfo): string[] {
  const vars = typeof m.varName === "string" && m.varName ? [m.varName] : [];
  for (const v of m.vars ?? []) if (v && typeof v.name === "string" && v.name && !v.optional) vars.push(v.name);
  return vars;
}

/** The SecretStorage key of the variables kept for `agent` (one per agent: no agent gets
 *  another's). */
export function keptEnvKey(agent: string): string {
  return `acp.auth.env.${agent}`;
}

/** The kept variables from their stored JSON text; anything unreadable is nothing. */
export function parseKeptEnv(text: string | undefined): Record<string, string> {
  if (!text) return {};
  try {
    const parsed = JSON.parse(text) as unknown;
    if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) return {};
    return Object.fromEntries(
      Object.entries(parsed as Record<string, unknown>).filter((e): e is [string, string] => typeof e[1] === "string" && e[1] !== ""),
    );
  } catch {
    return {};
  }
}
