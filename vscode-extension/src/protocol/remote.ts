// RemoteAgent: an agent reached by URL over WebSocket (`ws://` / `wss://`), as `acp serve --http`
// and the official `agent-client-protocol-http` server expose it on `/acp`: one JSON-RPC message
// per text frame, the token as `Authorization: Bearer` on the handshake. It is an AgentTransport
// like AgentProcess: the engine writes NDJSON lines (each sent as one frame) and gets each
// frame back as one line, so everything above (consent, files, terminals, the thread) is the
// same as for a local agent. The connection dropping ends the transport like a process exit:
// the extension's restart path reconnects and reopens the session.
//
// Architecture Invariant: this file does not import `vscode`.

import WebSocket from "ws";
import type { ClientRequest, IncomingMessage } from "node:http";
import { closedByServer, RemoteError, TailBuffer, type AgentTransport, type ExitInfo, type TransportEvents } from "./transport";
import { checkRemoteUrl, describeHttpRefusal } from "./remoteUrl";

export { checkRemoteUrl, describeHttpRefusal, tokenKey } from "./remoteUrl";

/** Why a remote connection could not be made, or ended. */
export interface RemoteOptions {
  /** Sent as `Authorization: Bearer TOKEN` on the handshake. */
  token?: string;
  /** Extra trusted certificates (PEM), e.g. a development server's self-signed one. */
  ca?: string | Buffer;
  /** Longest wait for TCP, TLS and the WebSocket handshake. */
  connectTimeoutMs?: number;
  /** Largest message accepted from the agent (acp-core's default limit). */
  maxMessageBytes?: number;
  /** A ping this often; no pong before the next one ends the connection (0: none). */
  keepaliveMs?: number;
}

const TLS_CODES = new Set([
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "ERR_TLS_CERT_ALTNAME_INVALID",
  "ERR_SSL_WRONG_VERSION_NUMBER",
  "EPROTO",
]);

/** Words for a failed connection attempt (a `ws` error event). */
export function describeConnectError(url: string, err: NodeJS.ErrnoException): RemoteError {
  const code = err.code ?? "";
  const where = new URL(url).host;
  if (code === "ECONNREFUSED")
    return new RemoteError("refused", `nothing listens at ${where} (connection refused): is the server (acp serve --http) running?`);
  if (code === "ENOTFOUND" || code === "EAI_AGAIN") return new RemoteError("network", `cannot resolve the host of ${url} (${code})`);
  if (code === "ETIMEDOUT" || /handshake has timed out/i.test(err.message))
    return new RemoteError("timeout", `connecting to ${where} timed out`);
  if (TLS_CODES.has(code) || /certificate|ssl|tls/i.test(err.message)) {
    return new RemoteError("tls", `TLS handshake with ${where} failed: ${err.message}${code ? ` (${code})` : ""}`);
  }
  return new RemoteError("network", `cannot connect to ${url}: ${err.message}${code ? ` (${code})` : ""}`);
}

export class RemoteAgent implements AgentTransport {
  readonly stderrTail = new TailBuffer();
  readonly started: Promise<void>;
  readonly exited: Promise<ExitInfo>;
  private readonly ws: WebSocket | undefined;
  private exitInfo: ExitInfo | undefined;
  private opened = false;
  private stopping = false;
  /** Bytes of a line the engine has not finished writing. */
  private partial: Uint8Array[] = [];
  /** Lines written before the socket opened. */
  private queued: string[] = [];
  private readonly decoder = new TextDecoder();
  private readonly encoder = new TextEncoder();
  private keepalive: NodeJS.Timeout | undefined;

