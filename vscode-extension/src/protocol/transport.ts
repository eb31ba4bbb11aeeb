// AgentTransport: how the engine's NDJSON bytes reach an agent and come back. Two kinds: a
// spawned process over its stdio (process.ts AgentProcess) and a remote agent over WebSocket
// (remote.ts RemoteAgent). AgentConnection runs the same engine over either; the end of a
// transport (the process exiting, the connection dropping) is what the crash/restart path sees.
//
// It holds the contract both implement and nothing else imports from them: the events, the
// exit report, the stderr tail and the remote failure kinds.
//
// Architecture Invariant: this file imports nothing (no `vscode`, no transport implementation).

/** What a transport reports (AgentProcess: stdout, stdout's end, stderr, exit). */
export interface TransportEvents {
  /** Bytes for the engine: whole NDJSON lines from a remote agent; any chunking from a process. */
  onStdout(bytes: Uint8Array): void;
  /** No more bytes will come. */
  onStdoutEnd(): void;
  /** A process's stderr; a remote agent's transport reports here what it skipped (a message over the limit). */
  onStderr(text: string): void;
  /** The transport ended (once). */
  onExit(info: ExitInfo): void;
}

export interface AgentTransport {
  /** The last stderr of a process (empty for a remote agent). */
  readonly stderrTail: TailBuffer;
  /** Resolves once the transport can carry messages (process spawned, WebSocket open); rejects
   *  with why it could not (ENOENT, RemoteError). */
  readonly started: Promise<void>;
  /** Resolves once, when the transport ended for any reason. */
  readonly exited: Promise<ExitInfo>;
  readonly hasExited: boolean;
  /** For the log: "pid 1234" or "ws://host:8765/acp". */
  readonly description: string;
  /** NDJSON bytes from the engine (ignored once ended). */
  write(bytes: Uint8Array): void;
  /** Ends it: closes the input, waits up to `graceMs`, then forces it. */
  stop(graceMs?: number): Promise<ExitInfo>;
}

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The process could not be started at all (e.g. ENOENT). */
  spawnError?: Error;
  /** A remote agent: why the connection could not be made or ended. */
  remote?: RemoteError;
  /** A remote agent: how it ended, in words. */
  reason?: string;
}

/** The last `maxBytes` of a text stream, for error reports. */
export class TailBuffer {
  private chunks: string[] = [];
  private size = 0;
  constructor(private readonly maxChars = 4096) {}
  push(text: string): void {
    this.chunks.push(text);
    this.size += text.length;
    while (this.size > this.maxChars && this.chunks.length > 1) {
      this.size -= this.chunks.shift()!.length;
    }
  }
  text(): string {
    const all = this.chunks.join("");
    return all.length > this.maxChars ? all.slice(all.length - this.maxChars) : all;
  }
}

export type RemoteErrorKind =
  | "url" // not a URL this client speaks
  | "unauthorized" // HTTP 401: a missing or wrong token
  | "forbidden" // HTTP 403 (an origin the server does not allow)
  | "not_found" // HTTP 404: nothing at that path
  | "http" // another status instead of the WebSocket upgrade
  | "refused" // nothing listens at the address
  | "tls" // the TLS handshake failed (untrusted or mismatched certificate, not TLS at all)
  | "timeout" // connecting took longer than the limit
  | "network" // name resolution, unreachable network, a reset...
  | "closed"; // an open connection ended

export class RemoteError extends Error {
  override name = "RemoteError";
  constructor(
    readonly kind: RemoteErrorKind,
    message: string,
    /** The HTTP status, for kinds that come from one. */
    readonly status?: number,
  ) {
    super(message);
  }
}

/** RFC 6455's close codes a user may meet. */
const CLOSE_WORDS: Record<number, string> = {
  1000: "normal close",
  1001: "the server is going away",
  1005: "no reason given",
  1006: "dropped without a close frame",
  1009: "a message too big",
  1011: "a server error",
};

/** A WebSocket the server closed, in words: its close code (named when a user may meet it)
 *  and the first 200 characters of its reason. Both WebSocket transports (Node's `ws`, the
 *  browser's) say it so. */
export function closedByServer(url: string, code: number, reason: string): RemoteError {
  const why = reason ? `: ${reason.slice(0, 200)}` : "";
  const words = CLOSE_WORDS[code] ? `, ${CLOSE_WORDS[code]}` : "";
  return new RemoteError("closed", `${url} closed the connection (code ${code}${words}${why})`);
}
