// Sign-in (issue 11, 3): when the agent answers "authentication required", acp-client's
// auth::choose (through wasm) picks a method that needs nobody (an `env_var` method whose
// variables are set, an `agent` method that asks nothing) and `authenticate` is called;
// otherwise the user is offered the agent's methods and nothing interactive starts unless
// chosen: an `env_var` method asks for each missing variable once (a password box) and keeps
// it in VS Code's SecretStorage, passed only to that agent's environment (the agent restarts
// with it); a `terminal` method opens a VS Code terminal running the agent's own login; an
// `agent` method calls `authenticate`.

import * as vscode from "vscode";
import type { AgentConnection } from "./protocol/agent";
import type { SessionDecisions } from "./sessions/decisions";
import type { SignIn, SignInOutcome } from "./sessions/opener";
import { keptEnvKey, parseKeptEnv, requiredVars, type AuthMethodInfo } from "./sessions/authEnv";

export type { AuthMethodInfo } from "./sessions/authEnv";

/** The variables kept for `agent` in SecretStorage (set with an env_var method). */
export async function storedEnv(secrets: vscode.SecretStorage, agent: string): Promise<Record<string, string>> {
  return parseKeptEnv(await secrets.get(keptEnvKey(agent)));
}

export class VsCodeSignIn implements SignIn {
  constructor(
    private readonly secrets: vscode.SecretStorage,
    private readonly decisions: SessionDecisions,
    private readonly log: vscode.LogOutputChannel,
    /** The names of the variables set (non-empty) in the agent's environment. */
    private readonly setVars: (conn: AgentConnection) => string[],
  ) {}

  async signIn(conn: AgentConnection): Promise<SignInOutcome> {
    const methods = (conn.init.authMethods ?? []) as AuthMethodInfo[];
    const auto = this.decisions.chooseAuth(methods, this.setVars(conn), null);
    if (auto.choice === "authenticate") {
      this.log.info(`authenticate with ${auto.methodId}: ${auto.why}`);
      await conn.authenticate(auto.methodId);
      return "authenticated";
    }
    this.log.info(`sign-in needed: ${auto.choice === "needs_user" ? auto.message : auto.choice}`);
    return this.offer(conn, methods);
  }

  /** Offers the agent's methods (the `ACP: Sign In` command too). */
  async offer(conn: AgentConnection, methods: AuthMethodInfo[]): Promise<SignInOutcome> {
    if (methods.length === 0) {
      void vscode.window.showErrorMessage(
        `ACP: ${conn.spec.name} needs you to sign in, and offers no method: log in with its own command first.`,
      );
      return "cancelled";
    }
    const items = methods.map((m) => ({
      label: m.name || m.id,
      description:
        m.type === "env_var"
          ? `enter ${requiredVars(m).join(", ")}`
          : m.type === "terminal"
            ? "log in in a terminal"
            : "sign in with the agent",
      detail: m.description ?? undefined,
      method: m,
    }));
    const pick = await vscode.window.showQuickPick(items, { title: `ACP: ${conn.spec.name} needs you to sign in`, ignoreFocusOut: true });
    if (!pick) return "cancelled";
    const m = pick.method;
    if (conn.spec.url && (m.type === "env_var" || m.type === "terminal")) {
      // A remote agent: neither a variable nor a login run here reaches it.
      const where = m.type === "env_var" ? `set ${requiredVars(m).join(", ")} for it there (acp serve --env)` : "run its login there";
      void vscode.window.showInformationMessage(`ACP: ${conn.spec.name} runs at ${conn.spec.url}, not here: ${where}, then try again.`);
      return "cancelled";
    }
    if (m.type === "env_var") {
      const kept = await storedEnv(this.secrets, conn.spec.name);
      for (const name of requiredVars(m)) {
        const value = await vscode.window.showInputBox({
          title: `ACP: ${m.name || m.id}`,
          prompt: `${name} for ${conn.spec.name} (kept in VS Code's secret storage, passed only to this agent)`,
          password: true,
          ignoreFocusOut: true,
          validateInput: (v) => (v.trim() ? undefined : "enter a value"),
        });
        if (value === undefined) return "cancelled";
        kept[name] = value.trim();
      }
      await this.secrets.store(keptEnvKey(conn.spec.name), JSON.stringify(kept));
      this.log.info(`sign-in: ${requiredVars(m).join(", ")} kept for ${conn.spec.name}; restarting it`);
      return "restart";
    }
    if (m.type === "terminal") {
      const term = vscode.window.createTerminal({
        name: `${conn.spec.name}: sign in`,
        shellPath: conn.spec.command,
        shellArgs: [...conn.spec.args, ...(m.args ?? [])],
        cwd: conn.spec.cwd,
        env: { ...(conn.spec.env ?? {}), ...(m.env ?? {}) },
      });
      term.show();
      const done = await vscode.window.showInformationMessage(
        `ACP: finish signing in to ${conn.spec.name} in the terminal, then continue.`,
        { modal: false },
        "Continue",
      );
      return done === "Continue" ? "restart" : "cancelled";
    }
    // An `agent` method the user chose: it may be interactive; they asked for it.
    const chosen = this.decisions.chooseAuth(methods, this.setVars(conn), m.id);
    if (chosen.choice !== "authenticate") return "cancelled";
    await conn.authenticate(chosen.methodId);
    return "authenticated";
  }

  /** Forgets what was kept for `agent`. */
  async forget(agent: string): Promise<void> {
    await this.secrets.delete(keptEnvKey(agent));
  }
}
