// SseRemoteAgent: an agent reached by URL over HTTP + SSE (`http://` / `https://`), the other
// transport of `acp serve --http` and the official `agent-client-protocol-http` server, with
// the rules of acp-native's client (acp-native/src/remote/client/). The wire itself (the SSE
// reader, which session a message goes with, the session an answer names) is acp-core's
// `http_sse`, called through the wasm engine (acp-wasm's client build: SseDecoder,
// httpOutgoing, httpAnswer; tests/client/http_routing.json is its case table); this file does
// the HTTP, through the host's HttpClient (httpNode.ts on Node, httpFetch.ts in the browser):
//
// * the first message must be the `initialize` request: it is POSTed; the answer's body is the
//   initialize response (passed to the engine) and its `Acp-Connection-Id` names the
//   connection; the connection's SSE stream is opened before anything else is sent;
// * each later message is POSTed with the connection id (and `Acp-Session-Id` when it names a
//   session), answered 202. Before the first message naming a session, that session's stream
//   is opened; a successful `session/new` / `session/fork` answer opens the new session's
//   stream at once. Requests and notifications go one after the other, in order; responses
//   (our answers to the agent's requests) on a second lane, so an answer never waits behind a
//   request that waits for it;
// * every SSE event's data is one message, passed to the engine as one line;
// * stop() ends the connection with DELETE. A stream that ends, or a POST that fails, ends the
//   transport (a "crash" for the extension, which reconnects).
//
// Architecture Invariant: this file imports neither `vscode` nor any Node module.

import type { HttpAnswer, HttpOutgoing } from "acp-wasm-client";
import { loadedEngine, type EngineModule, type SkippedSseEvent, type WasmSseDecoder } from "./engine";
import type { HttpClient, HttpReply } from "./httpClient";
import { checkRemoteUrl, describeHttpRefusal } from "./remoteUrl";
import { RemoteError, TailBuffer, type ExitInfo } from "./transport";
import type { AgentTransport, TransportEvents } from "./transport";

const CONNECTION_ID = "acp-connection-id";
const SESSION_ID = "acp-session-id";

interface Outgoing {
  line: string;
  method?: string;
  /** The id as JSON text (`"3"`, `'"a-1"'`). */
  id?: string;
  session?: string;
}

/** The envelope of one message the engine wrote (method, id, the session it goes with), as
 *  acp-core reads it (`httpOutgoing`): `$/…` messages, and `$/cancel_request` also inside
 *  `proxy/successor` envelopes, go with the connection whatever session they name. */
export function outgoing(line: string, engine: EngineModule = loadedEngine()): Outgoing {
  const text = engine.httpOutgoing(line);
  if (text === undefined) return { line };
  const o = JSON.parse(text) as HttpOutgoing;
  return { line, method: o.method ?? undefined, id: o.id ?? undefined, session: o.session ?? undefined };
}

/** A response the engine should get, as acp-core reads it (`httpAnswer`): the id it answers
 *  (JSON text) and the session its result names; undefined for anything but a response. */
export function answer(text: string, engine: EngineModule = loadedEngine()): { id: string; session?: string } | undefined {
  const got = engine.httpAnswer(text);
  if (got === undefined) return undefined;
  const a = JSON.parse(got) as HttpAnswer;
  return { id: a.id, session: a.session ?? undefined };
}

/** Server-sent events, read by acp-core's `SseDecoder` in the wasm engine: each complete
 *  event's data (its `data:` lines joined by `\n`), or for an event whose data is over
 *  `maxEventBytes` (skipped without being held) a `SkippedSseEvent`: its size and acp-core's
 *  rule for it (a stand-in error response, or an answer to send). Owns wasm memory: `free()`. */
export class SseDecoder {
  private readonly inner: WasmSseDecoder;

  constructor(maxEventBytes: number, engine: EngineModule = loadedEngine()) {
    this.inner = new engine.SseDecoder(maxEventBytes);
  }

  /** Feeds the next piece of a stream's body (bytes, or text read as UTF-8). */
  feed(chunk: Uint8Array | string): Array<string | SkippedSseEvent> {
    return this.inner.feed(chunk);
  }

  free(): void {
    this.inner.free();
  }
}

/** How to reach the agent, and the engine whose wire rules the transport follows (the
 *  one loaded if not given). */
export interface SseRemoteOptions {
  /** Sent as `Authorization: Bearer TOKEN`. */
  token?: string;
  /** Largest message accepted from the agent (acp-core's default limit). */
  maxMessageBytes?: number;
  /** The host's HTTP client for the (checked) URL. */
  http(url: URL): HttpClient;
  engine?: EngineModule;
}

