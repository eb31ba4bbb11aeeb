// The acp.* settings and the workspace, read as the other parts need them: the agents (the
// demo agent first when its binary is found) and the selected one, the working directory, the
// environment policy agents and terminals get, and the directories an agent's write under is
// asked about.
// One reason to change: a setting is added, renamed or read differently.

import * as vscode from "vscode";
import { demoAgentSpec, parseAgentSettings, registryCachePath, resolveDemoAgentBinary, DEMO_AGENT_NAME } from "../agents";
import { AgentStartError } from "../protocol/agent";
import { envPolicyFrom, type EnvPolicy } from "../protocol/env";
import type { Logger } from "../protocol/log";
import type { ClientPolicy } from "../protocol/policy";
import type { AgentSpec } from "../protocol/process";
import type { Platform } from "../platform/platform";

/** The `acp` section of the settings, read afresh (a setting changed is seen at the next read). */
export const cfg = () => vscode.workspace.getConfiguration("acp");

export class HostSettings {
  constructor(
    private readonly extension: vscode.ExtensionContext,
    private readonly policy: ClientPolicy,
    private readonly log: Logger,
    private readonly platform: Platform,
  ) {}

  /** The workspace folders on disk (`file:` URIs), as paths. */
  workspaceFolders(): string[] {
    return (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === "file").map((f) => f.uri.fsPath);
  }

  /** A session's `cwd`: the first workspace folder on disk, else the home directory. */
  workspaceCwd(): string {
    const f = vscode.workspace.workspaceFolders?.find((w) => w.uri.scheme === "file");
    if (f) return f.uri.fsPath;
    // The browser: the workspace is remote (`vscode-remote:`, `vscode-vfs:`), its path is where
    // a remote agent serving the same machine finds it.
    const any = vscode.workspace.workspaceFolders?.[0];
    if (this.platform.name === "browser" && any) return any.uri.path;
    return this.platform.path.resolve(this.platform.env.HOME ?? "/");
  }

  /** The directories whose files decide what the extension runs or resumes: the acp registry
   *  cache the agent picker reads, and the extension's storage (sessions, the demo agent's
   *  state). An agent's write under one of them is asked about. */
  ownDirs(): string[] {
    const cache = registryCachePath(this.platform.env);
    return [
      ...(cache ? [this.platform.path.dirname(cache)] : []),
      this.extension.globalStorageUri.fsPath,
      ...(this.extension.storageUri ? [this.extension.storageUri.fsPath] : []),
    ];
  }

  /** The environment policy from the user's settings (acp-client's allowlist + passthrough). */
  envPolicy(): EnvPolicy {
    const { ignored, ...policy } = envPolicyFrom(
      this.policy,
      cfg().get<unknown[]>("env.passthrough", []),
      cfg().get<boolean>("env.inheritAll", false),
    );
    if (ignored.length)
      this.log.warn(
        `acp.env.passthrough: ignoring ${ignored.map((n) => JSON.stringify(n)).join(", ")} (not a variable name or NAME_PREFIX*)`,
      );
    return policy;
  }

  /** The agents of acp.agents, with the demo agent first when its binary is found. */
  agents(): AgentSpec[] {
    const { agents, errors } = parseAgentSettings(cfg().get("agents", []));
    for (const e of errors) this.log.warn(`settings: ${e}`);
    // The demo agent is a local process: not offered where none can run (the browser).
    if (this.platform.transports.localAgentsUnavailable) return agents;
    const demoBin = resolveDemoAgentBinary(
      cfg().get<string>("demoAgentPath"),
      this.platform.env.PATH,
      this.extension.extensionPath,
      this.platform.files.isExecutable,
    );
    const demo = demoAgentSpec(demoBin?.path, this.platform.path.join(this.extension.globalStorageUri.fsPath, "demo-agent"));
    return demo && !agents.some((a) => a.name === demo.name) ? [demo, ...agents] : agents;
  }

  /** acp.defaultAgent, else the first agent; an AgentStartError when there is none. */
  selectedAgent(): AgentSpec {
    const agents = this.agents();
    const want = cfg().get<string>("defaultAgent", DEMO_AGENT_NAME);
    const spec = agents.find((a) => a.name === want) ?? agents[0];
    if (!spec) {
      const local = this.platform.transports.localAgentsUnavailable;
      throw new AgentStartError(
        local
          ? `no agent configured: ${local}`
          : "no agent configured: the demo agent's `acp` binary was not found (set acp.demoAgentPath, put `acp` on PATH, or add an agent to acp.agents)",
        "",
      );
    }
    return spec;
  }

  selectedAgentName(): string | undefined {
    try {
      return this.selectedAgent().name;
    } catch {
      return undefined;
    }
  }
}
