// Platform: what differs between the extension host on Node (VS Code desktop, code-server's
// server-side host) and the web worker extension host of VS Code for the Web (vscode.dev,
// github.dev, code-server's browser host). Everything that needs Node (child_process, fs, os,
// path, crypto, the `ws` and `http` clients) is behind this interface, with one implementation
// per host: node.ts and browser.ts. The entry point picks one (extension.ts: Node,
// extension.browser.ts: the browser) and hands it to AcpContext; nothing else chooses.
//
// Architecture Invariant: this file and browser*.ts import no Node module (the browser bundle's
// build fails if anything it reaches does: esbuild.mjs, `noNodeBuiltins`).

import type * as vscode from "vscode";
import type { FsBridge } from "../bridges/fs";
import type { TerminalManager } from "../bridges/terminal";
import type { EngineModule } from "../protocol/engine";
import type { AgentSpec } from "../protocol/process";
import type { AgentTransport, TransportEvents } from "../protocol/transport";
import type { HostFiles } from "./hostFiles";
import type { Paths } from "./paths";
import type { StoreFiles } from "./storeFiles";

/** Opens the transport to one agent: a spawned process, or a remote agent by its URL. */
export interface AgentTransports {
  /** Why agents started as local processes cannot run on this host (undefined: they can). */
  readonly localAgentsUnavailable: string | undefined;
  /** Opens `spec`'s transport. Throws `TransportRefused` with the words for the user when it
   *  cannot be opened here (a local agent in the browser, a caFile that cannot be read...). */
  open(spec: AgentSpec, o: { token?: string; engine: EngineModule }, events: TransportEvents): AgentTransport;
}

/** A transport that cannot be opened on this host, with why. */
export class TransportRefused extends Error {
  override name = "TransportRefused";
}

/** What the fs bridge is given besides the host's files. */
export type FsBridgeParts = ConstructorParameters<typeof FsBridge> extends [unknown, ...infer R] ? R : never;

/** How a path maps to the URI of the workspace file it names (not `file:`, in the browser). */
export interface WorkspaceFiles {
  /** The URI of absolute path `p` in the workspace folder holding it, or undefined. */
  uriOf(p: string): vscode.Uri | undefined;
  /** The workspace folders' paths. */
  folderPaths(): string[];
}

export interface Platform {
  /** "node" or "browser", for the log and the words. */
  readonly name: "node" | "browser";
  /** Path arithmetic on the host's file paths (`node:path` on Node; POSIX in the browser). */
  readonly path: Paths;
  /** The host's environment variables (empty in the browser: there is no process). */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The host OS and CPU as Node names them (`process.platform`/`arch`), or "browser". */
  readonly os: string;
  readonly arch: string;
  /** Direct file reads outside the fs bridge, and file URLs. */
  readonly files: HostFiles;
  /** The wasm engine, loaded once: Node `require`s the nodejs build; the browser
   *  instantiates the web build from the extension's own files (see browserEngine.ts).
   *  Returns where it came from, for the log. Throws EngineNotFoundError. `v2`: the build
   *  with ACP v2 (the `acp.experimental.protocolV2` setting; Node only: the browser has the
   *  v1 build alone and ignores it). */
  engine(extension: vscode.ExtensionContext, v2: boolean): { module: EngineModule; from: string };
  readonly transports: AgentTransports;
  /** Where the saved conversations live (sessions/store.ts): a directory on Node, the
   *  workspace's Memento in the browser. */
  storeFiles(extension: vscode.ExtensionContext): StoreFiles;
  /** The fs bridge (fs/read_text_file, fs/write_text_file) on the host's files (BridgeFiles:
   *  the disk on Node, the workspace's file system in the browser), or undefined where the
   *  host cannot reach them (then not advertised). */
  readonly fsBridge: ((...a: FsBridgeParts) => FsBridge) | undefined;
  /** Where the open editors and the bridge's writes find a path: the workspace folder's URI
   *  holding it (the browser); undefined: `file:` URIs (Node). */
  readonly workspaceFiles?: WorkspaceFiles;
  /** The terminal bridge (terminal/*), or undefined where no process can be spawned. */
  readonly terminals: ((...a: ConstructorParameters<typeof TerminalManager>) => TerminalManager) | undefined;
}
