// AcpClient: drives one wasm `AcpConnection` (role "client") over a byte transport.
//
// The engine does all protocol work; this class only moves bytes and events between the engine
// and the application, following the drain rule of acp-wasm/API.md: after any call that mutates
// the connection, drain pollTransmit() until empty and the events with pollEvents(), then re-arm
// one timer for pollTimeout(). Outgoing requests become Promises; incoming requests go to an async handler
// with a cancellation token that fires when the engine answers the request itself (timeout,
// session/cancel, close) or the agent sends $/cancel_request.
//
// With a session engine attached (`foldInto`), the events are drained with
// `pollEventsFor(session)`: every `session/update` is folded into the session inside wasm,
// with the params the engine already holds (nothing of it crosses into JavaScript), and the
// rest comes here. It stops after each response, so a request's `atAnswer` (the session's
// `opened` for the request that opens it) runs at the answer's place in wire order, before
// the updates that followed it are folded.
//
// Architecture Invariant: this file does not import `vscode`.

import { CancellationSource, type CancellationToken } from "./cancellation";
import type { RequestFailureKind } from "acp-wasm-client";
import type { AcpEvent, EngineConnection, JsonRpcError, WasmSession } from "./engine";
import { JsonRpc, RequestError } from "./errors";
import { type Logger, type TraceSink, nullTrace, truncateJson, truncateText } from "./log";

export interface Clock {
  now(): number;
  setTimer(callback: () => void, delayMs: number): { cancel(): void };
}

export const realClock: Clock = {
  now: () => performance.now(),
  setTimer(callback, delayMs) {
    const t = setTimeout(callback, delayMs);
    return { cancel: () => clearTimeout(t) };
  },
};

/** Where encoded messages for the agent go (its stdin). */
export interface ByteSink {
  write(bytes: Uint8Array): void;
}

/** The application side: what to do with the agent's requests and notifications. */
export interface IncomingHandler {
  handleRequest(method: string, params: unknown, token: CancellationToken): Promise<unknown>;
  /** `paramsJson`: the params' JSON text (stringified once, for the log line and for consumers
   *  that take JSON text, such as acp-client's thread model); undefined when there are none. */
  handleNotification(method: string, params: unknown, paramsJson?: string): void;
}

/** An outgoing request that did not succeed. */
export class RpcError extends Error {
  override name = "RpcError";
  constructor(
    readonly method: string,
    readonly kind: RequestFailureKind | "local",
    readonly error: JsonRpcError,
  ) {
    super(`${method}: ${kind}: ${error.message} (${error.code})`);
  }
}

/** How a request ended, as `atAnswer` gets it. */
export type Answer = { result: unknown } | { error: RpcError };

interface PendingOutgoing {
  method: string;
  started: number;
  resolve(value: unknown): void;
  reject(err: unknown): void;
  /** Called at the answer's place in wire order, before any later event is handled. */
  atAnswer?: (answer: Answer) => void;
}

interface PendingIncoming {
  method: string;
  started: number;
  source: CancellationSource;
  /** The engine answered it itself (autoAnswered); a late answer from the handler is dropped. */
  autoAnswered?: string;
}

/** Bytes to text for the trace (a chunk split inside a character shows U+FFFD there). */
const traceDecoder = new TextDecoder();
export class AcpClient {
  private readonly outgoing = new Map<number, PendingOutgoing>();
  private readonly incoming = new Map<number, PendingIncoming>();
  private timer: { cancel(): void } | undefined;
  private timerDeadline: number | undefined;
  private pumping = false;
  private pumpAgain = false;
  private freed = false;
  private eofSeen = false;
  private closedReason: string | undefined;
  private resolveClosed!: (reason: string) => void;
  /** The session engine `session/update`s are folded into, inside wasm (`foldInto`). */
  private session: WasmSession | undefined;
  private onFolded: (() => void) | undefined;
  /** Resolves with the engine's reason once the connection is closed. */
  readonly closed: Promise<string>;

