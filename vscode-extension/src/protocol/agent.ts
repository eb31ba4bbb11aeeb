// AgentConnection: one running agent = one AgentTransport (opened by the platform's
// AgentTransports: a spawned process over its stdio, or a remote agent over WebSocket or HTTP
// when the spec has a `url`) + one AcpClient over it,
// after a successful `initialize`. Typed helpers for the client→agent methods the extension uses.
//
// Architecture Invariant: this file does not import `vscode`.

import type {
  ClientCapabilities,
  ContentBlock,
  InitializeResponse,
  ListSessionsResponse,
  NewSessionResponse,
  PromptResponse,
} from "@agentclientprotocol/sdk";
import type { SessionOpen } from "acp-wasm-client";
import { AcpClient, type Answer, type Clock, type IncomingHandler, realClock } from "./client";
import type { ConnectionOptions, EngineModule, WasmSession } from "./engine";
import { invalidEnvNames } from "./env";
import { ClientPolicy } from "./policy";
import type { Logger, TraceSink } from "./log";
import type { AgentSpec } from "./process";
import type { ExitInfo, RemoteError } from "./transport";
import { TransportRefused, type AgentTransports } from "../platform/platform";
import type { AgentTransport, TransportEvents } from "./transport";
import { offerParams, PROTOCOL_V2, v1View, versionRefusal } from "./v2";

export const PROTOCOL_VERSION = 1;

/** The agent could not be started or did not complete `initialize`. */
export class AgentStartError extends Error {
  override name = "AgentStartError";
  constructor(
    message: string,
    readonly stderrTail: string,
    readonly exit?: ExitInfo,
  ) {
    super(message);
  }
}

export interface StartOptions {
  engine: EngineModule;
  engineOptions: ConnectionOptions;
  capabilities: ClientCapabilities;
  clientInfo: { name: string; version: string };
  handler: IncomingHandler;
  /** How this host reaches an agent (the platform's: spawn, `ws`, `http`; or the browser's). */
  transports: AgentTransports;
  log: Logger;
  trace: TraceSink;
  /** Gets every stderr chunk of the agent. */
  onStderr(text: string): void;
  /** A remote agent's token (`Authorization: Bearer`). */
  token?: string;
  /** Send the token over `ws://` / `http://` to a host that is not this machine (the
   *  `acp.remote.allowInsecure` setting); refused otherwise (`AgentConnection.tokenRefusal`). */
  allowInsecure?: boolean;
  initializeTimeoutMs?: number;
  clock?: Clock;
  /** Offer ACP v2 (draft) in `initialize` too (protocol/v2.ts): only with an engine that speaks
   *  it (`engineSpeaksV2`: the `acp.experimental.protocolV2` setting loaded the client-v2
   *  build). The agent picks: a v1 agent answers 1 and the connection stays v1. */
  offerV2?: boolean;
}

function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export function describeExit(e: ExitInfo): string {
  if (e.remote) return e.remote.message;
  if (e.reason) return e.reason;
  if (e.spawnError) return `could not start: ${e.spawnError.message}`;
  if (e.signal) return `killed by ${e.signal}`;
  return `exited with code ${e.code}`;
}

export class AgentConnection {
  private stopping = false;

  private constructor(
    readonly spec: AgentSpec,
    readonly transport: AgentTransport,
    readonly client: AcpClient,
    /** The agent's `initialize` answer as v1's (a v2 answer read into it: `v1View`). */
    readonly init: InitializeResponse,
    /** The answer's JSON text as sent, for the session engine (`Session.initialized`). */
    readonly initJson: string,
  ) {}

  /** The protocol version `initialize` settled on: 1, or 2 (ACP v2, draft) when both offered it. */
  get protocolVersion(): number {
    return this.init.protocolVersion === PROTOCOL_V2 ? PROTOCOL_V2 : PROTOCOL_VERSION;
  }

  /** True once stop() was called: an exit after that is not a crash. */
  get isStopping(): boolean {
    return this.stopping;
  }

  get exited(): Promise<ExitInfo> {
    return this.transport.exited;
  }

  /** Why a remote agent's connection failed or ended (undefined for a process). */
  static remoteFailure(e: unknown): RemoteError | undefined {
    return e instanceof AgentStartError ? e.exit?.remote : undefined;
  }

