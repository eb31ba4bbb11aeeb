// ACP v2 (draft) on the extension's side of the wire (the `acp.experimental.protocolV2`
// setting, which loads acp-wasm's `client-v2` build): what differs from v1 before the session
// engine takes over, which folds v2's updates, takes a replay in v2's order and ends a turn on
// an idle `state_update` (acp-client/src/session/v2.rs).
//
// * `initialize` offers 2 (`offerParams`): v1's request with v2's `info` and `capabilities`
//   beside it, so a v1 agent reads what it knows and answers 1 (the connection then is v1 in
//   every respect), a v2 agent answers 2. An answer of 2 is accepted only when 2 was offered
//   (`versionRefusal`).
// * v2's `initialize` answer (`info`, `capabilities.session.prompt`, …) is read into the v1
//   shape the rest of the extension reads (`v1View`); the session engine gets the answer as
//   sent.
// * a `session/prompt` answer only acknowledges: the turn ends when the engine says so
//   (`V2Session.promptAnswered`, `turnEnded`; host/sessionController.ts waits for it).
// * a `session/request_permission` has a `title` and no `toolCall`: it is asked as a v1
//   question about a tool call of that title (`PermissionBridge.handleV2`: acp-client's
//   `question::v2::as_v1` through the engine, as `acp chat` reads it).
//
// Architecture Invariant: this file does not import `vscode`.

import type { InitializeResponse } from "@agentclientprotocol/sdk";
import type { EngineModule, WasmSession } from "./engine";

/** The protocol version number of ACP v2. */
export const PROTOCOL_V2 = 2;

/** The session engine's v2 methods (acp-wasm's `client-v2` build only; the default client
 *  build has neither). */
export interface V2Session {
  /** The `session/prompt` answer (its JSON text) of the turn begun: the stop reason when the
   *  turn is over already (v1: always; v2: when its idle `state_update` came before the answer),
   *  else undefined. */
  promptAnswered(resultJson: string): string | undefined;
  /** The last turn's stop reason once an idle `state_update` ended it ("" when the agent went
   *  idle without one); undefined while it runs. */
  readonly turnEnded: string | undefined;
}

/** Whether `engine` is a build that speaks v2 (its `Session` has `promptAnswered`). */
export function engineSpeaksV2(engine: EngineModule): boolean {
  const proto = (engine.Session as unknown as { prototype?: Partial<V2Session> }).prototype;
  return typeof proto?.promptAnswered === "function";
}

/** `session` as a v2 session engine; throws when its build has no v2 (a v2 connection is only
 *  made with a build that has it: `engineSpeaksV2`). */
export function v2Session(session: WasmSession): V2Session {
  const s = session as unknown as Partial<V2Session>;
  if (typeof s.promptAnswered !== "function") throw new Error("the wasm engine has no ACP v2 (it is not the client-v2 build)");
  return s as V2Session;
}

/** v1's `initialize` params offering v2 too: `protocolVersion: 2`, v2's `info` (the client's
 *  `clientInfo`) and `capabilities` (none of v1's client methods: v2 has no client file system
 *  or terminals). */
export function offerParams(v1: { protocolVersion: number; clientInfo: unknown; clientCapabilities: unknown }): Record<string, unknown> {
  return { ...v1, protocolVersion: PROTOCOL_V2, info: v1.clientInfo, capabilities: {} };
}

/** Why the agent's `initialize` answer's version cannot be spoken (undefined: it can): 1
 *  always, 2 only when it was offered. */
export function versionRefusal(answered: unknown, offered: number): string | undefined {
  if (answered === 1 || (answered === PROTOCOL_V2 && offered >= PROTOCOL_V2)) return undefined;
  const speaks = offered >= PROTOCOL_V2 ? "1 and 2" : "1";
  return `speaks ACP protocol version ${JSON.stringify(answered)}; this extension speaks ${speaks}`;
}

interface V2Init {
  info?: { name?: string; title?: string | null; version?: string };
  capabilities?: {
    session?: {
      prompt?: { image?: unknown; audio?: unknown; embeddedContext?: unknown } | null;
      mcp?: { http?: unknown; sse?: unknown } | null;
    } | null;
  } | null;
}

const present = (v: unknown): boolean => v !== undefined && v !== null && v !== false;

/**
 * A v2 `initialize` answer read as v1's, for what the extension reads of it: the agent's info;
 * the prompt content it takes (v2: `capabilities.session.prompt.{image,audio,embeddedContext}`
 * objects, present or not); its MCP transports; `session/list` (open to every client of an
 * agent that advertises `session`, v2's method surface). `loadSession` is false (v2 reopens
 * by `session/resume` with a replay, the engine's choice) and `authMethods` empty (v2 signs in
 * with `auth/login`, which the extension does not send: v1's `authenticate` is gone in v2).
 */
export function v1View(result: unknown): InitializeResponse {
  const r = (result ?? {}) as V2Init;
  const session = r.capabilities?.session;
  const prompt = session?.prompt ?? undefined;
  const mcp = session?.mcp ?? undefined;
  const info = r.info;
  return {
    protocolVersion: PROTOCOL_V2,
    agentInfo:
      info && typeof info.name === "string"
        ? { name: info.name, title: info.title ?? undefined, version: String(info.version ?? "") }
        : undefined,
    agentCapabilities: {
      loadSession: false,
      promptCapabilities: {
        image: present(prompt?.image),
        audio: present(prompt?.audio),
        embeddedContext: present(prompt?.embeddedContext),
      },
      mcpCapabilities: { http: present(mcp?.http), sse: present(mcp?.sse) },
      sessionCapabilities: present(session) ? { list: {} } : {},
    },
    authMethods: [],
  };
}

/**
 * The end of a v2 turn: the `session/prompt` answer only acknowledges it; the turn ends when
 * the session engine has folded the agent's idle `state_update` (before the answer, or after
 * it). One turn at a time (a session runs one turn).
 */
export class V2TurnEnd {
  private wait: { session: V2Session; resolve(stopReason: string): void; reject(e: Error): void } | undefined;

  /** The turn begun on `session`'s thread was acknowledged with `answer` (the result, as
   *  received): resolves with its stop reason once the engine has ended it (`check`), rejects
   *  when it is abandoned (`abandon`). */
  answered(session: V2Session, answer: unknown): Promise<string> {
    const now = session.promptAnswered(JSON.stringify(answer ?? null));
    if (now !== undefined) return Promise.resolve(now);
    this.abandon("another turn began");
    return new Promise((resolve, reject) => (this.wait = { session, resolve, reject }));
  }

  /** Updates were folded: the turn waiting for its end gets it when the engine has it. */
  check(): void {
    const w = this.wait;
    const stopReason = w?.session.turnEnded;
    if (!w || stopReason === undefined) return;
    this.wait = undefined;
    w.resolve(stopReason);
  }

  /** The turn waiting for its end, if any, fails with `why` (the agent ended, the conversation
   *  went away). */
  abandon(why: string): void {
    const w = this.wait;
    this.wait = undefined;
    w?.reject(new Error(why));
  }

  /** A turn is waiting for its end. */
  get waiting(): boolean {
    return this.wait !== undefined;
  }
}