export class SseRemoteAgent implements AgentTransport {
  readonly stderrTail = new TailBuffer();
  readonly started: Promise<void>;
  readonly exited: Promise<ExitInfo>;
  private exitInfo: ExitInfo | undefined;
  private readonly target: URL | undefined;
  private readonly headers: Record<string, string> = {};
  private http: HttpClient | undefined;
  private connectionId: string | undefined;
  private initialized = false;
  private stopping = false;
  /** Sessions whose stream is open (or opening). */
  private readonly sessions = new Set<string>();
  /** Ids of our pending session/new and session/fork requests. */
  private readonly opening = new Set<string>();
  /** Requests and notifications, in order (after initialize). */
  private ordered: Promise<void> = Promise.resolve();
  /** Our answers to the agent's requests (after initialize). */
  private answers: Promise<void>;
  private markInitialized!: () => void;
  private partial = "";
  private readonly decoder = new TextDecoder();
  private readonly encoder = new TextEncoder();
  private readonly finish: (info: ExitInfo) => void;
  /** The engine whose wire rules this transport follows (acp-core's http_sse). */
  private readonly engine: EngineModule;

  constructor(
    readonly url: string,
    private readonly o: SseRemoteOptions,
    private readonly events: TransportEvents,
  ) {
    this.engine = o.engine ?? loadedEngine();
    let resolveExit!: (i: ExitInfo) => void;
    this.exited = new Promise((r) => (resolveExit = r));
    this.answers = new Promise((r) => (this.markInitialized = r));
    this.finish = (info) => {
      if (this.exitInfo) return;
      this.exitInfo = info;
      this.http?.close();
      events.onStdoutEnd();
      resolveExit(info);
      events.onExit(info);
    };
    const checked = checkRemoteUrl(url);
    if (o.token) this.headers.authorization = `Bearer ${o.token}`;
    this.headers["user-agent"] = "acp-rs-vscode";
    if (checked instanceof RemoteError) {
      this.target = undefined;
      this.started = Promise.reject(checked);
      this.started.catch(() => {});
      queueMicrotask(() => this.finish({ code: null, signal: null, remote: checked, reason: checked.message }));
      return;
    }
    this.target = checked;
    this.http = o.http(checked);
    // Nothing to open before `initialize` (its POST opens the connection).
    this.started = Promise.resolve();
  }

  get description(): string {
    return this.url;
  }

  get hasExited(): boolean {
    return this.exitInfo !== undefined;
  }

  private fail(e: RemoteError): void {
    this.finish({ code: null, signal: null, remote: e, reason: e.message });
  }

  /** NDJSON bytes from the engine: each complete line is one message. */
  write(bytes: Uint8Array): void {
    if (this.exitInfo || !this.target) return;
    this.partial += this.decoder.decode(bytes, { stream: true });
    let nl: number;
    while ((nl = this.partial.indexOf("\n")) >= 0) {
      const line = this.partial.slice(0, nl).replace(/\r$/, "");
      this.partial = this.partial.slice(nl + 1);
      if (line.trim()) this.send(outgoing(line, this.engine));
    }
  }

  private send(out: Outgoing): void {
    if (!this.initialized) {
      if (out.method !== "initialize" || out.id === undefined) {
        this.fail(new RemoteError("closed", "the first message over HTTP must be the `initialize` request"));
        return;
      }
      this.initialized = true;
      this.ordered = this.ordered.then(() => this.initialize(out)).then(this.markInitialized, (e: RemoteError) => this.fail(e));
      return;
    }
    const isResponse = out.method === undefined && out.id !== undefined;
    if (isResponse) {
      this.answers = this.answers.then(() => this.post(out, "an answer")).catch((e: RemoteError) => this.fail(e));
      return;
    }
    this.ordered = this.ordered
      .then(async () => {
        if (this.exitInfo) return;
        if (out.session && !this.sessions.has(out.session)) {
          this.sessions.add(out.session);
          await this.openStream(out.session);
        }
        if (out.id !== undefined && (out.method === "session/new" || out.method === "session/fork")) this.opening.add(out.id);
        await this.post(out, out.method ? `\`${out.method}\`` : "a message");
      })
      .catch((e: RemoteError) => this.fail(e));
  }

  /** One HTTP request; resolves with the answer once its head arrived. */
  private async request(method: string, o: { accept: string; session?: string; body?: string; stream?: boolean }): Promise<HttpReply> {
    const headers: Record<string, string> = { ...this.headers, accept: o.accept };
    if (this.connectionId) headers[CONNECTION_ID] = this.connectionId;
    if (o.session) headers[SESSION_ID] = o.session;
    if (o.body !== undefined) headers["content-type"] = "application/json";
    try {
      return await this.http!.request(method, headers, { body: o.body, stream: o.stream });
    } catch (e) {
      if (this.stopping) throw new RemoteError("closed", "stopped");
      const err = e instanceof RemoteError ? e : new RemoteError("network", (e as Error).message);
      // Once connected, any failure is the connection lost.
      throw this.connectionId ? new RemoteError("closed", `the connection to ${this.url} was lost: ${err.message}`) : err;
    }
  }

  private async refusal(res: HttpReply, during: string): Promise<RemoteError> {
    const body = await res.text(4096).catch(() => "");
    return describeHttpRefusal(this.url, res.status, body, during);
  }