  constructor(
    private readonly engine: EngineConnection,
    private readonly sink: ByteSink,
    private readonly handler: IncomingHandler,
    private readonly log: Logger,
    private readonly trace: TraceSink = nullTrace,
    private readonly clock: Clock = realClock,
  ) {
    this.closed = new Promise((r) => (this.resolveClosed = r));
  }

  get isClosed(): boolean {
    return this.closedReason !== undefined || this.engine.isClosed;
  }

  get pendingOutgoing(): number {
    return this.engine.pendingOutgoing;
  }

  get pendingIncoming(): number {
    return this.engine.pendingIncoming;
  }

  /** Bytes read from the agent's stdout, in any chunking. */
  receive(bytes: Uint8Array): void {
    if (this.freed) return;
    if (this.trace.enabled) this.trace.write("recv", traceDecoder.decode(bytes));
    if (this.eofSeen || this.engine.isClosed) return; // nothing is read after the end
    this.engine.feed(bytes, this.clock.now());
    this.pump();
  }

  /** The agent closed its stdout (it exited or is exiting). */
  receiveEof(): void {
    // Both "stdout ended" and "process exited" report the end; the engine hears it once.
    if (this.freed || this.eofSeen) return;
    this.eofSeen = true;
    this.engine.feedEof(this.clock.now());
    this.pump();
  }

  /** From now on, every `session/update` is folded into `session` inside wasm (none reaches the
   *  handler); `onFolded` is called after each batch of events (the view checks whether the
   *  session's conversation changed). `undefined` detaches it (the handler gets them again). */
  foldInto(session: WasmSession | undefined, onFolded?: () => void): void {
    this.session = session;
    this.onFolded = session ? onFolded : undefined;
  }

  /** `atAnswer` is called with the answer at its place in wire order (synchronously, before
   *  any event after it is handled and before the promise settles). */
  request<T = unknown>(method: string, params: unknown, timeoutMs?: number, atAnswer?: (answer: Answer) => void): Promise<T> {
    if (this.freed) return Promise.reject(new RpcError(method, "closed", { code: -32603, message: "connection disposed" }));
    let id: number;
    const json = params === undefined || params === null ? undefined : jsonText(params);
    try {
      id =
        json !== undefined
          ? this.engine.sendRequestRaw(method, json, this.clock.now(), timeoutMs)
          : this.engine.sendRequest(method, params, this.clock.now(), timeoutMs);
    } catch (e) {
      this.pump();
      const err = e as Error;
      return Promise.reject(new RpcError(method, "local", { code: JsonRpc.InternalError, message: `${err.name}: ${err.message}` }));
    }
    const started = this.clock.now();
    const promise = new Promise<T>((resolve, reject) => {
      this.outgoing.set(id, { method, started, resolve: resolve as (v: unknown) => void, reject, atAnswer });
    });
    this.log.info(`→ #${id} ${method} ${json !== undefined ? truncateText(json) : truncateJson(params)}`);
    this.pump();
    return promise;
  }

  notify(method: string, params: unknown): void {
    if (this.freed) return;
    const json = params === undefined || params === null ? undefined : jsonText(params);
    if (json !== undefined) this.engine.notifyRaw(method, json);
    else this.engine.notify(method, params);
    this.log.info(`→ ${method} (notification) ${json !== undefined ? truncateText(json) : truncateJson(params)}`);
    this.pump();
  }

  /** Local cancellation of one of our requests ($/cancel_request); the promise rejects as cancelled. */
  cancelRequest(requestId: number): void {
    if (this.freed) return;
    this.engine.cancelRequest(requestId, this.clock.now());
    this.pump();
  }

  /** Completes everything pending (incoming permission requests are answered `cancelled`). */
  close(reason = "closed by client"): void {
    if (this.freed || this.engine.isClosed) return;
    this.engine.close(reason);
    this.pump();
  }