  constructor(
    readonly url: string,
    o: RemoteOptions,
    private readonly events: TransportEvents,
  ) {
    let resolveExit!: (i: ExitInfo) => void;
    this.exited = new Promise((r) => (resolveExit = r));
    let resolveStart!: () => void;
    let rejectStart!: (e: Error) => void;
    this.started = new Promise((res, rej) => ((resolveStart = res), (rejectStart = rej)));
    this.started.catch(() => {});
    const finish = (info: ExitInfo) => {
      if (this.exitInfo) return;
      this.exitInfo = info;
      if (this.keepalive) clearInterval(this.keepalive);
      if (!this.opened) rejectStart(info.remote ?? new RemoteError("closed", info.reason ?? "closed"));
      else events.onStdoutEnd();
      resolveExit(info);
      events.onExit(info);
    };
    const checked = checkRemoteUrl(url);
    if (checked instanceof RemoteError) {
      this.ws = undefined;
      queueMicrotask(() => finish({ code: null, signal: null, remote: checked, reason: checked.message }));
      return;
    }
    const ws = new WebSocket(checked, {
      headers: o.token ? { Authorization: `Bearer ${o.token}` } : {},
      handshakeTimeout: o.connectTimeoutMs ?? 10_000,
      maxPayload: o.maxMessageBytes ?? 64 * 1024 * 1024,
      perMessageDeflate: false,
      followRedirects: false,
      ca: o.ca,
    });
    this.ws = ws;
    let failure: RemoteError | undefined;
    ws.on("unexpected-response", (req: ClientRequest, res: IncomingMessage) => {
      // The server answered with a status instead of upgrading: read the start of its body.
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (s: string) => {
        if (body.length < 512) body += s;
      });
      const done = () => {
        failure ??= describeHttpRefusal(url, res.statusCode ?? 0, body);
        req.destroy();
        finish({ code: null, signal: null, remote: failure, reason: failure.message });
      };
      res.on("end", done);
      res.on("error", done);
      res.on("close", done);
    });
    ws.on("open", () => {
      this.opened = true;
      for (const line of this.queued.splice(0)) ws.send(line);
      const every = o.keepaliveMs ?? 30_000;
      if (every > 0) {
        let answered = true;
        ws.on("pong", () => (answered = true));
        this.keepalive = setInterval(() => {
          if (!answered) {
            failure ??= new RemoteError("closed", `${url} did not answer pings for ${Math.round(every / 1000)} s`);
            ws.terminate();
            return;
          }
          answered = false;
          ws.ping();
        }, every);
        this.keepalive.unref();
      }
      resolveStart();
    });
    ws.on("message", (data: WebSocket.RawData) => {
      const text =
        typeof data === "string" ? data : Buffer.isBuffer(data) ? data.toString("utf8") : Buffer.concat(data as Buffer[]).toString("utf8");
      // One message per line for the engine: a line break inside a message can only be JSON
      // whitespace (raw ones are invalid inside strings), so it becomes a space.
      events.onStdout(this.encoder.encode(`${text.replace(/[\r\n]/g, " ")}\n`));
    });
    ws.on("error", (err: NodeJS.ErrnoException) => {
      if (this.stopping && !this.opened) return finish({ code: null, signal: null, reason: "stopped before connecting" });
      if (this.opened) failure ??= new RemoteError("closed", `connection to ${url} failed: ${err.message}`);
      else failure ??= describeConnectError(url, err);
      // `ws` closes the socket after an error; a failed handshake has no "close" to wait for.
      if (!this.opened) finish({ code: null, signal: null, remote: failure, reason: failure.message });
    });
    ws.on("close", (code: number, reason: Buffer) => {
      if (!failure && !this.stopping) {
        failure = closedByServer(url, code, reason.toString("utf8"));
      }
      const info: ExitInfo = { code: null, signal: null };
      if (failure) Object.assign(info, { remote: failure, reason: failure.message });
      else info.reason = "connection closed";
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
    let start = 0;
    for (let i = 0; i < bytes.length; i++) {
      if (bytes[i] !== 0x0a) continue;
      this.partial.push(bytes.subarray(start, i));
      start = i + 1;
      const line = this.decoder.decode(Buffer.concat(this.partial)).replace(/\r$/, "");
      this.partial = [];
      if (!line.trim()) continue;
      if (this.opened) this.ws.send(line);
      else this.queued.push(line);
    }
    if (start < bytes.length) this.partial.push(bytes.slice(start));
  }

  /** Closes the WebSocket (the server ends the agent), waits `graceMs`, then drops the socket. */
  async stop(graceMs = 2000): Promise<ExitInfo> {
    if (this.exitInfo) return this.exitInfo;
    this.stopping = true;
    if (!this.ws) return this.exited;
    if (this.ws.readyState === WebSocket.CONNECTING || this.ws.readyState === WebSocket.CLOSING) this.ws.terminate();
    else this.ws.close(1000, "client stopping");
    const t = setTimeout(() => this.ws!.terminate(), graceMs);
    const info = await this.exited;
    clearTimeout(t);
    return info;
  }
}
