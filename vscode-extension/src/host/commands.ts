// The acp.* commands (package.json's contributes.commands), registered, and the handlers that
// are commands only: Select Agent (the configured agents and the ACP registry's presets), Forget
// Remote Agent Token, Sign In, the session history, Toggle Raw Protocol Trace, Show Protocol
// Trace (host/tracePanel.ts). The other
// commands call the agent's lifecycle, the session controller or the webview router.
// One reason to change: a command is added, or what one asks changes.

import * as vscode from "vscode";
import { loadPresets, presetChoices, registryCachePath, registryPlatform, DEMO_AGENT_NAME, type PresetChoice } from "../agents";
import type { AuthMethodInfo, VsCodeSignIn } from "../auth";
import type { EngineModule } from "../protocol/engine";
import type { RemoteTokens } from "../remoteTokens";
import type { SessionDecisions } from "../sessions/decisions";
import { pickSession } from "../sessions/history";
import { entriesFrom, type SessionStore } from "../sessions/store";
import type { Platform } from "../platform/platform";
import { CHAT_VIEW_ID } from "../ui/chatView";
import type { AgentLifecycle } from "./lifecycle";
import type { Conversations } from "./conversations";
import { cfg, type HostSettings } from "./settings";
import type { RawTrace } from "./trace";
import type { TracePanel } from "./tracePanel";

export interface CommandParts {
  agent: AgentLifecycle;
  /** The conversations open: commands act on the active one (the editor tab in front, else
   *  the side view's). */
  conversations: Conversations;
  settings: HostSettings;
  trace: RawTrace;
  tracePanel: TracePanel;
  log: vscode.LogOutputChannel;
  engine(): EngineModule;
  remoteTokens: RemoteTokens;
  store: SessionStore;
  /** Node's or the browser's (the host OS for the registry's presets, the registry cache). */
  platform: Platform;
  decisions: SessionDecisions;
  signIn: VsCodeSignIn;
}

export class Commands {
  constructor(private readonly p: CommandParts) {}