  /** Closes, then releases the wasm memory. */
  dispose(): void {
    if (this.freed) return;
    this.close("disposed");
    this.timer?.cancel();
    this.timer = undefined;
    this.freed = true;
    this.engine.free();
  }

  private pump(): void {
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = true;
    try {
      do {
        this.pumpAgain = false;
        for (let bytes = this.engine.pollTransmit(); bytes !== undefined; bytes = this.engine.pollTransmit()) {
          if (this.trace.enabled) this.trace.write("send", traceDecoder.decode(bytes));
          try {
            this.sink.write(bytes);
          } catch (e) {
            this.log.warn(`write to agent failed: ${(e as Error).message}`);
          }
        }
        // One crossing for the whole queue (acp-wasm/API.md "Fast paths"): the same events, in
        // the same order, as a pollEvent() loop. Events that dispatching queues (a handler that
        // calls notify/request re-enters pump, which sets pumpAgain) come in the next round.
        // With a session attached, its updates are folded inside wasm and each batch ends at a
        // response: drained until empty.
        for (;;) {
          const session = this.session;
          const events = session ? this.engine.pollEventsFor(session) : this.engine.pollEvents();
          for (const ev of events) {
            // A handler disposed the client: the engine is gone, the rest is not delivered.
            if (this.freed) return;
            this.dispatch(ev);
          }
          if (!session || events.length === 0 || this.freed) break;
        }
        if (this.session) this.onFolded?.();
      } while (this.pumpAgain && !this.freed);
      this.armTimer();
    } finally {
      this.pumping = false;
    }
  }

  private armTimer(): void {
    if (this.freed) return;
    const deadline = this.engine.pollTimeout();
    if (deadline === this.timerDeadline && this.timer) return;
    this.timer?.cancel();
    this.timer = undefined;
    this.timerDeadline = deadline;
    if (deadline === undefined) return;
    const delay = Math.max(0, deadline - this.clock.now());
    this.timer = this.clock.setTimer(() => {
      this.timer = undefined;
      this.timerDeadline = undefined;
      if (this.freed) return;
      this.engine.handleTimeout(this.clock.now());
      this.pump();
    }, delay);
  }

  private dispatch(ev: AcpEvent): void {
    const now = this.clock.now();
    switch (ev.type) {
      case "request": {
        const source = new CancellationSource();
        const entry: PendingIncoming = { method: ev.method, started: now, source };
        this.incoming.set(ev.token, entry);
        this.log.info(`← #${String(ev.id)} ${ev.method} ${truncateJson(ev.params)}`);
        let work: Promise<unknown>;
        try {
          work = this.handler.handleRequest(ev.method, ev.params, source.token);
        } catch (e) {
          work = Promise.reject(e);
        }
        work.then(
          (result) => this.answer(ev.token, ev.id, entry, { result }),
          (err) => this.answer(ev.token, ev.id, entry, { err }),
        );
        break;
      }
      case "notification": {
        const json = ev.params === undefined ? undefined : jsonText(ev.params);
        this.log.info(`← ${ev.method} (notification) ${json === undefined ? truncateJson(ev.params) : truncateText(json)}`);
        try {
          this.handler.handleNotification(ev.method, ev.params, json);
        } catch (e) {
          this.log.error(`handler for ${ev.method} threw: ${(e as Error).stack ?? e}`);
        }
        break;
      }
      case "response": {
        const p = this.outgoing.get(ev.requestId);
        this.outgoing.delete(ev.requestId);
        this.log.info(`← #${ev.requestId} ${ev.method} ok in ${ms(now, p?.started)} ${truncateJson(ev.result)}`);
        this.settle(p, { result: ev.result });
        p?.resolve(ev.result);
        break;
      }
      case "requestFailed": {
        const p = this.outgoing.get(ev.requestId);
        this.outgoing.delete(ev.requestId);
        this.log.warn(
          `← #${ev.requestId} ${ev.method} failed (${ev.kind}) in ${ms(now, p?.started)}: ${ev.error.code} ${ev.error.message}`,
        );
        const err = new RpcError(ev.method, ev.kind, ev.error);
        this.settle(p, { error: err });
        p?.reject(err);
        break;
      }
      case "autoAnswered": {
        const entry = this.incoming.get(ev.token);
        this.log.warn(`engine answered ${ev.method} itself (${ev.reason}) after ${ms(now, entry?.started)}`);
        if (entry) {
          entry.autoAnswered = ev.reason;
          entry.source.cancel();
        }
        break;
      }
      case "cancelRequested": {
        const entry = this.incoming.get(ev.token);
        this.log.info(`agent asked to cancel ${entry?.method ?? `token ${ev.token}`}`);
        entry?.source.cancel();
        break;
      }
      case "protocolError":
        this.log.warn(`protocol error from agent (${ev.kind}): ${ev.message}`);
        break;
      case "closed":
        this.log.info(`connection closed: ${ev.reason}`);
        this.closedReason = ev.reason;
        for (const entry of this.incoming.values()) entry.source.cancel();
        this.resolveClosed(ev.reason);
        break;
      default:
        this.log.warn(`unknown engine event ${truncateJson(ev)}`);
    }
  }