  private async initialize(out: Outgoing): Promise<void> {
    const res = await this.request("POST", { accept: "application/json", body: out.line });
    if (res.status < 200 || res.status > 299) throw await this.refusal(res, "initialize");
    const id = res.header(CONNECTION_ID);
    const body = await res.text(this.o.maxMessageBytes ?? 64 * 1024 * 1024);
    let value: { error?: unknown };
    try {
      value = JSON.parse(body) as typeof value;
    } catch {
      throw new RemoteError("closed", `the initialize answer of ${this.url} is not JSON: ${body.slice(0, 200)}`);
    }
    if (value.error === undefined && typeof id !== "string") {
      throw new RemoteError(
        "closed",
        `the initialize answer of ${this.url} has no ${CONNECTION_ID} header (is this an ACP HTTP endpoint?)`,
      );
    }
    if (typeof id === "string") this.connectionId = id;
    if (value.error === undefined) await this.openStream(undefined);
    // The answer goes to the engine after the connection's stream is open; an error answer
    // ends the transport just after.
    this.deliver(JSON.stringify(value));
    if (value.error !== undefined) throw new RemoteError("closed", `the agent refused initialize: ${JSON.stringify(value.error)}`);
  }

  private async post(out: Outgoing, during: string): Promise<void> {
    if (this.exitInfo) return;
    const res = await this.request("POST", { accept: "application/json", session: out.session, body: out.line });
    if (res.status < 200 || res.status > 299) throw await this.refusal(res, during);
    res.discard();
  }

  /** Opens the connection's (undefined) or a session's stream; resolves once the server
   *  accepted it. Its events then go to the engine; its end ends the transport. */
  private async openStream(session: string | undefined): Promise<void> {
    const during = session ? `the stream of session ${session}` : "the connection's stream";
    const res = await this.request("GET", { accept: "text/event-stream", session, stream: true });
    if (res.status < 200 || res.status > 299) throw await this.refusal(res, during);
    const decoder = new SseDecoder(this.o.maxMessageBytes ?? 64 * 1024 * 1024, this.engine);
    let freed = false;
    const ended = (why: string) => {
      if (!freed) decoder.free();
      freed = true;
      if (!this.stopping) this.fail(new RemoteError("closed", `${during} from ${this.url} ended: ${why}`));
    };
    // Not awaited: the stream runs for the connection's (or the session's) life.
    res
      .stream((chunk) => {
        if (freed) return;
        for (const ev of decoder.feed(chunk)) {
          if (typeof ev !== "string") {
            this.skipped(ev, during);
            continue;
          }
          if (ev.trim()) {
            this.noteAnswer(ev);
            this.deliver(ev);
          }
        }
      })
      .then(
        () => ended("the server closed it"),
        (e: Error) => ended(e.message),
      );
  }

  /** An event over the limit was skipped (never held), as acp-core skips an oversize line on
   *  stdio: the response it was is replaced by an error for its id (that call fails at once,
   *  saying why), the request it was is answered with the oversize error; either way the log
   *  says so. */
  private skipped(ev: SkippedSseEvent, during: string): void {
    const limit = this.o.maxMessageBytes ?? 64 * 1024 * 1024;
    const what =
      ev.standIn !== undefined
        ? "a response (its call fails)"
        : ev.answer !== undefined
          ? "a request (answered with an error)"
          : "a message";
    this.events.onStderr(`${during}: ${what} of ${ev.size} bytes, over the ${limit}-byte limit, was skipped\n`);
    if (ev.standIn !== undefined) this.deliver(ev.standIn);
    else if (ev.answer !== undefined) this.send(outgoing(ev.answer, this.engine));
  }

  /** A successful answer to our session/new or session/fork: its session's stream, at once. */
  private noteAnswer(text: string): void {
    if (!this.opening.size) return;
    const a = answer(text, this.engine);
    if (!a || !this.opening.delete(a.id)) return;
    const sid = a.session;
    if (sid === undefined || this.sessions.has(sid)) return;
    this.sessions.add(sid);
    // Not awaited: the server keeps the session's messages until its stream is read.
    this.openStream(sid).catch((e: RemoteError) => this.fail(e));
  }

  private deliver(text: string): void {
    if (this.exitInfo) return;
    this.events.onStdout(this.encoder.encode(`${text.replace(/[\r\n]/g, " ")}\n`));
  }

  /** Lets queued messages go (up to `graceMs`), ends the connection with DELETE, closes the streams. */
  async stop(graceMs = 2000): Promise<ExitInfo> {
    if (this.exitInfo) return this.exitInfo;
    const timers: Array<ReturnType<typeof setTimeout>> = [];
    const grace = () => new Promise<void>((r) => timers.push(setTimeout(r, graceMs)));
    await Promise.race([Promise.all([this.ordered, this.initialized ? this.answers : undefined]), grace()]);
    this.stopping = true;
    if (this.connectionId && !this.exitInfo) {
      const del = this.request("DELETE", { accept: "application/json" }).then(
        (res) => res.discard(),
        () => undefined,
      );
      await Promise.race([del, grace()]);
    }
    for (const t of timers) clearTimeout(t);
    this.finish({ code: null, signal: null, reason: "connection closed" });
    return this.exitInfo!;
  }
}