  /** Every acp.* command registered; the registrations to dispose. */
  register(): vscode.Disposable[] {
    const { agent, conversations, log } = this.p;
    const sessions = () => conversations.active;
    const router = () => conversations.activeRouter;
    const shown = (e: Error) => void vscode.window.showErrorMessage(`ACP: ${e.message}`);
    const regs: vscode.Disposable[] = [];
    const reg = (id: string, fn: (...a: unknown[]) => unknown) => regs.push(vscode.commands.registerCommand(id, fn));
    // The side view shown and focused, then the keyboard in its prompt (sent once the view is
    // ready).
    reg("acp.openChat", () => vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`).then(() => conversations.sideRouter.focusPrompt()));
    reg("acp.start", () =>
      sessions()
        .ensureSession()
        .catch(() => undefined),
    );
    reg("acp.newSession", () =>
      router()
        .settlePending()
        .then((go) => (go ? sessions().newSession() : undefined))
        .catch(() => undefined),
    );
    // Another conversation beside the others, in an editor tab (a running turn goes on).
    reg("acp.newChatInEditor", () => conversations.openTab().catch(shown));
    // The side view's conversation into an editor tab (its session and turn go on there).
    reg("acp.moveChatToEditor", () => conversations.moveSideToTab());
    reg("acp.cancel", () => sessions().cancel());
    reg("acp.attachSelection", () => router().attachSelection());
    reg("acp.restart", () => agent.restart());
    reg("acp.stop", () => agent.stop());
    reg("acp.history", () => this.showHistory().catch(shown));
    reg("acp.signIn", () => this.signIn().catch(shown));
    reg("acp.showLog", () => log.show(true));
    reg("acp.forgetRemoteToken", () => this.forgetRemoteToken());
    reg("acp.toggleTrace", () => this.toggleTrace());
    reg("acp.showTrace", () => this.p.tracePanel.show(sessions().session?.sessionId));
    reg("acp.selectAgent", () => this.selectAgent().catch(shown));
    return regs;
  }

  /** `ACP: Toggle Raw Protocol Trace`: acp.trace.raw switched (the channel shown when on). */
  private async toggleTrace(): Promise<void> {
    const on = !cfg().get<boolean>("trace.raw", false);
    await cfg().update("trace.raw", on, vscode.ConfigurationTarget.Global);
    if (on) this.p.trace.output().show(true);
    void vscode.window.showInformationMessage(`ACP raw trace ${on ? "on" : "off"}`);
  }

  /** `ACP: Select Agent`: the configured agents (the current one marked), then the presets of
   *  the ACP registry not configured yet (acp-client's snapshot with the cached public registry
   *  laid over it); picking a preset adds it to acp.agents. */
  private async selectAgent(): Promise<void> {
    const { log } = this.p;
    const agents = this.p.settings.agents();
    const current = this.p.agent.conn?.spec.name ?? cfg().get<string>("defaultAgent", DEMO_AGENT_NAME);
    type Item = vscode.QuickPickItem & { name?: string; preset?: PresetChoice };
    const items: Item[] = agents.map((a) => ({
      label: a.name === current ? `$(check) ${a.name}` : a.name,
      name: a.name,
      description: a.name === current ? "current" : a.url ? "remote" : undefined,
      detail: a.url ?? [a.command, ...a.args].join(" "),
    }));
    let presets: PresetChoice[] = [];
    try {
      const loaded = loadPresets(
        this.p.engine().agentPresets,
        registryPlatform(this.p.platform.os, this.p.platform.arch),
        registryCachePath(this.p.platform.env),
        this.p.platform.files.readSmallFile,
      );
      if (loaded.overlayProblem) log.warn(`the cached ACP registry is left out: ${loaded.overlayProblem}`);
      presets = presetChoices(loaded, agents);
    } catch (e) {
      log.warn(`agent presets: ${(e as Error).message}`);
    }
    if (presets.length) {
      items.push({ label: "ACP registry: added to acp.agents when picked", kind: vscode.QuickPickItemKind.Separator });
      for (const p of presets)
        items.push({
          label: p.entry ? `$(cloud-download) ${p.name}` : `$(circle-slash) ${p.name}`,
          description: p.description,
          detail: p.detail,
          preset: p,
        });
    }
    const pick = await vscode.window.showQuickPick(items, {
      title: "ACP: select the agent to use",
      matchOnDetail: true,
      matchOnDescription: true,
    });
    if (!pick || pick.name === current) return;
    const preset = pick.preset;
    if (preset && !preset.entry) {
      void vscode.window.showInformationMessage(`ACP: ${preset.name} cannot be added here: ${preset.problem}`);
      return;
    }
    const name = preset ? preset.name : pick.name;
    if (!name) return;
    // Switching starts a new session: ask first when there is a conversation to lose, and
    // before adding a preset (it runs a command that may download the agent). Every
    // conversation's session is with the one agent: turns running are stopped, said plainly.
    const conv = this.p.conversations.side.shown;
    const hasConversation = !!conv && conv.saved().entries.some((e) => e.type !== "notice");
    const running = this.p.conversations.all().filter((c) => c.busy).length;
    if (preset?.entry || hasConversation || running) {
      const what = preset?.entry
        ? `Add ${name} to acp.agents and switch to it? It runs: ${preset.detail}${preset.entry.command === "npx" || preset.entry.command === "uvx" ? ` (${preset.entry.command} downloads it the first time)` : ""}.`
        : `Switch to ${name}?`;
      const button = preset?.entry ? "Add and Switch" : "Switch";
      const stops = running
        ? ` ${running === 1 ? "A turn is" : `${running} turns are`} running: switching stops ${running === 1 ? "it" : "them"}.`
        : "";
      const ok = await vscode.window.showWarningMessage(
        `${what}${hasConversation ? " The chat starts over in a new session with it." : ""}${stops}`,
        { modal: true },
        button,
      );
      if (ok !== button) return;
    }
    if (preset?.entry) {
      const user = cfg().inspect<unknown[]>("agents")?.globalValue;
      await cfg().update("agents", [...(Array.isArray(user) ? user : []), preset.entry], vscode.ConfigurationTarget.Global);
      log.info(`added ${name} to acp.agents: ${preset.detail}`);
    }
    await cfg().update("defaultAgent", name, vscode.ConfigurationTarget.Global);
    await this.p.agent.restart();
  }

  /** `ACP: Forget Remote Agent Token`: the chosen remote agent's token is asked for again. */
  private async forgetRemoteToken(): Promise<void> {
    const remote = this.p.settings.agents().filter((a) => a.url);
    if (!remote.length) {
      void vscode.window.showInformationMessage("ACP: no remote agent (an acp.agents entry with a url) is configured.");
      return;
    }
    const pick =
      remote.length === 1
        ? remote[0]
        : (
            await vscode.window.showQuickPick(
              remote.map((a) => ({ label: a.name, detail: a.url, spec: a })),
              { title: "ACP: forget the token of which remote agent?" },
            )
          )?.spec;
    if (!pick?.url) return;
    await this.p.remoteTokens.forget(pick.url);
    void vscode.window.showInformationMessage(
      `ACP: the token for ${new URL(pick.url).origin} is forgotten; it is asked for at the next connection.`,
    );
  }

  /** `ACP: Session History`: this workspace's saved conversations and the running agent's
   *  sessions (session/list, when it can list them); the one picked is opened. */
  private async showHistory(): Promise<void> {
    const sessions = this.p.conversations.active;
    const agentList: Array<{ sessionId: string; title?: string | null; updatedAt?: string | null }> = [];
    const conn = this.p.agent.conn;
    if (conn?.canList) {
      try {
        const r = await conn.listSessions(this.p.settings.workspaceCwd());
        agentList.push(...(r.sessions ?? []));
      } catch (e) {
        this.p.log.warn(`session/list: ${this.p.decisions.errorWords(e)}`);
      }
    }
    const entries = entriesFrom(this.p.store.list(), agentList, { name: conn?.spec.name ?? "", title: conn?.agentTitle ?? "" });
    const pick = await pickSession(entries, sessions.session?.sessionId);
    if (!pick || pick.sessionId === sessions.session?.sessionId) return;
    // Open in a conversation already: shown there. While a turn runs here, the one picked opens
    // in a new editor tab (the turn goes on).
    const open = this.p.conversations.all().find((c) => c.session?.sessionId === pick.sessionId);
    if (open) return void this.p.conversations.reveal(open);
    if (sessions.busy) return void (await this.p.conversations.openTab(pick));
    // Another conversation replaces this one: its pending review is settled first.
    if (await this.p.conversations.activeRouter.settlePending()) await sessions.openSaved(pick);
  }

  /** `ACP: Sign In`: the running agent's methods, offered. */
  private async signIn(): Promise<void> {
    const conn = await this.p.agent.ensureAgent();
    const outcome = await this.p.signIn.offer(conn, (conn.init.authMethods ?? []) as AuthMethodInfo[]);
    if (outcome === "restart") await this.p.agent.restart();
    else if (outcome === "authenticated" && !this.p.conversations.active.session) await this.p.conversations.active.ensureSession();
  }
}