  /** A request's `atAnswer`, which must not break the pump. */
  private settle(p: PendingOutgoing | undefined, answer: Answer): void {
    try {
      p?.atAnswer?.(answer);
    } catch (e) {
      this.log.error(`answer handler for ${p?.method} threw: ${(e as Error).stack ?? e}`);
    }
  }

  private answer(token: number, id: string | number | null, entry: PendingIncoming, outcome: { result?: unknown; err?: unknown }): void {
    this.incoming.delete(token);
    const took = ms(this.clock.now(), entry.started);
    if (entry.autoAnswered || this.freed || this.engine.isClosed) {
      this.log.info(`→ #${String(id)} ${entry.method}: late answer dropped (${entry.autoAnswered ?? "closed"}) after ${took}`);
      return;
    }
    try {
      if ("err" in outcome && outcome.err !== undefined) {
        const e = outcome.err;
        const code = e instanceof RequestError ? e.code : JsonRpc.InternalError;
        const message = e instanceof Error ? e.message : String(e);
        this.engine.respondError(token, code, message, e instanceof RequestError ? e.data : undefined);
        this.log.warn(`→ #${String(id)} ${entry.method} error ${code} in ${took}: ${message}`);
      } else {
        const result = outcome.result ?? null;
        const json = jsonText(result);
        if (json !== undefined) this.engine.respondRaw(token, json);
        else this.engine.respond(token, result);
        const shown = outcome.result === undefined ? "" : json !== undefined ? truncateText(json) : truncateJson(outcome.result);
        this.log.info(`→ #${String(id)} ${entry.method} ok in ${took} ${shown}`);
      }
    } catch (e) {
      const err = e as Error;
      // AlreadyAnswered: the engine got there first (a race with its own deadline).
      this.log.warn(`→ #${String(id)} ${entry.method}: answer not sent: ${err.name}: ${err.message}`);
    }
    this.pump();
  }
}

/**
 * `JSON.stringify(value)` for the engine's *Raw commands, done once and shared with the log line
 * (the plain commands stringify inside the engine, so the log stringified a second time).
 * `undefined` when the value has no JSON text or stringify throws: the caller then uses the plain
 * command, which stringifies again and reports exactly the error it always did (`InvalidParams`).
 * For any text this returns, the *Raw command does what the plain one does with the value.
 */
function jsonText(value: unknown): string | undefined {
  try {
    const s: unknown = JSON.stringify(value);
    return typeof s === "string" ? s : undefined;
  } catch {
    return undefined;
  }
}

function ms(now: number, started: number | undefined): string {
  return started === undefined ? "?ms" : `${Math.round(now - started)}ms`;
}
