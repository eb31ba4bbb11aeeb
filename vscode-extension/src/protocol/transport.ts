// AgentTransport: how the engine's NDJSON bytes reach an agent and come back. Two kinds: a
// spawned process over its stdio (process.ts AgentProcess) and a remote agent over WebSocket
// (remote.ts RemoteAgent). AgentConnection runs the same engine over either; the end of a
// transport (the process exiting, the connection dropping) is what the crash/restart path sees.
//
// Architecture Invariant: this file does not import `vscode`.

import type { ExitInfo, TailBuffer } from "./process";

/** What a transport reports (AgentProcess: stdout, stdout's end, stderr, exit). */
export interface TransportEvents {
  /** Bytes for the engine: whole NDJSON lines from a remote agent; any chunking from a process. */
  onStdout(bytes: Uint8Array): void;
  /** No more bytes will come. */
  onStdoutEnd(): void;
  /** A process's stderr (a remote agent has none). */
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
