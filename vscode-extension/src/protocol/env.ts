// The environment given to agents and terminals: explicit, so the host's secrets (API tokens,
// cloud credentials, ...) do not leak to an agent or a command the user did not hand them to.
// By default only an allowlist of harmless variables passes (the same list as acp-native's
// `EnvPolicy`), plus the names the user lists in `acp.env.passthrough` and the values set in an
// agent's own `env`; `acp.env.inheritAll` restores inherit-everything.
//
// Architecture Invariant: this file does not import `vscode`.

export const DEFAULT_ENV_ALLOWLIST: readonly string[] = [
  "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_*", "TERM", "COLORTERM",
  "NO_COLOR", "TMPDIR", "TZ", "XDG_*",
];

export interface EnvPolicy {
  /** Extra names to pass from the host; a trailing `*` matches a prefix. */
  passthrough: readonly string[];
  /** Pass the whole host environment (the old, leaky behaviour). */
  inheritAll: boolean;
}

export const DEFAULT_ENV_POLICY: EnvPolicy = { passthrough: [], inheritAll: false };

function matches(name: string, pattern: string): boolean {
  return pattern.endsWith("*") ? name.startsWith(pattern.slice(0, -1)) : name === pattern;
}

/** The environment for a child: allowed host variables, then `extra` on top. */
export function explicitEnv(
  host: NodeJS.ProcessEnv,
  policy: EnvPolicy = DEFAULT_ENV_POLICY,
  extra: Record<string, string> = {},
): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  const allow = [...DEFAULT_ENV_ALLOWLIST, ...policy.passthrough];
  for (const [name, value] of Object.entries(host)) {
    if (value === undefined) continue;
    if (policy.inheritAll || allow.some((p) => matches(name, p))) out[name] = value;
  }
  return { ...out, ...extra };
}