  /** Why a token must not be sent to `url` (acp-client's rule, `checkTokenTransport`: never in
   *  clear to a host that is not this machine unless allowed), or undefined. */
  static tokenRefusal(engine: EngineModule, url: string, allowInsecure: boolean): string | undefined {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      return undefined; // the transport says what is wrong with the URL
    }
    return engine.checkTokenTransport(u.protocol, u.host, u.hostname, allowInsecure, "the acp.remote.allowInsecure setting");
  }

  static async start(spec: AgentSpec, o: StartOptions): Promise<AgentConnection> {
    if (spec.url && o.token) {
      const refused = AgentConnection.tokenRefusal(o.engine, spec.url, o.allowInsecure ?? false);
      if (refused) throw new AgentStartError(`${spec.name}: ${refused}`, "");
    }
    const policy = new ClientPolicy(() => o.engine);
    const badNames = invalidEnvNames(policy, spec.env);
    if (badNames.length > 0) {
      throw new AgentStartError(
        `${spec.name}: invalid environment variable name${badNames.length > 1 ? "s" : ""} ${badNames.map((n) => JSON.stringify(n)).join(", ")} in its env (names must match [A-Za-z_][A-Za-z0-9_]*)`,
        "",
      );
    }
    // Without a policy the agent gets acp-client's allowlist of host variables, nothing more.
    spec = {
      ...spec,
      envPolicy: spec.envPolicy ?? { allowlist: policy.envAllowlist(), passthrough: [], inheritAll: false },
      windowsRules: o.engine,
    };
    const engine = new o.engine.AcpConnection("client", o.engineOptions);
    let client: AcpClient | undefined;
    const events: TransportEvents = {
      onStdout: (b) => client?.receive(b),
      onStdoutEnd: () => client?.receiveEof(),
      onStderr: (s) => {
        if (o.trace.enabled) o.trace.write("stderr", s);
        o.onStderr(s);
      },
      onExit: () => client?.receiveEof(),
    };
    let proc: AgentTransport;
    try {
      proc = o.transports.open(spec, { token: o.token, engine: o.engine }, events);
    } catch (e) {
      // A local agent where none can run, a caFile that cannot be read, a Windows program found
      // nowhere or a batch file an argument cannot be passed to safely.
      if (e instanceof TransportRefused) throw new AgentStartError(`${spec.name}: ${e.message}`, "");
      throw e;
    }
    client = new AcpClient(engine, { write: (b) => proc.write(b) }, o.handler, o.log, o.trace, o.clock ?? realClock);
    const fail = async (message: string, exit?: ExitInfo): Promise<never> => {
      const info = exit ?? (await proc.stop(500));
      client!.dispose();
      throw new AgentStartError(message, proc.stderrTail.text(), info);
    };
    try {
      await proc.started;
    } catch (e) {
      const how = spec.url ? "cannot connect" : `cannot run ${JSON.stringify(spec.command)}`;
      return fail(`${spec.name}: ${how}: ${(e as Error).message}`, await proc.exited);
    }
    o.log.info(
      spec.url
        ? `agent ${spec.name} connected: ${spec.url}`
        : `agent ${spec.name} started: ${proc.description}: ${JSON.stringify([spec.command, ...spec.args])}`,
    );
    const v1Params = { protocolVersion: PROTOCOL_VERSION, clientCapabilities: o.capabilities, clientInfo: o.clientInfo };
    const offered = o.offerV2 ? PROTOCOL_V2 : PROTOCOL_VERSION;
    const init = client.request<InitializeResponse>(
      "initialize",
      o.offerV2 ? offerParams(v1Params) : v1Params,
      o.initializeTimeoutMs ?? 30_000,
    );
    const outcome = await Promise.race([
      init.then(
        (r) => ({ ok: r }),
        (err: Error) => ({ err }),
      ),
      proc.exited.then((exit) => ({ exit })),
    ]);
    if ("exit" in outcome) return fail(`${spec.name} ${describeExit(outcome.exit)} before initialize completed`, outcome.exit);
    if ("err" in outcome) {
      // The agent closing its stdout fails `initialize` just before its exit is reported:
      // wait briefly for the exit so the error says how the agent ended.
      const exit = await Promise.race([proc.exited, delay(2000).then(() => undefined)]);
      if (exit) return fail(`${spec.name} ${describeExit(exit)} before initialize completed`, exit);
      return fail(`${spec.name}: initialize failed: ${outcome.err.message}`);
    }
    const res = outcome.ok;
    const refused = versionRefusal(res?.protocolVersion, offered);
    if (refused) return fail(`${spec.name} ${refused}`);
    const view = res.protocolVersion === PROTOCOL_V2 ? v1View(res) : res;
    if (view.protocolVersion === PROTOCOL_V2) o.log.info(`agent ${spec.name} speaks ACP v2 (draft)`);
    return new AgentConnection(spec, proc, client, view, JSON.stringify(res));
  }

  get agentTitle(): string {
    const i = this.init.agentInfo;
    return i ? `${i.title ?? i.name} ${i.version}` : this.spec.name;
  }

  /** The request the session engine named to open a session (`Session.initialized`,
   *  `openFailed`'s retry); `atAnswer` gets its answer at its place in wire order (what the
   *  engine's `opened` must be fed at: the end of a `session/load`'s replay). */
  open(open: SessionOpen, cwd: string, mcpServers: unknown[], atAnswer: (answer: Answer) => void): Promise<unknown> {
    if (open.send === "new") return this.client.request("session/new", { cwd, mcpServers }, undefined, atAnswer);
    // "replay" (ACP v2 only, never named on a v1 connection): v2's merged load, a
    // session/resume replaying from the start.
    if (open.send === "replay") {
      const params = { sessionId: open.sessionId, cwd, mcpServers, replayFrom: { type: "start" } };
      return this.client.request("session/resume", params, undefined, atAnswer);
    }
    const params = { sessionId: open.sessionId, cwd, mcpServers };
    return this.client.request(`session/${open.send}`, params, undefined, atAnswer);
  }

  /** Every `session/update` from now on is folded into `session` inside wasm (`onFolded`: the
   *  view has changes to draw); `undefined`: none is. */
  foldInto(session: WasmSession | undefined, onFolded?: () => void): void {
    this.client.foldInto(session, onFolded);
  }

  /** `session` is the one updates are folded into (foldInto). */
  foldsInto(session: WasmSession): boolean {
    return this.client.foldsInto(session);
  }

  newSession(cwd: string, mcpServers: unknown[] = []): Promise<NewSessionResponse> {
    return this.client.request<NewSessionResponse>("session/new", { cwd, mcpServers });
  }

  /** The agent offers `session/list` (`sessionCapabilities.list`). */
  get canList(): boolean {
    return this.init.agentCapabilities?.sessionCapabilities?.list != null;
  }

  /** `session/list` (one page). */
  listSessions(cwd: string, cursor?: string): Promise<ListSessionsResponse> {
    return this.client.request<ListSessionsResponse>("session/list", cursor ? { cwd, cursor } : { cwd });
  }

  /** `authenticate` with one of the agent's `authMethods`. */
  authenticate(methodId: string): Promise<unknown> {
    return this.client.request("authenticate", { methodId });
  }

  prompt(sessionId: string, prompt: ContentBlock[]): Promise<PromptResponse> {
    return this.client.request<PromptResponse>("session/prompt", { sessionId, prompt });
  }

  cancel(sessionId: string): void {
    this.client.notify("session/cancel", { sessionId });
  }

  setMode(sessionId: string, modeId: string): Promise<unknown> {
    return this.client.request("session/set_mode", { sessionId, modeId });
  }

  setConfigOption(sessionId: string, configId: string, value: string | boolean): Promise<{ configOptions?: unknown }> {
    const params = typeof value === "boolean" ? { sessionId, configId, type: "boolean", value } : { sessionId, configId, value };
    return this.client.request("session/set_config_option", params);
  }

  /** Answers everything pending (`cancelled`), then stops the process (grace, TERM, KILL). */
  async stop(graceMs = 2000): Promise<ExitInfo> {
    this.stopping = true;
    this.client.close("client stopping");
    const exit = await this.transport.stop(graceMs);
    this.client.dispose();
    return exit;
  }
}
