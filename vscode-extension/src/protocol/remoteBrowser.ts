// BrowserRemoteAgent: a remote agent over the browser's own WebSocket (the web worker extension
// host of VS Code for the Web), the same wire as RemoteAgent (remote.ts, Node's `ws`): one
// JSON-RPC message per text frame on `acp serve --http`'s `/acp`. A page cannot set headers on
// a WebSocket handshake, so the token travels as the subprotocol `acp.token.TOKEN` (acp serve
// accepts it and echoes it back). The browser reports no reason for a failed handshake (no
// status, no errno), so the words name what to check; the server decides on the page's Origin
// (acp serve allows local pages and those given with --allow-origin).
//
// Architecture Invariant: this file imports neither `vscode` nor any Node module.

import { checkRemoteUrl } from "./remoteUrl";
import { closedByServer, RemoteError, TailBuffer, type AgentTransport, type ExitInfo, type TransportEvents } from "./transport";

/** The subprotocol carrying `token`, or why it cannot: a subprotocol is an HTTP token. */
export function tokenSubprotocol(token: string): string | RemoteError {
  if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(token)) {
    return new RemoteError(
      "url",
      "the token has characters a WebSocket subprotocol cannot carry (the browser sends it as acp.token.TOKEN)",
    );
  }
  return `acp.token.${token}`;
}

export class BrowserRemoteAgent implements AgentTransport {
  readonly stderrTail = new TailBuffer();
  readonly started: Promise<void>;
  readonly exited: Promise<ExitInfo>;
  private readonly ws: WebSocket | undefined;
  private exitInfo: ExitInfo | undefined;
  private opened = false;
  private stopping = false;
  /** Bytes of a line the engine has not finished writing. */
  private partial = "";
  /** Lines written before the socket opened. */
  private queued: string[] = [];
  private readonly decoder = new TextDecoder();
  private readonly encoder = new TextEncoder();
  private readonly finish: (info: ExitInfo) => void;

  constructor(
    readonly url: string,
    o: { token?: string; connectTimeoutMs?: number },
    events: TransportEvents,
  ) {
    let resolveExit!: (i: ExitInfo) => void;
    this.exited = new Promise((r) => (resolveExit = r));
    let resolveStart!: () => void;
    let rejectStart!: (e: Error) => void;
    this.started = new Promise((res, rej) => ((resolveStart = res), (rejectStart = rej)));
    this.started.catch(() => {});
    let timer: ReturnType<typeof setTimeout> | undefined;
    const finish = (this.finish = (info: ExitInfo) => {
      if (this.exitInfo) return;
      this.exitInfo = info;
      if (timer) clearTimeout(timer);
      if (!this.opened) rejectStart(info.remote ?? new RemoteError("closed", info.reason ?? "closed"));
      else events.onStdoutEnd();
      resolveExit(info);
      events.onExit(info);
    });
    const fail = (e: RemoteError) => queueMicrotask(() => finish({ code: null, signal: null, remote: e, reason: e.message }));
    const checked = checkRemoteUrl(url);
    if (checked instanceof RemoteError) {
      this.ws = undefined;
      fail(checked);
      return;
    }
    const protocols: string[] = [];
    if (o.token) {
      const p = tokenSubprotocol(o.token);
      if (p instanceof RemoteError) {
        this.ws = undefined;
        fail(p);
        return;
      }
      protocols.push(p);
    }
    let ws: WebSocket;
    try {
      ws = new WebSocket(checked.href, protocols);
    } catch (e) {
      // A URL the browser refuses outright (a blocked port, ws:// from a page the browser keeps secure).
      this.ws = undefined;
      fail(new RemoteError("network", `the browser refused to connect to ${url}: ${(e as Error).message}`));
      return;
    }
    this.ws = ws;
    const where = checked.host;
    timer = setTimeout(() => {
      if (this.opened) return;
      ws.close();
      finish({
        code: null,
        signal: null,
        remote: new RemoteError("timeout", `connecting to ${where} timed out`),
        reason: `connecting to ${where} timed out`,
      });
    }, o.connectTimeoutMs ?? 10_000);
    ws.addEventListener("open", () => {
      this.opened = true;
      if (timer) clearTimeout(timer);
      for (const line of this.queued.splice(0)) ws.send(line);
      resolveStart();
    });
    ws.addEventListener("message", (ev: MessageEvent) => {
      if (typeof ev.data !== "string") {
        events.onStderr(`${url}: a binary frame skipped (ACP messages are text frames)\n`);
        return;
      }
      // One message per line for the engine: a line break inside a message can only be JSON
      // whitespace (raw ones are invalid inside strings), so it becomes a space.
      events.onStdout(this.encoder.encode(`${ev.data.replace(/[\r\n]/g, " ")}\n`));
    });
    ws.addEventListener("close", (ev: CloseEvent) => {
      let failure: RemoteError | undefined;
      if (!this.opened && !this.stopping) {
        failure = new RemoteError(
          "network",
          `cannot connect to ${url} (the browser gives no reason: is the server (acp serve --http) running, ` +
            `does it allow this page's origin (acp serve --allow-origin), and is the token right?)`,
        );
      } else if (!this.stopping) {
        failure = closedByServer(url, ev.code, ev.reason);
      }
      const info: ExitInfo = { code: null, signal: null };
      if (failure) Object.assign(info, { remote: failure, reason: failure.message });
      else info.reason = this.opened ? "connection closed" : "stopped before connecting";
      finish(info);
    });
  }

  get description(): string {
    return this.url;
  }

  get hasExited(): boolean {
    return this.exitInfo !== undefined;
  }

  /** NDJSON bytes from the engine: each complete line goes out as one text frame. */
  write(bytes: Uint8Array): void {
    if (this.exitInfo || !this.ws) return;
    const text = this.partial + this.decoder.decode(bytes, { stream: true });
    const lines = text.split("\n");
    this.partial = lines.pop() ?? "";
    for (const raw of lines) {
      const line = raw.replace(/\r$/, "");
      if (!line.trim()) continue;
      if (this.opened) this.ws.send(line);
      else this.queued.push(line);
    }
  }

  /** Closes the WebSocket (the server ends the agent) and waits for the close, up to
   *  `graceMs`; then the transport ends without it (the browser drops the socket). */
  async stop(graceMs = 2000): Promise<ExitInfo> {
    if (this.exitInfo) return this.exitInfo;
    this.stopping = true;
    if (!this.ws) return this.exited;
    this.ws.close(1000, "client stopping");
    const t = setTimeout(() => this.finish({ code: null, signal: null, reason: "closed without the server's answer" }), graceMs);
    const info = await this.exited;
    clearTimeout(t);
    return info;
  }
}
